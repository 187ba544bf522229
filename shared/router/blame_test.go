package router

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/cooldown"
)

// blameGroup is one group of two deployments, with no retries and a
// cooldown after the first counted failure: "a" (tried first: rand is 0)
// with the litellm_params given, and "b".
func blameGroup(params string) string {
	return modelList(dep("g", "a", "openai/m", params), dep("g", "b", "openai/m", "")) + `
router_settings: {num_retries: 0, allowed_fails: 0, cooldown_time: 60}
`
}

// cooled sends three requests failing at "a" with err (as the attempt
// function reports it, with out) and says whether "a" then cools down.
func cooled(t *testing.T, params string, r Request, err *apierr.Error, out Outcome) bool {
	t.Helper()
	store := cooldown.NewMemory()
	clk := newClock()
	rt := testRouter(t, load(t, blameGroup(params)), Options{Now: clk.Now, Cooldowns: store})
	for range 3 {
		rr := r
		rr.Model, rr.NumRetries = "g", -1
		_, got := rt.Do(context.Background(), &rr, func(_ context.Context, a *Attempt) (Outcome, error) {
			if a.Deployment.ID == "a" {
				return out, err
			}
			return Outcome{Committed: true}, nil
		})
		if got != nil && got != error(err) {
			t.Fatalf("err = %v", got)
		}
	}
	cooling, cerr := store.CoolingDown(context.Background(), []string{"a", "b"}, clk.Now())
	if cerr != nil {
		t.Fatal(cerr)
	}
	if _, ok := cooling["b"]; ok {
		t.Fatal("b cools, and it never failed")
	}
	_, ok := cooling["a"]
	return ok
}

// Every kind of failure a caller controls counts for its own request only;
// the deployment's own failures still cool it (issue 29).
func TestCallerFailuresNeverCool(t *testing.T) {
	own404 := fail(apierr.UpstreamNotFound)
	own404.Own = true
	ms := time.Millisecond
	for _, tc := range []struct {
		name   string
		params string // deployment a's litellm_params
		req    Request
		err    *apierr.Error
		out    Outcome
		cools  bool
	}{
		// Timeouts: the request's own, shorter than the deployment's.
		{name: "timeout, the deployment's own", params: "timeout: 5", err: eTime, cools: true},
		{name: "timeout, no bound of the request's", err: eTime, cools: true},
		{name: "timeout of the request, no timeout of the deployment", req: Request{Timeout: 10 * ms}, err: eTime},
		{name: "timeout of the request, shorter than the deployment's", params: "timeout: 5", req: Request{Timeout: 10 * ms}, err: eTime},
		{name: "timeout of the request, as long as the deployment's", params: "timeout: 5", req: Request{Timeout: 5 * time.Second}, err: eTime, cools: true},
		{name: "timeout of the request, longer than the deployment's", params: "timeout: 5", req: Request{Timeout: time.Minute}, err: eTime, cools: true},
		{name: "stream_timeout does not bound a request that is not streamed", params: "timeout: 5", req: Request{StreamTimeout: 10 * ms}, err: eTime, cools: true},
		{name: "stream_timeout of the request, shorter than the deployment's", params: "stream_timeout: 5", req: Request{Stream: true, StreamTimeout: 10 * ms}, err: eTime},
		{name: "timeout of a streamed request, shorter than the deployment's stream_timeout", params: "stream_timeout: 5", req: Request{Stream: true, Timeout: 10 * ms}, err: eTime},
		{name: "stream_timeout of the request, longer than the deployment's", params: "stream_timeout: 5", req: Request{Stream: true, StreamTimeout: 6 * time.Second}, err: eTime, cools: true},
		{name: "stream_timeout of the request, longer than the deployment's timeout", params: "timeout: 5", req: Request{Stream: true, StreamTimeout: 6 * time.Second}, err: eTime, cools: true},
		// The request refused for its own content or form.
		{name: "400", err: eBad},
		{name: "413", err: &apierr.Error{Kind: apierr.UpstreamBadRequest, Message: "too large (deployment a returned 413)"}},
		{name: "context window", err: eCtx},
		{name: "content policy", err: ePolicy},
		{name: "404 for a route or model the request chose", err: own404},
		{name: "404 of the deployment's model", err: fail(apierr.UpstreamNotFound), cools: true},
		// Asked for, or ended by the request.
		{name: "mock_testing_*", err: e500, out: Outcome{Simulated: true}},
		{name: "aborted", err: eTime, out: Outcome{Abort: true}},
		// The provider's faults.
		{name: "500", err: e500, cools: true},
		{name: "429", err: e429, cools: true},
		{name: "connection", err: fail(apierr.UpstreamConnection), cools: true},
		{name: "auth", err: eAuth, cools: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cooled(t, tc.params, tc.req, tc.err, tc.out); got != tc.cools {
				t.Fatalf("a cools: %v, want %v", got, tc.cools)
			}
		})
	}
}

// A client that goes away mid-attempt cools nothing, whatever the failure
// its attempt then reports.
func TestClientGoneNeverCools(t *testing.T) {
	store := cooldown.NewMemory()
	clk := newClock()
	rt := testRouter(t, load(t, blameGroup("")), Options{Now: clk.Now, Cooldowns: store})
	for range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		_, err := rt.Do(ctx, req("g"), func(_ context.Context, a *Attempt) (Outcome, error) {
			cancel()
			return Outcome{}, &apierr.Error{Kind: apierr.UpstreamConnection, Message: "gone", Cause: context.Canceled}
		})
		if err == nil {
			t.Fatal("no error")
		}
	}
	if cooling, _ := store.CoolingDown(context.Background(), []string{"a", "b"}, clk.Now()); len(cooling) > 0 {
		t.Fatalf("cooling: %v", cooling)
	}
}

// The request's own short timeout measures the request, not the
// deployment: latency-based routing learns nothing from it. (A timeout of
// the deployment's own does teach it: TestLatencyBasedRoutingPenalisesTimeouts.)
func TestOwnTimeoutNotALatency(t *testing.T) {
	yaml := modelList(dep("g", "slow", "openai/m", "timeout: 30"), dep("g", "fast", "openai/m", "timeout: 30")) +
		"router_settings: {routing_strategy: latency-based-routing, num_retries: 0, disable_cooldowns: true}\n"
	clk := newClock()
	rt := testRouter(t, load(t, yaml), Options{Now: clk.Now})
	var slow *node
	for _, n := range rt.groups["g"].nodes {
		if n.d.ID == "slow" {
			slow = n
		}
	}
	fn := func(_ context.Context, a *Attempt) (Outcome, error) {
		clk.Advance(a.Timeout)
		return Outcome{}, eTime
	}
	if _, err := rt.Do(context.Background(), &Request{Model: "g", NumRetries: -1, Timeout: time.Millisecond}, fn); err != eTime {
		t.Fatalf("err = %v", err)
	}
	if slow.latency.Load() != 0 {
		t.Fatalf("the request's own timeout was measured as the deployment's latency: %v", slow.latency.Load())
	}
	if _, err := rt.Do(context.Background(), req("g"), fn); err != eTime {
		t.Fatalf("err = %v", err)
	}
	if slow.latency.Load() == 0 {
		t.Fatal("the deployment's own timeout was not measured")
	}
}

// One caller sending 100 requests with tiny timeouts and 100 for a route
// the deployment lacks leaves the group served for everyone else.
func TestOneCallerCannotCoolAGroup(t *testing.T) {
	store := cooldown.NewMemory()
	clk := newClock()
	rt := testRouter(t, load(t, blameGroup("timeout: 30")), Options{Now: clk.Now, Cooldowns: store})
	own404 := fail(apierr.UpstreamNotFound)
	own404.Own = true
	for i := range 200 {
		r := &Request{Model: "g", NumRetries: -1, Timeout: 10 * time.Millisecond}
		err := eTime
		if i%2 == 1 {
			r.Timeout, err = 0, own404
		}
		if _, got := rt.Do(context.Background(), r, func(context.Context, *Attempt) (Outcome, error) { return Outcome{}, err }); got == nil {
			t.Fatal("no error")
		}
	}
	for range 10 {
		res, err := rt.Do(context.Background(), req("g"), func(context.Context, *Attempt) (Outcome, error) { return Outcome{Committed: true}, nil })
		if err != nil {
			t.Fatalf("another caller refused: %v", err)
		}
		assertTrace(t, res, hop{"g", "a", ""})
	}
}
