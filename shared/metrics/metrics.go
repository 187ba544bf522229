// Package metrics counts what the gateway serves, under LiteLLM's
// Prometheus metric names where one exists, and renders it two ways: the
// Prometheus text format (local mode's GET /metrics) and one CloudWatch
// Embedded Metric Format line per request (Lambda: the log line is the
// metric, with no API call and no agent).
//
// A Registry is process-wide; a nil *Registry is valid and counts nothing,
// so callers pass it through without checks. Label values are bounded: the
// requested model is one the config names (a model group or an alias), else
// its wildcard group, else "unknown"; model groups and deployments come from
// the config; key aliases and teams from the keys store, and past
// Options.MaxSeries distinct combinations new ones are counted under
// "other". Never a request id or a raw key.
//
// The per-request cost is one map lookup under a read lock and a few atomic
// adds for an existing series, and, with EMF, one line appended to a buffer
// that Flush writes out (Lambda: after the response).
package metrics

import (
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultNamespace is the CloudWatch namespace when Options.Namespace is empty.
const DefaultNamespace = "Sluice"

// Metric names (Prometheus and CloudWatch alike).
const (
	TotalRequests    = "litellm_proxy_total_requests_metric"
	FailedRequests   = "litellm_proxy_failed_requests_metric"
	Responses5xx     = "sluice_gateway_5xx_responses"
	Latency          = "litellm_request_total_latency_metric"
	TimeToFirstToken = "litellm_llm_api_time_to_first_token_metric"
	InputTokens      = "litellm_input_tokens_metric"
	OutputTokens     = "litellm_output_tokens_metric"
	Spend            = "litellm_spend_metric"
	DeploymentState  = "litellm_deployment_state"
	CooledDown       = "litellm_deployment_cooled_down"
	FallbacksOK      = "litellm_deployment_successful_fallbacks"
	FallbacksFailed  = "litellm_deployment_failed_fallbacks"
	Retries          = "sluice_retries"
	RateLimited      = "sluice_rate_limited_requests"
	BudgetExceeded   = "sluice_budget_exceeded_requests"
	FailOpen         = "sluice_ratelimit_failopen_admissions"
	Throttled        = "sluice_ratelimit_throttled_writes"
	StoreErrors      = "sluice_store_errors"
	SpendFallback    = "sluice_spend_fallback_events"
)

const (
	defaultMaxSeries = 10_000
	overflow         = "other"   // label value past MaxSeries
	unknownModel     = "unknown" // requested_model of a model no config names
	stateHealthy     = 0
	stateCooling     = 2
	// emfFlushThreshold: pending EMF lines are written at once past it (a
	// process that never calls Flush).
	emfFlushThreshold = 1 << 20
)

// Refusal scopes (the scope label of RateLimited and BudgetExceeded).
var scopes = [...]string{"key", "team", "user", "team_member", "end_user", "deployment", "organization"}

// scopeIndex maps a scope name (limits' and keys' kinds alike) to its index.
func scopeIndex(s string) int {
	switch s {
	case "key":
		return 0
	case "team":
		return 1
	case "user":
		return 2
	case "team_member", "member":
		return 3
	case "end_user", "enduser":
		return 4
	case "deployment":
		return 5
	case "organization", "org":
		return 6
	}
	return -1
}

// Stores (the store label of StoreErrors).
const (
	StoreDynamoDB = "dynamodb"
	StoreSQS      = "sqs"
	StoreSSM      = "ssm"
)

var stores = [...]string{StoreDynamoDB, StoreSQS, StoreSSM}

// Spend fallback paths (the path label of SpendFallback).
const (
	PathStore = "store" // written to the store directly
	PathLog   = "log"   // only logged, for a replay
)

var paths = [...]string{PathStore, PathLog}

// Deployment is a configured deployment, registered so that its state is
// reported before anything happens to it.
type Deployment struct{ Group, ID string }

// Options configure a Registry.
type Options struct {
	// Namespace is the CloudWatch namespace of EMF lines ("" : Sluice).
	Namespace string
	// EMF, when set, receives one EMF line per request (and per cooldown
	// started, and one for the service-wide counters that changed), held
	// until Flush.
	EMF io.Writer
	// Prometheus keeps the per-series counts WritePrometheus renders;
	// off, Observe only builds EMF lines.
	Prometheus bool
	// MaxSeries bounds the distinct (requested model, group, deployment,
	// key alias, team, status) combinations; past it, new key aliases,
	// teams and requested models count as "other". 0: 10,000.
	MaxSeries int
	// Now is the clock (tests); nil: time.Now.
	Now func() time.Time
}

// Registry holds the gateway's metrics. Its methods are safe for concurrent
// use and do nothing on a nil *Registry.
type Registry struct {
	ns         string
	prometheus bool
	maxSeries  int
	now        func() time.Time

	// Set once by Register, before serving.
	models map[string]struct{}

	mu    sync.RWMutex
	cells map[cellKey]*cell

	rateLimited [len(scopes)]atomic.Int64
	budget      [len(scopes)]atomic.Int64
	failOpen    atomic.Int64
	throttled   atomic.Int64
	storeErrs   [len(stores)]atomic.Int64
	spendFB     [len(paths)]atomic.Int64

	depMu     sync.Mutex
	until     map[depKey]time.Time // each known deployment's cooldown end, as this instance saw it start
	cooldowns map[coolKey]int64

	emf *emfSink
}

type depKey struct{ group, deployment string }

type coolKey struct {
	group, deployment string
	status            int
}

// cellKey is one combination of the request labels; each metric renders
// the sums over the labels it does not carry.
type cellKey struct {
	requested, group, deployment, alias, team string
	status                                    int
}

type cell struct {
	requests    atomic.Int64
	latency     histogram
	ttft        histogram
	in, out     atomic.Int64
	spendNanos  atomic.Int64
	retries     atomic.Int64
	fbOK, fbBad atomic.Int64
}

// New returns a Registry.
func New(o Options) *Registry {
	r := &Registry{
		ns: o.Namespace, prometheus: o.Prometheus, maxSeries: o.MaxSeries, now: o.Now,
		models: map[string]struct{}{}, cells: map[cellKey]*cell{},
		until: map[depKey]time.Time{}, cooldowns: map[coolKey]int64{},
	}
	if r.ns == "" {
		r.ns = DefaultNamespace
	}
	if r.maxSeries <= 0 {
		r.maxSeries = defaultMaxSeries
	}
	if r.now == nil {
		r.now = time.Now
	}
	if o.EMF != nil {
		r.emf = &emfSink{w: o.EMF}
	}
	return r
}

// Register names the models a client may ask for by name (model groups
// and aliases; wildcard groups are not names) and the configured
// deployments. Call it once, before serving.
func (r *Registry) Register(models []string, deps []Deployment) {
	if r == nil {
		return
	}
	for _, m := range models {
		r.models[m] = struct{}{}
	}
	r.depMu.Lock()
	defer r.depMu.Unlock()
	for _, d := range deps {
		k := depKey{d.Group, d.ID}
		if _, ok := r.until[k]; !ok {
			r.until[k] = time.Time{}
		}
	}
}

// Request is what one served request reports.
type Request struct {
	RequestedModel string // as the client sent it
	ModelGroup     string // the group of the final attempt ("" none)
	Deployment     string // the final attempt's deployment id ("" none)
	KeyAlias       string
	Team           string
	Status         int
	CallID         string // EMF property only, never a label
	Stream         bool
	End            time.Time
	Latency        time.Duration
	TTFT           time.Duration // streams: start to the first content event sent; 0 none
	HasUsage       bool
	InputTokens    int64
	OutputTokens   int64
	CostKnown      bool
	CostNanos      int64
	Retries        int
	Fallbacks      int
	// RateLimited / BudgetExceeded: the scope (key, team, user,
	// team_member, end_user, deployment) whose limit or budget refused the
	// request; "" if none.
	RateLimited    string
	BudgetExceeded string
}

// Observe counts one request.
func (r *Registry) Observe(q *Request) {
	if r == nil {
		return
	}
	requested := q.RequestedModel
	if _, ok := r.models[requested]; !ok {
		requested = q.ModelGroup // a wildcard group's model, or none
		if requested == "" {
			requested = unknownModel
		}
	}
	if i := scopeIndex(q.RateLimited); i >= 0 {
		r.rateLimited[i].Add(1)
	}
	if i := scopeIndex(q.BudgetExceeded); i >= 0 {
		r.budget[i].Add(1)
	}
	if r.prometheus {
		c := r.cell(cellKey{requested: requested, group: q.ModelGroup, deployment: q.Deployment, alias: q.KeyAlias, team: q.Team, status: q.Status})
		c.requests.Add(1)
		c.latency.observe(q.Latency)
		if q.TTFT > 0 {
			c.ttft.observe(q.TTFT)
		}
		if q.HasUsage {
			c.in.Add(q.InputTokens)
			c.out.Add(q.OutputTokens)
			if q.CostKnown {
				c.spendNanos.Add(q.CostNanos)
			}
		}
		if q.Retries > 0 {
			c.retries.Add(int64(q.Retries))
		}
		if q.Fallbacks > 0 {
			if q.Status < 400 {
				c.fbOK.Add(1)
			} else {
				c.fbBad.Add(1)
			}
		}
	}
	if r.emf != nil {
		state := -1
		if q.ModelGroup != "" && q.Deployment != "" {
			state = r.state(q.ModelGroup, q.Deployment)
		}
		r.emf.add(func(b []byte) []byte { return r.appendRequestLine(b, q, requested, state) })
	}
}

// cell returns the counters of k, creating them (bounded by maxSeries).
func (r *Registry) cell(k cellKey) *cell {
	r.mu.RLock()
	c := r.cells[k]
	r.mu.RUnlock()
	if c != nil {
		return c
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c = r.cells[k]; c != nil {
		return c
	}
	if len(r.cells) >= r.maxSeries {
		// Groups, deployments and statuses are bounded by the config;
		// what the keys store or clients name is not.
		k.requested, k.alias, k.team = overflow, overflow, overflow
		if c = r.cells[k]; c != nil {
			return c
		}
	}
	c = &cell{}
	r.cells[k] = c
	return c
}

// FailOpen counts an admission let through uncounted because the limits
// store failed.
func (r *Registry) FailOpen() {
	if r != nil {
		r.failOpen.Add(1)
	}
}

// ThrottledWrite counts an admission write DynamoDB throttled (a hot
// scope's item at its write ceiling): retried, but a sign of a scope
// outgrowing its shards.
func (r *Registry) ThrottledWrite() {
	if r != nil {
		r.throttled.Add(1)
	}
}

// StoreError counts a failed call to store (StoreDynamoDB, StoreSQS, StoreSSM).
func (r *Registry) StoreError(store string) {
	if r == nil {
		return
	}
	for i, s := range stores {
		if s == store {
			r.storeErrs[i].Add(1)
		}
	}
}

// SpendFallbackEvents counts n spend events that did not go to SQS:
// written to the store directly (PathStore) or only logged (PathLog).
func (r *Registry) SpendFallbackEvents(path string, n int) {
	if r == nil || n <= 0 {
		return
	}
	for i, p := range paths {
		if p == path {
			r.spendFB[i].Add(int64(n))
		}
	}
}

// CooldownStarted records that this instance started a cooldown of a
// deployment, until the given time, after a failure answered with status.
func (r *Registry) CooldownStarted(group, deployment string, status int, until time.Time) {
	if r == nil {
		return
	}
	r.depMu.Lock()
	k := depKey{group, deployment}
	if until.After(r.until[k]) {
		r.until[k] = until
	}
	r.cooldowns[coolKey{group, deployment, status}]++
	r.depMu.Unlock()
	if r.emf != nil {
		r.emf.add(func(b []byte) []byte { return r.appendCooldownLine(b, group, deployment, status) })
	}
}

// state is a deployment's state as this instance knows it: cooling until
// the end of a cooldown it saw start.
func (r *Registry) state(group, deployment string) int {
	r.depMu.Lock()
	u := r.until[depKey{group, deployment}]
	r.depMu.Unlock()
	if u.After(r.now()) {
		return stateCooling
	}
	return stateHealthy
}

// Flush writes the EMF lines held since the last Flush, and one line for
// the service-wide counters that changed since (fail-open admissions,
// store errors, spend fallbacks). Lambda calls it after each response.
func (r *Registry) Flush() error {
	if r == nil || r.emf == nil {
		return nil
	}
	return r.emf.flush(r.appendServiceLine)
}

// EMF reports whether the registry writes EMF lines.
func (r *Registry) EMF() bool { return r != nil && r.emf != nil }

// histogram counts durations in buckets (bounds in bucketBounds).
type histogram struct {
	counts [len(bucketBounds) + 1]atomic.Int64
	sum    atomic.Int64 // nanoseconds
}

// bucketBounds are the histograms' upper bounds (le), in seconds.
var bucketBounds = [...]float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

var bucketNanos = func() (out [len(bucketBounds)]int64) {
	for i, b := range bucketBounds {
		out[i] = int64(b * float64(time.Second))
	}
	return out
}()

func (h *histogram) observe(d time.Duration) {
	i := 0
	for i < len(bucketNanos) && int64(d) > bucketNanos[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(int64(d))
}

// emfSink holds EMF lines until flush.
type emfSink struct {
	mu   sync.Mutex
	w    io.Writer
	buf  []byte
	prev [len(stores) + len(paths) + 2]int64 // service-wide counts at the last flush
}

// add appends one line built by build; past a threshold (a process that
// never flushes) it writes at once.
func (s *emfSink) add(build func([]byte) []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = build(s.buf)
	if len(s.buf) >= emfFlushThreshold {
		_, _ = s.w.Write(s.buf)
		s.buf = s.buf[:0]
	}
}

func (s *emfSink) flush(service func(b []byte, prev []int64) []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = service(s.buf, s.prev[:])
	if len(s.buf) == 0 {
		return nil
	}
	_, err := s.w.Write(s.buf)
	if cap(s.buf) > 4*emfFlushThreshold {
		s.buf = nil
	} else {
		s.buf = s.buf[:0]
	}
	return err
}
