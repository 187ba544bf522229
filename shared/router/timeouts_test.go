package router

import (
	"context"
	"testing"
	"time"
)

// The router hands each attempt its bounds: timeout per attempt, and for a
// stream's first chunk stream_timeout, else the same timeout.
func TestAttemptTimeouts(t *testing.T) {
	tests := []struct {
		name              string
		params, settings  string
		timeout, firstChk time.Duration
	}{
		{"none", "", "", 0, 0},
		{"deployment timeout bounds the first chunk too", "timeout: 3", "", 3 * time.Second, 3 * time.Second},
		{"stream_timeout wins for the first chunk", "timeout: 3, stream_timeout: 1", "", 3 * time.Second, time.Second},
		{"router settings when the deployment sets none", "", "router_settings: {timeout: 7, stream_timeout: 2}\n", 7 * time.Second, 2 * time.Second},
		{"router timeout alone", "", "router_settings: {timeout: 7}\n", 7 * time.Second, 7 * time.Second},
		{"deployment over router", "timeout: 4", "router_settings: {timeout: 7, stream_timeout: 2}\n", 4 * time.Second, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			params := "model: mock/x"
			if tt.params != "" {
				params += ", " + tt.params
			}
			r := testRouter(t, load(t, "model_list:\n  - model_name: m\n    litellm_params: {"+params+"}\n"+tt.settings), Options{})
			var got *Attempt
			_, err := r.Do(context.Background(), &Request{Model: "m", NumRetries: -1}, plain(func(_ context.Context, a *Attempt) error {
				got = a
				return nil
			}))
			if err != nil {
				t.Fatal(err)
			}
			if got.Timeout != tt.timeout || got.StreamTimeout != tt.firstChk {
				t.Fatalf("Timeout=%v StreamTimeout=%v, want %v and %v", got.Timeout, got.StreamTimeout, tt.timeout, tt.firstChk)
			}
		})
	}
}
