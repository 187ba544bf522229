package apierr_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/sluice-gw/sluice/shared/apierr"
)

func TestStore(t *testing.T) {
	own := apierr.New(apierr.Forbidden, "no")
	for _, tt := range []struct {
		name   string
		err    error
		status int
		msg    string
	}{
		{"passes an *Error through", fmt.Errorf("route: %w", own), http.StatusForbidden, "no"},
		{"unavailable", fmt.Errorf("get key: %w", apierr.ErrUnavailable), http.StatusServiceUnavailable, "the store did not answer; try again"},
		{"not found", fmt.Errorf("team t: %w", apierr.ErrNotFound), http.StatusNotFound, "not found"},
		{"invalid keeps the store's message", fmt.Errorf("team t: %w: negative rpm", apierr.ErrInvalid), http.StatusBadRequest, "team t: invalid: negative rpm"},
		{"conflict", fmt.Errorf("member: %w", apierr.ErrConflict), http.StatusConflict, "the record changed concurrently; try again"},
		{"exists unanswered by its route", fmt.Errorf("team t: %w", apierr.ErrExists), http.StatusInternalServerError, "internal error"},
		{"anything else", errors.New("boom"), http.StatusInternalServerError, "internal error"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := apierr.Store(tt.err)
			if e.HTTPStatus() != tt.status || e.Message != tt.msg {
				t.Fatalf("Store = %d %q, want %d %q", e.HTTPStatus(), e.Message, tt.status, tt.msg)
			}
		})
	}
}

func TestTaken(t *testing.T) {
	for _, tt := range []struct {
		record string
		status int
	}{{"user", http.StatusConflict}, {"team", http.StatusBadRequest}, {"key", http.StatusBadRequest}, {"end user", http.StatusBadRequest}, {"member", http.StatusBadRequest}} {
		e := apierr.Taken(tt.record, "id", "%s %q exists already", tt.record, "x")
		if e.HTTPStatus() != tt.status || e.Param != "id" || e.Message != "id: "+tt.record+` "x" exists already` {
			t.Errorf("Taken(%s) = %d %q param %q, want %d", tt.record, e.HTTPStatus(), e.Message, e.Param, tt.status)
		}
	}
}
