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
	// Each step claims (settle false) or settles (claim false) as holder
	// at at, through cl or another consumer's claims (other); a claim wants
	// the state want (expiring at exp: the alert's own expiry when zero), a
	// settle wants ErrLost or nil.
	for _, s := range []struct {
		what          string
		settle, other bool
		holder        string
		at, expires   time.Time
		sent, lost    bool
		want          alerts.State
	}{
		{what: "first claim", holder: "a", at: now, want: alerts.Claimed},
		{what: "claim while leased", other: true, holder: "b", at: now.Add(time.Second), want: alerts.Busy},
		{what: "settle by a non-holder", settle: true, holder: "b", sent: true, lost: true},
		{what: "release", settle: true, holder: "a"},
		{what: "claim after release", holder: "c", at: now.Add(2 * time.Second), want: alerts.Claimed},
		// c's lease ends; d takes the claim, and c's late settle is refused.
		{what: "claim after the lease ended", other: true, holder: "d", at: now.Add(2*time.Second + time.Minute), want: alerts.Claimed},
		{what: "settle after losing the lease", settle: true, holder: "c", sent: true, lost: true},
		{what: "mark sent", settle: true, holder: "d", sent: true},
		{what: "claim of a sent alert", holder: "e", at: now.Add(10 * time.Minute), want: alerts.Sent},
		{what: "release of a sent claim", settle: true, holder: "d", lost: true},
		{what: "claim after it expired", holder: "f", at: exp.Add(time.Second), expires: exp.Add(time.Hour), want: alerts.Claimed},
	} {
		claims := cl
		if s.other {
			claims = h.Claims(t)
		}
		if s.settle {
			if err := claims.Settle(c, id, s.holder, s.sent); alerts.IsLost(err) != s.lost || (err != nil && !s.lost) {
				t.Fatalf("%s: %v, want lost %v", s.what, err, s.lost)
			}
			continue
		}
		if s.expires.IsZero() {
			s.expires = exp
		}
		if st, err := claims.Claim(c, id, s.holder, s.at, time.Minute, s.expires); err != nil || st != s.want {
			t.Fatalf("%s: state %d, %v; want %d", s.what, st, err, s.want)
		}
	}
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
