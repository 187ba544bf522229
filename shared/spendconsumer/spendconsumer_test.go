package spendconsumer_test

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sluice-gw/sluice/shared/spendconsumer"
)

func TestHandle(t *testing.T) {
	tests := []struct {
		name       string
		bodies     []string
		wantFailed []string // message ids
		wantLogged []string // call ids logged as spend events
	}{
		{"all valid", []string{`{"call_id":"c1","model":"gpt-4o-mini","spend":0.001}`, `{"call_id":"c2"}`}, nil, []string{"c1", "c2"}},
		{"one not JSON", []string{`{"call_id":"c1"}`, `not json`, `{"call_id":"c3"}`}, []string{"m1"}, []string{"c1", "c3"}},
		{"JSON but not an object", []string{`[1,2]`, `"text"`}, []string{"m0", "m1"}, nil},
		{"wrong field type", []string{`{"call_id":"c1","spend":"a lot"}`}, []string{"m0"}, nil},
		{"truncated", []string{`{"call_id":"c1"`}, []string{"m0"}, nil},
		{"empty batch", nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			c := spendconsumer.New(slog.New(slog.NewTextHandler(&logs, nil)))
			var batch events.SQSEvent
			for i, b := range tt.bodies {
				batch.Records = append(batch.Records, events.SQSMessage{MessageId: "m" + string(rune('0'+i)), Body: b})
			}
			resp, err := c.Handle(context.Background(), batch)
			if err != nil {
				t.Fatalf("Handle: %v", err)
			}
			var failed []string
			for _, f := range resp.BatchItemFailures {
				failed = append(failed, f.ItemIdentifier)
			}
			if !slices.Equal(failed, tt.wantFailed) {
				t.Errorf("failed = %v, want %v", failed, tt.wantFailed)
			}
			for _, id := range tt.wantLogged {
				if !strings.Contains(logs.String(), "call_id="+id) {
					t.Errorf("log lacks spend event %s:\n%s", id, logs.String())
				}
			}
			if got := strings.Count(logs.String(), `msg="spend event"`); got != len(tt.wantLogged) {
				t.Errorf("%d spend events logged, want %d", got, len(tt.wantLogged))
			}
		})
	}
}
