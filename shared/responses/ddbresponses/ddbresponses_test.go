package ddbresponses_test

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/responses"
	"github.com/sluice-gw/sluice/shared/responses/ddbresponses"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

// TestTooLarge: a response that stays above DynamoDB's item limit once
// compressed is refused as invalid, not sent.
func TestTooLarge(t *testing.T) {
	s := ddbresponses.New(ddblocal.Client(t), ddblocal.Tables(t).Counters, ddbresponses.Options{Timeout: loadedEmulator})
	noise := make([]byte, 500<<10)
	_, _ = rand.Read(noise)
	err := s.Put(context.Background(), responses.Record{ID: "resp_big", Response: noise, Created: time.Now()})
	if !errors.Is(err, apierr.ErrInvalid) {
		t.Fatalf("Put of 500 KB of noise: %v, want ErrInvalid", err)
	}
}

// loadedEmulator bounds each call: DynamoDB Local under a loaded machine
// takes seconds, where the production default is 2s.
const loadedEmulator = 30 * time.Second
