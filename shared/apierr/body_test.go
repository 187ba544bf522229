package apierr

import (
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
)

func TestBodyRead(t *testing.T) {
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	e := BodyRead(fmt.Errorf("body: %w", timeout))
	if e.HTTPStatus() != 408 || e.Code != "request_timeout" || !errors.Is(e, os.ErrDeadlineExceeded) {
		t.Fatalf("timeout: got %d %q (cause %v)", e.HTTPStatus(), e.Code, e.Cause)
	}
	if got := string(JSON(e)); got != `{"error":{"message":"`+e.Message+`","type":"invalid_request_error","param":null,"code":"request_timeout"}}` {
		t.Fatalf("timeout JSON: %s", got)
	}
	e = BodyRead(errors.New("unexpected EOF"))
	if e.HTTPStatus() != 400 || e.Code != "" || e.Kind != InvalidRequest {
		t.Fatalf("other: got %d %q", e.HTTPStatus(), e.Code)
	}
}
