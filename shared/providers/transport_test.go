package providers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
)

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestTransportError(t *testing.T) {
	d := &config.Deployment{ID: "d1"}
	own := &apierr.Error{Kind: apierr.ContentPolicy, Message: "already classified"}
	expired, cancel := context.WithDeadline(context.Background(), time.Unix(1, 0))
	defer cancel()
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		kind apierr.Kind
		msg  string
	}{
		{"deadline exceeded", context.Background(), fmt.Errorf("Post: %w", context.DeadlineExceeded), apierr.UpstreamTimeout, "deployment d1 timed out"},
		{"context past its deadline", expired, errors.New("request failed"), apierr.UpstreamTimeout, "deployment d1 timed out"},
		{"net timeout", context.Background(), &net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}}, apierr.UpstreamTimeout, "deployment d1 timed out"},
		{"connection refused", context.Background(), &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}, apierr.UpstreamConnection, "could not reach deployment d1"},
		{"canceled", context.Background(), context.Canceled, apierr.UpstreamConnection, "could not reach deployment d1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := TransportError(tt.ctx, d, tt.err)
			if e.Kind != tt.kind || e.Message != tt.msg {
				t.Errorf("TransportError = %v %q, want %v %q", e.Kind, e.Message, tt.kind, tt.msg)
			}
			if !errors.Is(e, tt.err) {
				t.Errorf("the cause %v is not wrapped", tt.err)
			}
		})
	}
	t.Run("an apierr passes through", func(t *testing.T) {
		if e := TransportError(context.Background(), d, fmt.Errorf("body: %w", own)); e != own {
			t.Errorf("TransportError = %v, want the wrapped *apierr.Error itself", e)
		}
	})
}
