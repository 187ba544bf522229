package app_test

import (
	"context"
	"math/rand/v2"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/infra/tables"
	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/keys/ddbkeys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/limits/ddblimits"
	"github.com/sluice-gw/sluice/shared/spend/ddbspend"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

// proxied builds one gateway instance whose every DynamoDB call goes
// through p (its own client, caches and spend queue).
func proxied(t *testing.T, yaml string, names tables.Names, p *ddblocal.Proxy, s app.Settings) *app.Gateway {
	t.Helper()
	cfg := ddblocal.ConfigAt(p.URL)
	s.ConfigYAML = []byte(yaml)
	s.Store = app.StoreDynamoDB
	s.AWS = &cfg
	s.Emulator = true
	s.Tables = names
	if s.Logger == nil {
		s.Logger = gatewaytest.Quiet()
	}
	gw, err := app.Build(context.Background(), s)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	t.Cleanup(func() { gw.Close(context.Background()) })
	return gw
}

// directStores reads holds and budget counters without the proxy.
func directStores(t *testing.T, names tables.Names) (*ddbspend.Store, *ddblimits.Store) {
	client := ddblocal.Client(t)
	sp := ddbspend.New(client, names.Spend, names.Keys, ddbkeys.New(client, names.Keys, ddbkeys.Options{}),
		ddbspend.Options{CountersTable: names.Counters, Timeout: 30 * time.Second})
	return sp, ddblimits.New(client, names.Counters, ddblimits.Options{HoldsTable: names.Spend, Timeout: 30 * time.Second})
}

// settled is the end state of a strict budget once the queues drained:
// the holds still open, the budget's committed counter and the record's
// recorded spend (nano-USD).
type settled struct {
	ok               bool // no hold open and counter = spend
	open             int
	committed, spent int64
}

// flush records the spend each of gws has queued.
func flush(ctx context.Context, gws ...*app.Gateway) {
	for _, gw := range gws {
		gw.FlushSpend(ctx)
	}
}

// waitSettled waits (waitFor) until no hold is open and the strict-budget
// counter of the record kind/id equals its recorded spend, read by spent.
func waitSettled(t *testing.T, ctx context.Context, names tables.Names, kind keys.Kind, id string, spent func(*ddbkeys.Store) (float64, error)) settled {
	t.Helper()
	sp, lim := directStores(t, names)
	ks := ddbkeys.New(ddblocal.Client(t), names.Keys, ddbkeys.Options{Timeout: 30 * time.Second})
	counter := limits.BudgetCounterName(string(kind), id, time.Time{})
	var s settled
	s.ok = waitFor(func() bool {
		var err error
		if s.open, err = sp.OpenHolds(ctx); err != nil {
			t.Fatal(err)
		}
		if s.committed, _, err = lim.Committed(ctx, counter); err != nil {
			t.Fatal(err)
		}
		usd, err := spent(ks)
		if err != nil {
			t.Fatal(err)
		}
		s.spent = keys.Nanos(usd)
		return s.open == 0 && s.committed == s.spent
	})
	return s
}

// hammer runs callers goroutines; each sends until three refusals in a
// row (or maxCalls sends, when > 0: a gateway that never refuses still
// ends), pausing after a refusal for base to 4*base for settlements to make
// room. It returns how many answers had each status.
func hammer(callers, maxCalls int, base time.Duration, send func(caller int) int) map[int]int {
	codes := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for n, misses := 0, 0; misses < 3 && (maxCalls <= 0 || n < maxCalls); n++ {
				code := send(c)
				mu.Lock()
				codes[code]++
				mu.Unlock()
				if code == 200 {
					misses = 0
				} else {
					misses++
					time.Sleep(base + rand.N(3*base))
				}
			}
		})
	}
	wg.Wait()
	return codes
}

// waitFor polls cond every 100 ms for up to 30 s.
func waitFor(cond func() bool) bool {
	for range 300 {
		if cond() {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return cond()
}

// A strict-budget admission whose write commits but whose answer comes
// too late is answered 503; its spend event still names the hold it
// tried, and recording the event releases it: no hold is left for the
// sweeper, and the key's reservation is back at once.
func TestHoldOfUnansweredAdmissionReleased(t *testing.T) {
	names := ddblocal.Tables(t)
	p := ddblocal.NewProxy(t, "")
	up, _ := upstream(t, 200)
	// The key stays cached: the late answer must be the admission's.
	gw := proxied(t, strictYAML(up.URL, "", true), names, p, app.Settings{StoreTimeout: 30 * time.Second, KeyCacheTTL: time.Hour})
	ctx := context.Background()
	budget := 1.0
	secret := "sk-late"
	if err := gw.Keys.CreateKey(ctx, keys.Key{Hash: keys.HashSecret(secret), Settings: keys.Settings{Budget: keys.Budget{MaxBudget: &budget}}}); err != nil {
		t.Fatal(err)
	}
	body := `{"model":"m","max_tokens":10,"messages":[]}`
	if rec := call(t, gw.Handler, ctx, secret, body); rec.Code != 200 { // warm the key cache; settles at $0.006
		t.Fatalf("warm-up: %d %s", rec.Code, rec.Body)
	}
	gw.FlushSpend(ctx)
	sp, lim := directStores(t, names)
	counter := limits.BudgetCounterName(string(keys.KindKey), keys.HashSecret(secret), time.Time{})
	committed := func() int64 {
		c, _, err := lim.Committed(ctx, counter)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	open := func() int {
		n, err := sp.OpenHolds(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if !waitFor(func() bool { return open() == 0 && committed() == 6_000_000 }) {
		t.Fatalf("after the warm-up: %d holds, counter %d; want 0 and 6000000", open(), committed())
	}

	// The admission's answer comes 5 s late; the request has 2 s. Once
	// the admission is forwarded, the proxy holds every later call (the
	// spend event's recording) until the hold has been seen.
	p.SetDelay(5 * time.Second)
	before := p.Requests.Load()
	done := make(chan *httptest.ResponseRecorder)
	go func() {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		done <- call(t, gw.Handler, rctx, secret, body)
	}()
	var rec *httptest.ResponseRecorder
	for rec == nil && p.Requests.Load() == before {
		select {
		case rec = <-done:
		case <-time.After(5 * time.Millisecond):
		}
	}
	p.Pause()
	if rec != nil {
		t.Fatalf("answered %d before its admission reached DynamoDB", rec.Code)
	}
	if rec = <-done; rec.Code != 503 {
		t.Fatalf("the late admission: %d %s, want 503", rec.Code, rec.Body)
	}
	if !waitFor(func() bool { return open() == 1 }) {
		t.Fatalf("%d holds: the late admission's write did not commit, nothing to test", open())
	}
	p.Resume()
	p.SetDelay(0)
	gw.FlushSpend(ctx)
	if !waitFor(func() bool { return open() == 0 && committed() == 6_000_000 }) {
		t.Errorf("after the 503's spend event: %d holds open, counter %d; want 0 and the 6000000 spent (the reservation given back)", open(), committed())
	}
}
