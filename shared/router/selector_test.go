package router

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
)

func nd(id string, set func(d *config.Deployment)) *node {
	d := &config.Deployment{ID: id, ModelName: "g"}
	if set != nil {
		set(d)
	}
	return &node{d: d, stats: new(stats)}
}

func weight(w float64) func(*config.Deployment) {
	return func(d *config.Deployment) { d.Weight, d.HasWeight = w, true }
}

func ids(ns []*node) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.d.ID
	}
	return out
}

func TestNewSelector(t *testing.T) {
	for name, want := range map[string]Selector{
		"simple-shuffle":         simpleShuffle{},
		"":                       simpleShuffle{},
		"least-busy":             leastBusy{},
		"latency-based-routing":  latencyBased{explore: 0.1},
		"usage-based-routing-v2": usageBased{},
		"cost-based-routing":     costBased{},
	} {
		if got := NewSelector(name); got != want {
			t.Errorf("NewSelector(%q) = %#v, want %#v", name, got, want)
		}
	}
}

func TestSimpleShuffle(t *testing.T) {
	both := func(w float64, rpm int64) func(*config.Deployment) {
		return func(d *config.Deployment) { d.Weight, d.HasWeight, d.RPM = w, true, rpm }
	}
	for _, tc := range []struct {
		name  string
		cands []*node
		rand  []float64
		want  []string // for each rand value
	}{
		{
			name:  "by weight",
			cands: []*node{nd("a", weight(1)), nd("b", weight(3))},
			rand:  []float64{0, 0.2499, 0.25, 0.999999},
			want:  []string{"a", "a", "b", "b"},
		},
		{
			name:  "weight 0 among positive weights is never picked",
			cands: []*node{nd("a", weight(0)), nd("b", weight(1)), nd("c", weight(0))},
			rand:  []float64{0, 0.5, math.Nextafter(1, 0)},
			want:  []string{"b", "b", "b"},
		},
		{
			name:  "weight wins over rpm when the first candidate sets it",
			cands: []*node{nd("a", both(1, 1000)), nd("b", both(3, 1))},
			rand:  []float64{0.2, 0.5},
			want:  []string{"a", "b"}, // by rpm, 0.5 would pick a
		},
		{
			name: "rpm when the first candidate sets no weight",
			cands: []*node{nd("a", func(d *config.Deployment) { d.RPM = 100 }),
				nd("b", func(d *config.Deployment) { d.RPM, d.Weight, d.HasWeight = 300, 100, true })},
			rand: []float64{0.2, 0.2499, 0.25, 0.3},
			want: []string{"a", "a", "b", "b"},
		},
		{
			name:  "tpm when only tpm is set",
			cands: []*node{nd("a", func(d *config.Deployment) { d.TPM = 1000 }), nd("b", func(d *config.Deployment) { d.TPM = 3000 })},
			rand:  []float64{0.2, 0.3},
			want:  []string{"a", "b"},
		},
		{
			name:  "all-zero weights: uniform",
			cands: []*node{nd("a", weight(0)), nd("b", weight(0)), nd("c", weight(0))},
			rand:  []float64{0, 0.34, 0.67, 0.999999},
			want:  []string{"a", "b", "c", "c"},
		},
		{
			name:  "all-zero weights: rpm is tried next",
			cands: []*node{nd("a", both(0, 100)), nd("b", both(0, 300))},
			rand:  []float64{0.2, 0.3},
			want:  []string{"a", "b"}, // uniform would pick a for 0.3
		},
		{
			name:  "nothing set: uniform",
			cands: []*node{nd("a", nil), nd("b", nil)},
			rand:  []float64{0.49, 0.5},
			want:  []string{"a", "b"},
		},
		{
			name:  "one candidate",
			cands: []*node{nd("a", weight(0))},
			rand:  []float64{0.9},
			want:  []string{"a"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i, rv := range tc.rand {
				if got := (simpleShuffle{}).Select(tc.cands, t0, constRand(rv)); got.d.ID != tc.want[i] {
					t.Errorf("rand %v: got %s, want %s", rv, got.d.ID, tc.want[i])
				}
			}
		})
	}
}

func TestLeastBusy(t *testing.T) {
	busy := func(id string, n int64) *node { x := nd(id, nil); x.inflight.Store(n); return x }
	for _, tc := range []struct {
		cands []*node
		rand  float64
		want  string
	}{
		{[]*node{busy("a", 3), busy("b", 1), busy("c", 2)}, 0, "b"},
		{[]*node{busy("a", 1), busy("b", 1), busy("c", 5)}, 0, "a"},
		{[]*node{busy("a", 1), busy("b", 1), busy("c", 5)}, 0.6, "b"}, // ties at random
		{[]*node{busy("a", 0), busy("b", 0), busy("c", 0)}, 0.99, "c"},
	} {
		if got := (leastBusy{}).Select(tc.cands, t0, constRand(tc.rand)); got.d.ID != tc.want {
			t.Errorf("%v rand %v: got %s, want %s", ids(tc.cands), tc.rand, got.d.ID, tc.want)
		}
	}
}

func TestLeastBusyCountsInFlightAttempts(t *testing.T) {
	yaml := modelList(
		dep("g", "a", "openai/m", ""),
		dep("g", "b", "openai/m", ""),
	) + `router_settings: {routing_strategy: least-busy}
`
	rt := testRouter(t, load(t, yaml), Options{})
	var inner []hop
	// While a request is in flight on a, the next one goes to b.
	res, err := rt.Do(context.Background(), req("g"), plain(func(ctx context.Context, a *Attempt) error {
		r2, err := rt.Do(ctx, req("g"), newScript(nil).fn)
		if err != nil {
			return err
		}
		inner = hops(r2)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	assertTrace(t, res, hop{"g", "a", ""})
	if want := []hop{{"g", "b", ""}}; !reflect.DeepEqual(inner, want) {
		t.Fatalf("inner trace %v, want %v", inner, want)
	}
}

func TestLatencyBased(t *testing.T) {
	lat := func(id string, ds ...time.Duration) *node {
		x := nd(id, nil)
		for _, d := range ds {
			x.observeLatency(d)
		}
		return x
	}
	sel := latencyBased{explore: 0.1}
	for _, tc := range []struct {
		name  string
		cands []*node
		rand  []float64
		want  string
	}{
		{"lowest average", []*node{lat("a", 2*time.Second), lat("b", time.Second), lat("c", 3*time.Second)}, []float64{0.5}, "b"},
		{"never measured first", []*node{lat("a", 2*time.Second), lat("b", time.Second), lat("c")}, []float64{0.5}, "c"},
		{"explores at random below the share", []*node{lat("a", 2*time.Second), lat("b", time.Second), lat("c", 3*time.Second)}, []float64{0.05, 0}, "a"},
		{"explores the last too", []*node{lat("a", 2*time.Second), lat("b", time.Second), lat("c", 3*time.Second)}, []float64{0.0999, 0.999}, "c"},
		{"exploits at the share", []*node{lat("a", 2*time.Second), lat("b", time.Second), lat("c", 3*time.Second)}, []float64{0.1, 0}, "b"},
		{"moving average", []*node{lat("a", time.Second, 4*time.Second), lat("b", 1500*time.Millisecond)}, []float64{0.5}, "b"}, // a: 0.2*4+0.8*1 = 1.6s
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sel.Select(tc.cands, t0, seqRand(tc.rand...)); got.d.ID != tc.want {
				t.Fatalf("got %s, want %s", got.d.ID, tc.want)
			}
		})
	}
	n := lat("a", time.Second, 4*time.Second)
	if got, want := math.Float64frombits(n.latency.Load()), 0.2*4+0.8*1; got != want {
		t.Fatalf("EWMA = %v, want %v", got, want)
	}
}

// A deployment whose attempts time out must not stay "never measured" and
// so keep winning latency-based routing.
func TestLatencyBasedRoutingPenalisesTimeouts(t *testing.T) {
	yaml := modelList(
		dep("g", "slow", "openai/m", ""),
		dep("g", "fast", "openai/m", ""),
	) + `router_settings: {routing_strategy: latency-based-routing, num_retries: 1, disable_cooldowns: true}
`
	clk := newClock()
	rt := testRouter(t, load(t, yaml), Options{Now: clk.Now, Rand: constRand(0.2)})
	s := newScript(map[string][]error{"slow": repeat(eTime, 10)})
	s.each = func(a *Attempt) {
		if a.Deployment.ID == "slow" {
			clk.Advance(10 * time.Second) // the attempt's deadline
		} else {
			clk.Advance(time.Second)
		}
	}
	res, err := rt.Do(context.Background(), req("g"), s.fn)
	if err != nil {
		t.Fatal(err)
	}
	assertTrace(t, res, hop{"g", "slow", "timeout"}, hop{"g", "fast", ""})
	for i := 0; i < 3; i++ {
		res, err = rt.Do(context.Background(), req("g"), s.fn)
		if err != nil {
			t.Fatal(err)
		}
		assertTrace(t, res, hop{"g", "fast", ""})
	}
}

func TestUsageBased(t *testing.T) {
	used := func(id string, rpm, tpm, reqs, toks int64) *node {
		x := nd(id, func(d *config.Deployment) { d.RPM, d.TPM = rpm, tpm })
		x.addUsage(t0, reqs, toks)
		return x
	}
	sel := usageBased{}
	for _, tc := range []struct {
		name  string
		cands []*node
		at    time.Time
		rand  float64
		want  string
	}{
		{"most rpm headroom", []*node{used("a", 10, 0, 5, 0), used("b", 100, 0, 20, 0)}, t0, 0, "b"},
		{"most tpm headroom", []*node{used("a", 0, 1000, 0, 900), used("b", 0, 10000, 0, 5000)}, t0, 0, "b"},
		{"the tighter of rpm and tpm counts", []*node{used("a", 100, 1000, 1, 900), used("b", 100, 1000, 50, 100)}, t0, 0, "b"},
		{"unlimited beats limited in use", []*node{used("a", 10, 0, 1, 0), used("b", 0, 0, 50, 5000)}, t0, 0, "b"},
		{"counters reset each minute", []*node{used("a", 10, 0, 9, 0), used("b", 100, 0, 1, 0)}, t0.Add(time.Minute), 0.6, "b"},
		{"counters reset each minute (ties at random)", []*node{used("a", 10, 0, 9, 0), used("b", 100, 0, 1, 0)}, t0.Add(time.Minute), 0.4, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sel.Select(tc.cands, tc.at, constRand(tc.rand)); got.d.ID != tc.want {
				t.Fatalf("got %s, want %s", got.d.ID, tc.want)
			}
		})
	}
}

func TestCostBased(t *testing.T) {
	cost := func(id string, in, out float64) *node {
		return nd(id, func(d *config.Deployment) { d.InputCostPerToken, d.OutputCostPerToken = in, out })
	}
	sel := costBased{}
	cands := []*node{cost("a", 2e-6, 8e-6), cost("b", 1e-6, 1e-6), cost("c", 1e-6, 2e-6)}
	if got := sel.Select(cands, t0, constRand(0.9)); got.d.ID != "b" {
		t.Fatalf("got %s, want b", got.d.ID)
	}
	ties := []*node{cost("a", 1e-6, 1e-6), cost("b", 1e-6, 1e-6)}
	for rv, want := range map[float64]string{0: "a", 0.5: "b"} {
		if got := sel.Select(ties, t0, constRand(rv)); got.d.ID != want {
			t.Fatalf("ties, rand %v: got %s, want %s", rv, got.d.ID, want)
		}
	}
}

// tierGroup has tier 1 (a) and tier 2 (b, c).
var tierGroup = modelList(
	dep("g", "a", "openai/m", "order: 1"),
	dep("g", "b", "openai/m", "order: 2"),
	dep("g", "c", "openai/m", "order: 2"),
	dep("g", "unordered", "openai/m", ""),
) + `router_settings: {num_retries: 1}
`

func TestOrderTiers(t *testing.T) {
	for _, rv := range []float64{0, 0.99} {
		t.Run(fmt.Sprint(rv), func(t *testing.T) {
			clk := newClock()
			rt := testRouter(t, load(t, tierGroup), Options{Now: clk.Now, Rand: constRand(rv)})
			tier2 := map[float64]string{0: "b", 0.99: "c"}[rv]

			res, err := rt.Do(context.Background(), req("g"), newScript(nil).fn)
			if err != nil {
				t.Fatal(err)
			}
			assertTrace(t, res, hop{"g", "a", ""})

			// The retry after tier 1 fails goes to tier 2.
			s := newScript(map[string][]error{"a": {e429}})
			res, err = rt.Do(context.Background(), req("g"), s.fn)
			if err != nil {
				t.Fatal(err)
			}
			assertTrace(t, res, hop{"g", "a", "rate_limited"}, hop{"g", tier2, ""})

			// While tier 1 cools down, requests start in tier 2.
			res, err = rt.Do(context.Background(), req("g"), s.fn)
			if err != nil {
				t.Fatal(err)
			}
			assertTrace(t, res, hop{"g", tier2, ""})
		})
	}
}

var taggedGroup = modelList(
	dep("g", "paid", "openai/m", "tags: [paid]"),
	dep("g", "free", "openai/m", "tags: [free, eu]"),
	dep("g", "fallback", "openai/m", "tags: [default]"),
	dep("h", "h-paid", "openai/m", "tags: [paid]"),
) + `router_settings:
  enable_tag_filtering: %v
`

func TestTagsFilter(t *testing.T) {
	for _, tc := range []struct {
		filter bool
		model  string
		tags   []string
		want   string // "" for an error
	}{
		{true, "g", []string{"free"}, "free"},
		{true, "g", []string{"eu"}, "free"},
		{true, "g", []string{"paid"}, "paid"},
		{true, "g", []string{"other", "free"}, "free"},
		{true, "g", []string{"other"}, "fallback"},
		{true, "h", []string{"other"}, ""},
		// enable_tag_filtering off: tags are only recorded.
		{false, "g", []string{"free"}, "paid"},
		{false, "h", []string{"other"}, "h-paid"},
	} {
		t.Run(fmt.Sprint(tc.filter, tc.model, tc.tags), func(t *testing.T) {
			rt := testRouter(t, load(t, fmt.Sprintf(taggedGroup, tc.filter)), Options{})
			s := newScript(nil)
			r := req(tc.model)
			r.Tags = tc.tags
			res, err := rt.Do(context.Background(), r, s.fn)
			if tc.want == "" {
				e := apierr.From(err)
				if e.Kind != apierr.InvalidRequest || e.Param != "tags" {
					t.Fatalf("err = %v (param %q), want invalid request on tags", err, e.Param)
				}
				if len(s.attempts) != 0 {
					t.Fatalf("%d attempts, want none", len(s.attempts))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			assertTrace(t, res, hop{tc.model, tc.want, ""})
		})
	}
}

const windowGroups = `
model_list:
  - model_name: g
    litellm_params: {model: openai/m, api_key: k}
    model_info: {id: small, max_input_tokens: 4000}
  - model_name: g
    litellm_params: {model: openai/m, api_key: k}
    model_info: {id: big, max_input_tokens: 8000}
  - model_name: long
    litellm_params: {model: openai/m, api_key: k}
    model_info: {id: long-a, max_input_tokens: 100000}
router_settings:
  num_retries: 0
  context_window_fallbacks: [{g: [long]}]
`

func TestPreCallContextWindowFilter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		checks bool
		tokens int
		want   []hop
	}{
		{"off: the smaller window may be picked", false, 5000, []hop{{"g", "small", ""}}},
		{"on: only windows that fit", true, 5000, []hop{{"g", "big", ""}}},
		{"on: exactly the window fits", true, 4000, []hop{{"g", "small", ""}}},
		{"on: no estimate, no filter", true, 0, []hop{{"g", "small", ""}}},
		{"on: nothing fits takes the context-window fallbacks", true, 9000, []hop{{"g", "", "context_window_exceeded"}, {"long", "long-a", ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yaml := windowGroups
			if tc.checks {
				yaml += "  enable_pre_call_checks: true\n"
			}
			rt := testRouter(t, load(t, yaml), Options{})
			r := req("g")
			r.PromptTokens = tc.tokens
			res, err := rt.Do(context.Background(), r, newScript(nil).fn)
			if err != nil {
				t.Fatal(err)
			}
			assertTrace(t, res, tc.want...)
		})
	}
}

func TestOwnRPMLimit(t *testing.T) {
	yaml := modelList(
		dep("g", "a", "openai/m", "rpm: 1"),
		dep("g", "b", "openai/m", "rpm: 1"),
	) + `router_settings: {num_retries: 0}
`
	clk := newClock()
	rt := testRouter(t, load(t, yaml), Options{Now: clk.Now})
	s := newScript(nil)
	for _, want := range []string{"a", "b"} {
		res, err := rt.Do(context.Background(), req("g"), s.fn)
		if err != nil {
			t.Fatal(err)
		}
		assertTrace(t, res, hop{"g", want, ""})
	}
	clk.Set(t0.Add(15 * time.Second))
	res, err := rt.Do(context.Background(), req("g"), s.fn)
	e := apierr.From(err)
	if e.Kind != apierr.RateLimited || e.RetryAfter != 45*time.Second {
		t.Fatalf("err = %v, RetryAfter %v; want rate limited, 45s", err, e.RetryAfter)
	}
	assertTrace(t, res, hop{"g", "", "rate_limit_exceeded"})
	clk.Set(t0.Add(time.Minute))
	res, err = rt.Do(context.Background(), req("g"), s.fn)
	if err != nil {
		t.Fatal(err)
	}
	assertTrace(t, res, hop{"g", "a", ""})
}
