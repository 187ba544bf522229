// Package alertstest is the conformance suite of alerts.Claims and of the
// budget alerts end to end (consumers recording spend, claiming and
// sending alerts to a fake Slack webhook): the memory store and DynamoDB
// (ddbalerts, ddbspend, ddbkeys) both run it.
package alertstest

import (
	"context"
	"encoding/json"

	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/alerts"
	"github.com/sluice-gw/sluice/shared/conformance"
	"github.com/sluice-gw/sluice/shared/spend/spendtest"
)

// Harness is the state one case runs on.
type Harness struct {
	// Spend is the spend store's harness: Spend.Other returns another
	// consumer's store, Spend.Keys holds the records.
	Spend spendtest.Harness
	// Claims returns a claims store on the case's shared state (another
	// consumer's: for DynamoDB its own client).
	Claims func(t *testing.T) alerts.Claims
	// States returns a reader of the records Spend.Keys holds.
	States func(t *testing.T) alerts.States
}

// Run runs the suite; newHarness makes each case's state.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	conformance.Run(t, newHarness, conformance.Cases[Harness]{
		"ClaimStates":          testClaimStates,
		"ConcurrentClaims":     testConcurrentClaims,
		"OnceAcrossConsumers":  testOnceAcrossConsumers,
		"FailedSendRetried":    testFailedSendRetried,
		"PeriodsAndThresholds": testPeriodsAndThresholds,
	})
}

// testClaimStates walks a claim through its states: taken, busy while
// leased, released and taken again, sent for good; a lease that ended is
// taken by another and its first holder's Settle is refused; an expired
// claim is taken anew.
func testClaimStates(t *testing.T, h Harness) {
	c, cl := conformance.Context(t), h.Claims(t)
	id := spendtest.ID("alert#key#k#soft#0#slack:x")
	now := time.Now().UTC().Truncate(time.Millisecond)
	exp := now.Add(time.Hour)
	want := func(st alerts.State, err error, w alerts.State, what string) {
		t.Helper()
		if err != nil || st != w {
			t.Fatalf("%s: state %d, %v; want %d", what, st, err, w)
		}
	}
	st, err := cl.Claim(c, id, "a", now, time.Minute, exp)
	want(st, err, alerts.Claimed, "first claim")
	st, err = h.Claims(t).Claim(c, id, "b", now.Add(time.Second), time.Minute, exp)
	want(st, err, alerts.Busy, "claim while leased")
	if err := cl.Settle(c, id, "b", true); !alerts.IsLost(err) {
		t.Fatalf("settle by a non-holder: %v, want ErrLost", err)
	}
	if err := cl.Settle(c, id, "a", false); err != nil {
		t.Fatalf("release: %v", err)
	}
	st, err = cl.Claim(c, id, "c", now.Add(2*time.Second), time.Minute, exp)
	want(st, err, alerts.Claimed, "claim after release")
	// c's lease ends; d takes the claim, and c's late settle is refused.
	st, err = h.Claims(t).Claim(c, id, "d", now.Add(2*time.Second+time.Minute), time.Minute, exp)
	want(st, err, alerts.Claimed, "claim after the lease ended")
	if err := cl.Settle(c, id, "c", true); !alerts.IsLost(err) {
		t.Fatalf("settle after losing the lease: %v, want ErrLost", err)
	}
	if err := cl.Settle(c, id, "d", true); err != nil {
		t.Fatalf("mark sent: %v", err)
	}
	st, err = cl.Claim(c, id, "e", now.Add(10*time.Minute), time.Minute, exp)
	want(st, err, alerts.Sent, "claim of a sent alert")
	if err := cl.Settle(c, id, "d", false); !alerts.IsLost(err) {
		t.Fatalf("release of a sent claim: %v, want ErrLost", err)
	}
	st, err = cl.Claim(c, id, "f", exp.Add(time.Second), time.Minute, exp.Add(time.Hour))
	want(st, err, alerts.Claimed, "claim after it expired")
	if _, err := cl.Claim(c, "", "g", now, time.Minute, exp); err == nil {
		t.Error("claim with no id accepted")
	}
}

// testConcurrentClaims: of many consumers claiming one alert at once,
// exactly one holds it.
func testConcurrentClaims(t *testing.T, h Harness) {
	c := conformance.Context(t)
	id := spendtest.ID("alert#team#t#max#0#slack:x")
	now := time.Now().UTC()
	var claimed, busy atomic.Int32
	var wg sync.WaitGroup
	for i := range 24 {
		cl := h.Claims(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := cl.Claim(c, id, fmt.Sprint("tok", i), now, time.Minute, now.Add(time.Hour))
			switch {
			case err != nil:
				t.Error(err)
			case st == alerts.Claimed:
				claimed.Add(1)
			case st == alerts.Busy:
				busy.Add(1)
			}
		}()
	}
	wg.Wait()
	if claimed.Load() != 1 || busy.Load() != 23 {
		t.Errorf("%d claimed, %d busy; want 1 and 23", claimed.Load(), busy.Load())
	}
}

// Slack is a fake Slack incoming webhook: it counts the messages it
// accepted, and refuses with a 500 while Down is set.
type Slack struct {
	*httptest.Server
	Down atomic.Bool

	mu       sync.Mutex
	messages []string
	refused  int
}

// NewSlack starts a fake Slack webhook, closed when the test ends.
func NewSlack(t testing.TB) *Slack {
	s := &Slack{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Text string `json:"text"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Text == "" || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "invalid_payload", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.Down.Load() {
			s.refused++
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		s.messages = append(s.messages, body.Text)
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(s.Close)
	return s
}

// Count returns how many accepted messages contain every one of subs.
func (s *Slack) Count(subs ...string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, m := range s.messages {
		all := true
		for _, sub := range subs {
			all = all && strings.Contains(m, sub)
		}
		if all {
			n++
		}
	}
	return n
}

// Messages returns the accepted messages.
func (s *Slack) Messages() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.messages...)
}

// Refused returns how many posts were refused while down.
func (s *Slack) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// NewAlerter returns an alerter on h's shared state (its own claims and
// states instances, no local memory of sent alerts) posting to dests,
// retrying a failed post at once, twice in all.
func NewAlerter(t *testing.T, h Harness, dests ...alerts.Destination) *alerts.Alerter {
	return alerts.New(h.States(t), h.Claims(t), alerts.Options{
		Destinations: dests, Attempts: 2,
		Wait: func(ctx context.Context, _ int) error { return ctx.Err() },
	})
}
