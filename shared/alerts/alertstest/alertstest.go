// Package alertstest is the conformance suite of alerts.Claims and of the
// budget alerts end to end (consumers recording spend, claiming and
// sending alerts to a fake Slack webhook): the memory store and DynamoDB
// (ddbalerts, ddbspend, ddbkeys) both run it.
package alertstest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/alerts"
	"github.com/sluice-gw/sluice/shared/conformance"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/spend"
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

// Consumer returns a spend consumer with its own store, claims and record
// reader on h's shared state, sending budget alerts to dests.
func Consumer(t *testing.T, h Harness, dests ...alerts.Destination) *spend.Consumer {
	c := spend.NewConsumer(h.Spend.Other(t), slog.New(slog.NewTextHandler(io.Discard, nil)))
	c.Alerts = NewAlerter(t, h, dests...)
	return c
}

func usdp(v float64) *float64 { return &v }

// budgeted creates a team (soft 1, max 1.5 USD, no duration) and a key in
// it (soft 0.5, max 1 USD, 30d).
func budgeted(t *testing.T, h Harness) (keys.Team, keys.Key) {
	c := conformance.Context(t)
	team := keys.Team{ID: spendtest.ID("team"), Settings: keys.Settings{Budget: keys.Budget{SoftBudget: usdp(1), MaxBudget: usdp(1.5)}}}
	if err := h.Spend.Keys.Teams().Create(c, team); err != nil {
		t.Fatal(err)
	}
	k := keys.Key{Hash: keys.HashSecret(spendtest.ID("sk")), Alias: spendtest.ID("alias"), TeamID: team.ID,
		Settings: keys.Settings{Budget: keys.Budget{SoftBudget: usdp(0.5), MaxBudget: usdp(1), Duration: "30d"}}}
	if err := h.Spend.Keys.CreateKey(c, k); err != nil {
		t.Fatal(err)
	}
	return team, k
}

// events returns n events of k at end, each costing nanos.
func eventsOf(k *keys.Key, n int, end time.Time, nanos int64) []spend.Event {
	evs := make([]spend.Event, n)
	for i := range evs {
		evs[i] = spendtest.Event(k, "", end, nanos)
	}
	return evs
}

// testOnceAcrossConsumers: 8 consumers record batches of one key's calls,
// each batch delivered twice to two of them at once (a redelivery racing
// its first delivery), as spend crosses the key's and the team's soft and
// max budgets: each alert reaches Slack exactly once.
func testOnceAcrossConsumers(t *testing.T, h Harness) {
	slack := NewSlack(t)
	team, k := budgeted(t, h)
	end := time.Now().UTC().Add(-time.Second)
	evs := eventsOf(&k, 40, end, 50_000_000) // 40 x 0.05 = 2 USD
	const consumers = 8
	cs := make([]*spend.Consumer, consumers)
	for i := range cs {
		cs[i] = Consumer(t, h, alerts.Slack(slack.URL))
	}
	c := conformance.Context(t)
	var wg sync.WaitGroup
	for b := 0; b*5 < len(evs); b++ {
		batch := spendtest.Batch(evs[b*5 : b*5+5])
		for j := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := cs[(b+j*3)%consumers].HandleSQS(c, batch)
				if err != nil || len(resp.BatchItemFailures) != 0 {
					t.Errorf("batch %d: %v, %d failed", b, err, len(resp.BatchItemFailures))
				}
			}()
		}
	}
	wg.Wait()
	if got := spendtest.RecordSpend(t, h.Spend.Keys, keys.Ref{Kind: keys.KindKey, ID: k.Hash}); got != 2_000_000_000 {
		t.Fatalf("key spend %d, want 2 USD once", got)
	}
	token := "token: `" + k.Hash + "`"
	teamID := "team_id: `" + team.ID + "`"
	for _, w := range []struct {
		subs []string
		n    int
	}{
		{[]string{"Soft Budget Crossed: Key Budget", token}, 1},
		{[]string{"Key Budget: Budget Crossed", token}, 1},
		{[]string{"Soft Budget Crossed: Team Budget", teamID}, 1},
		{[]string{"Team Budget: Budget Crossed", teamID}, 1},
	} {
		if got := slack.Count(w.subs...); got != w.n {
			t.Errorf("%d messages with %q, want %d; messages:\n%s", got, w.subs, w.n, joined(slack.Messages()))
		}
	}
	// A threshold between (15% or 5% left) is sent at most once: which a
	// consumer saw depends on the order the batches landed in.
	for _, s := range []string{"Key Budget: 15% Threshold", "Key Budget: 5% Threshold", "Team Budget: 15% Threshold", "Team Budget: 5% Threshold"} {
		if got := slack.Count(s); got > 1 {
			t.Errorf("%d messages with %q, want at most 1", got, s)
		}
	}
	// Delivered again, to a consumer that never sent anything: nothing new.
	before := len(slack.Messages())
	if resp, err := Consumer(t, h, alerts.Slack(slack.URL)).HandleSQS(c, spendtest.Batch(evs[:5])); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("redelivery: %v, %+v", err, resp)
	}
	if after := len(slack.Messages()); after != before {
		t.Errorf("a redelivery sent %d more messages", after-before)
	}
}

func joined(ms []string) string {
	var out string
	for i, m := range ms {
		out += strconv.Itoa(i) + ": " + m + "\n---\n"
	}
	return out
}

// testFailedSendRetried: while Slack refuses, the batch that crossed the
// budget fails (its messages come back) and the claim is released; its
// redelivery, once Slack is back, sends the alert once; a further
// redelivery sends nothing.
func testFailedSendRetried(t *testing.T, h Harness) {
	slack := NewSlack(t)
	_, k := budgeted(t, h)
	c := conformance.Context(t)
	evs := eventsOf(&k, 2, time.Now().UTC().Add(-time.Second), 300_000_000) // 0.6: the key's soft budget
	batch := spendtest.Batch(evs)
	slack.Down.Store(true)
	resp, err := Consumer(t, h, alerts.Slack(slack.URL)).HandleSQS(c, batch)
	if err != nil || len(resp.BatchItemFailures) != len(evs) {
		t.Fatalf("with Slack down: %v, %d of %d messages failed; want all", err, len(resp.BatchItemFailures), len(evs))
	}
	if slack.Refused() < 2 {
		t.Errorf("%d posts refused, want the retries (2)", slack.Refused())
	}
	slack.Down.Store(false)
	for i := range 3 {
		resp, err := Consumer(t, h, alerts.Slack(slack.URL)).HandleSQS(c, batch)
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("redelivery %d: %v, %+v", i, err, resp)
		}
	}
	if got := slack.Count("Soft Budget Crossed: Key Budget", k.Hash); got != 1 {
		t.Errorf("%d soft budget messages, want 1:\n%s", got, joined(slack.Messages()))
	}
	if got := len(slack.Messages()); got != 1 {
		t.Errorf("%d messages, want 1:\n%s", got, joined(slack.Messages()))
	}
	if got := spendtest.RecordSpend(t, h.Spend.Keys, keys.Ref{Kind: keys.KindKey, ID: k.Hash}); got != 600_000_000 {
		t.Errorf("key spend %d after redeliveries, want 0.6 USD once", got)
	}
}

// testPeriodsAndThresholds: LiteLLM's thresholds one batch at a time: 80%
// sends nothing of max_budget, 86% "15% Threshold", 96% "5% Threshold",
// 100% "Budget Crossed"; the next period alerts again.
func testPeriodsAndThresholds(t *testing.T, h Harness) {
	slack := NewSlack(t)
	c := conformance.Context(t)
	k := keys.Key{Hash: keys.HashSecret(spendtest.ID("sk")), Settings: keys.Settings{Budget: keys.Budget{MaxBudget: usdp(1), Duration: "1d"}}}
	if err := h.Spend.Keys.CreateKey(c, k); err != nil {
		t.Fatal(err)
	}
	cons := Consumer(t, h, alerts.Slack(slack.URL))
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -1) // yesterday: the key's whole period is in the past
	steps := []struct {
		nanos int64
		want  string
	}{
		{800_000_000, ""},
		{60_000_000, "15% Threshold Crossed"},
		{100_000_000, "5% Threshold Crossed"},
		{40_000_000, "Budget Crossed"},
		{10_000_000, ""},
	}
	for i, s := range steps {
		before := len(slack.Messages())
		ev := spendtest.Event(&k, "", day.Add(time.Duration(i+1)*time.Minute), s.nanos)
		if resp, err := cons.HandleSQS(c, spendtest.Batch([]spend.Event{ev})); err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("step %d: %v, %+v", i, err, resp)
		}
		ms := slack.Messages()[before:]
		switch {
		case s.want == "" && len(ms) != 0:
			t.Errorf("step %d: sent %q, want nothing", i, ms)
		case s.want != "" && (len(ms) != 1 || !strings.Contains(ms[0], "Key Budget: "+s.want)):
			t.Errorf("step %d: sent %q, want one %q", i, ms, s.want)
		}
	}
	// The next day is a new period: reaching max_budget alerts again.
	ev := spendtest.Event(&k, "", day.Add(24*time.Hour+time.Minute), 1_000_000_000)
	if resp, err := cons.HandleSQS(c, spendtest.Batch([]spend.Event{ev})); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatal(err, resp)
	}
	if got := slack.Count("Key Budget: Budget Crossed"); got != 2 {
		t.Errorf("%d max budget messages over two periods, want 2", got)
	}
}
