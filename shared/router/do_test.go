package router

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
)

// sleeps records the backoff waits the router asks for.
type sleeps struct {
	mu sync.Mutex
	ds []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ds = append(s.ds, d)
	return ctx.Err()
}

func (s *sleeps) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration{}, s.ds...)
}

var oneDeployment = modelList(
	dep("g", "a", "openai/m", ""),
	dep("h", "h1", "openai/m", ""),
	dep("h", "h2", "openai/m", ""),
) + `router_settings:
  disable_cooldowns: true
`

func TestRetries(t *testing.T) {
	withAfter := func(d time.Duration) *apierr.Error { e := fail(apierr.UpstreamRateLimited); e.RetryAfter = d; return e }
	for _, tc := range []struct {
		name       string
		settings   string
		model      string
		numRetries int // per request; -1: not set
		plan       map[string][]error
		want       []hop
		sleeps     []time.Duration
	}{
		{
			name: "num_retries, same deployment: exponential backoff with full jitter", settings: "  num_retries: 3\n",
			model: "g", numRetries: -1, plan: map[string][]error{"a": repeat(e500, 3)},
			want:   []hop{{"g", "a", "server_error"}, {"g", "a", "server_error"}, {"g", "a", "server_error"}, {"g", "a", ""}},
			sleeps: []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond}, // rand 0.5 of 100ms, 200ms, 400ms
		},
		{
			name: "per-request num_retries wins", settings: "  num_retries: 3\n",
			model: "g", numRetries: 1, plan: map[string][]error{"a": repeat(e500, 3)},
			want:   []hop{{"g", "a", "server_error"}, {"g", "a", "server_error"}},
			sleeps: []time.Duration{50 * time.Millisecond},
		},
		{
			name: "retry_policy per class", settings: "  num_retries: 0\n  retry_policy: {TimeoutErrorRetries: 2}\n",
			model: "g", numRetries: -1, plan: map[string][]error{"a": {eTime, eTime, e500}},
			want:   []hop{{"g", "a", "timeout"}, {"g", "a", "timeout"}, {"g", "a", "server_error"}},
			sleeps: []time.Duration{50 * time.Millisecond, 100 * time.Millisecond},
		},
		{
			name: "model_group_retry_policy wins over retry_policy",
			settings: "  num_retries: 0\n  retry_policy: {TimeoutErrorRetries: 2}\n" +
				"  model_group_retry_policy: {g: {TimeoutErrorRetries: 0}}\n",
			model: "g", numRetries: -1, plan: map[string][]error{"a": {eTime, eTime}},
			want: []hop{{"g", "a", "timeout"}},
		},
		{
			name: "no retry for a bad request", settings: "  num_retries: 3\n",
			model: "g", numRetries: -1, plan: map[string][]error{"a": {eBad}},
			want: []hop{{"g", "a", "bad_request"}},
		},
		{
			name: "no retry for a content refusal", settings: "  num_retries: 3\n",
			model: "g", numRetries: -1, plan: map[string][]error{"a": {ePolicy}},
			want: []hop{{"g", "a", "content_policy"}},
		},
		{
			name: "no retry for a context-window error", settings: "  num_retries: 3\n",
			model: "g", numRetries: -1, plan: map[string][]error{"a": {eCtx}},
			want: []hop{{"g", "a", "context_window_exceeded"}},
		},
		{
			name: "auth: retried on another deployment only", settings: "  num_retries: 3\n",
			model: "h", numRetries: -1, plan: map[string][]error{"h1": repeat(eAuth, 5), "h2": repeat(eAuth, 5)},
			want:   []hop{{"h", "h2", "auth"}, {"h", "h1", "auth"}}, // rand 0.5: h2 first
			sleeps: []time.Duration{0},
		},
		{
			name: "another deployment first, without waiting", settings: "  num_retries: 2\n",
			model: "h", numRetries: -1, plan: map[string][]error{"h1": repeat(e500, 5), "h2": repeat(e500, 5)},
			want:   []hop{{"h", "h2", "server_error"}, {"h", "h1", "server_error"}, {"h", "h2", "server_error"}},
			sleeps: []time.Duration{0, 0}, // h2 after h1 is a switch too
		},
		{
			name: "retry_after is a floor", settings: "  num_retries: 1\n  retry_after: 1\n",
			model: "g", numRetries: -1, plan: map[string][]error{"a": {e500}},
			want:   []hop{{"g", "a", "server_error"}, {"g", "a", ""}},
			sleeps: []time.Duration{time.Second},
		},
		{
			name: "Retry-After honoured", settings: "  num_retries: 1\n",
			model: "g", numRetries: -1, plan: map[string][]error{"a": {withAfter(2 * time.Second)}},
			want:   []hop{{"g", "a", "rate_limited"}, {"g", "a", ""}},
			sleeps: []time.Duration{2 * time.Second},
		},
		{
			name: "Retry-After past max_retry_after gives up", settings: "  num_retries: 1\n  max_retry_after: 10\n",
			model: "g", numRetries: -1, plan: map[string][]error{"a": {withAfter(11 * time.Second)}},
			want: []hop{{"g", "a", "rate_limited"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sl := &sleeps{}
			rt := testRouter(t, load(t, oneDeployment+tc.settings), Options{Sleep: sl.sleep, Rand: constRand(0.5)})
			r := req(tc.model)
			r.NumRetries = tc.numRetries
			res, _ := rt.Do(context.Background(), r, newScript(tc.plan).fn)
			assertTrace(t, res, tc.want...)
			if got := sl.got(); !reflect.DeepEqual(got, tc.sleeps) && !(len(got) == 0 && len(tc.sleeps) == 0) {
				t.Fatalf("sleeps %v, want %v", got, tc.sleeps)
			}
			if res.Retries != len(tc.want)-1 {
				t.Fatalf("Retries = %d, want %d", res.Retries, len(tc.want)-1)
			}
		})
	}
}

func TestBackoffCap(t *testing.T) {
	rt := testRouter(t, load(t, oneDeployment), Options{})
	for retry, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 7: 5 * time.Second, 30: 5 * time.Second} {
		rt.rand = constRand(0.999999)
		if got := rt.backoff(retry, true, e500); got < want*99/100 || got > want {
			t.Errorf("backoff(%d) = %v, want just under %v", retry, got, want)
		}
		rt.rand = constRand(0)
		if got := rt.backoff(retry, true, e500); got != 0 {
			t.Errorf("backoff(%d) with rand 0 = %v, want 0 (full jitter)", retry, got)
		}
	}
}

// A retry whose wait would pass the request's deadline is not made.
func TestRetryNotPastTheDeadline(t *testing.T) {
	sl := &sleeps{}
	rt := testRouter(t, load(t, oneDeployment+"  num_retries: 2\n"), Options{Sleep: sl.sleep})
	e := fail(apierr.UpstreamRateLimited)
	e.RetryAfter = 20 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := rt.Do(ctx, req("g"), newScript(map[string][]error{"a": {e}}).fn)
	if err != e {
		t.Fatalf("err = %v, want %v", err, e)
	}
	assertTrace(t, res, hop{"g", "a", "rate_limited"})
	if got := sl.got(); len(got) != 0 {
		t.Fatalf("slept %v", got)
	}
}

// Attempt.Retries counts the request's retries across groups, also when a
// fallback group was entered without an attempt.
func TestAttemptCountsRetriesAcrossGroups(t *testing.T) {
	const yaml = `
model_list:
  - model_name: primary
    litellm_params: {model: openai/m, api_key: k}
    model_info: {id: p1}
  - model_name: primary
    litellm_params: {model: openai/m, api_key: k}
    model_info: {id: p2}
  - model_name: blocked
    litellm_params: {model: openai/m, api_key: k}
    model_info: {id: x, blocked: true}
  - model_name: backup
    litellm_params: {model: openai/m, api_key: k}
    model_info: {id: b1}
router_settings:
  num_retries: 1
  fallbacks: [{primary: [blocked, backup]}]
`
	rt := testRouter(t, load(t, yaml), Options{})
	s := newScript(map[string][]error{"p1": {e500}, "p2": {e500}})
	res, err := rt.Do(context.Background(), req("primary"), s.fn)
	if err != nil {
		t.Fatal(err)
	}
	assertTrace(t, res, hop{"primary", "p1", "server_error"}, hop{"primary", "p2", "server_error"},
		hop{"blocked", "", "rate_limit_exceeded"}, hop{"backup", "b1", ""})
	type counts struct{ Number, Retry, Retries, Fallback int }
	var got []counts
	for _, a := range s.attempts {
		got = append(got, counts{a.Number, a.Retry, a.Retries, a.Fallback})
	}
	want := []counts{{1, 0, 0, 0}, {2, 1, 1, 0}, {3, 0, 1, 2}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("attempt counts %+v, want %+v", got, want)
	}
	if res.Retries != 1 || res.Fallbacks != 2 {
		t.Fatalf("Retries %d Fallbacks %d, want 1, 2", res.Retries, res.Fallbacks)
	}
}

// The router learns what became of an attempt from its Outcome: a committed
// failure ends the request (no retry, no fallback) and still counts towards
// the deployment's cooldown; an aborted one ends it and does not count.
func TestOutcomeEndsTheRequest(t *testing.T) {
	cfg := load(t, primaryAB+"router_settings:\n  num_retries: 2\n  cooldown_time: 30\n  fallbacks: [{primary: [backup]}]\n")
	for _, tc := range []struct {
		name    string
		out     Outcome
		want    []hop
		cooling bool
	}{
		{"plain failure: retried", Outcome{}, []hop{{"primary", "primary-a", "rate_limited"}, {"primary", "primary-b", ""}}, true},
		{"committed: ends, cools", Outcome{Committed: true}, []hop{{"primary", "primary-a", "rate_limited"}}, true},
		{"aborted: ends, no cooldown", Outcome{Abort: true}, []hop{{"primary", "primary-a", "rate_limited"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			rt := testRouter(t, cfg, Options{Now: clk.Now})
			e := fail(apierr.UpstreamRateLimited)
			res, err := rt.Do(context.Background(), req("primary"), func(_ context.Context, a *Attempt) (Outcome, error) {
				if a.Number == 1 {
					return tc.out, e
				}
				return Outcome{Committed: true}, nil
			})
			assertTrace(t, res, tc.want...)
			if wantErr := len(tc.want) == 1; (err != nil) != wantErr {
				t.Fatalf("err = %v, want an error: %v", err, wantErr)
			}
			cooling, _ := rt.cooldowns.CoolingDown(context.Background(), []string{"primary-a"}, clk.Now())
			if got := len(cooling) > 0; got != tc.cooling {
				t.Fatalf("primary-a cooling = %v, want %v", got, tc.cooling)
			}
		})
	}
}

// The completion tokens an attempt reports count towards its deployment's
// tpm in this instance's view.
func TestOutcomeTokensCountTowardsTPM(t *testing.T) {
	yaml := modelList(
		dep("g", "a", "openai/m", "tpm: 100"),
		dep("g", "b", "openai/m", "tpm: 100"),
	) + `router_settings: {num_retries: 0}
`
	for _, tc := range []struct {
		tokens int64
		next   string
	}{{0, "a"}, {99, "a"}, {100, "b"}} {
		t.Run(fmt.Sprint(tc.tokens), func(t *testing.T) {
			rt := testRouter(t, load(t, yaml), Options{})
			res, err := rt.Do(context.Background(), req("g"), func(context.Context, *Attempt) (Outcome, error) {
				return Outcome{Committed: true, Tokens: tc.tokens}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			assertTrace(t, res, hop{"g", "a", ""})
			res, err = rt.Do(context.Background(), req("g"), newScript(nil).fn)
			if err != nil {
				t.Fatal(err)
			}
			assertTrace(t, res, hop{"g", tc.next, ""})
		})
	}
}
