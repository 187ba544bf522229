package metrics_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/metrics"
	"github.com/sluice-gw/sluice/shared/metrics/metricstest"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func newRegistry(emf *bytes.Buffer) *metrics.Registry {
	o := metrics.Options{Prometheus: true, Namespace: "Test", Now: func() time.Time { return t0 }}
	if emf != nil {
		o.EMF = emf
	}
	r := metrics.New(o)
	r.Register([]string{"gpt-4o", "fast"}, []metrics.Deployment{{Group: "gpt-4o", ID: "d1"}, {Group: "gpt-4o", ID: "d2"}})
	return r
}

func success() *metrics.Request {
	return &metrics.Request{
		RequestedModel: "fast", ModelGroup: "gpt-4o", Deployment: "d1", KeyAlias: `alias "q"`, Team: "t1",
		Status: 200, CallID: "c-1", End: t0, Latency: 120 * time.Millisecond,
		HasUsage: true, InputTokens: 10, OutputTokens: 5, CostKnown: true, CostNanos: 1_500_000,
	}
}

// value returns the value of the one sample of name whose labels include want.
func value(t *testing.T, samples []metricstest.Sample, name string, want map[string]string) (float64, bool) {
	t.Helper()
	v, found := metricstest.Sum(samples, name, want)
	if found > 1 {
		t.Fatalf("%s%v matches %d series", name, want, found)
	}
	return v, found == 1
}

func render(t *testing.T, r *metrics.Registry) (map[string]string, []metricstest.Sample, string) {
	t.Helper()
	var b bytes.Buffer
	if err := r.WritePrometheus(&b); err != nil {
		t.Fatal(err)
	}
	types, samples := metricstest.Parse(t, b.String())
	return types, samples, b.String()
}

func TestPrometheusText(t *testing.T) {
	r := newRegistry(nil)
	r.Observe(success())
	r.Observe(success())
	stream := success()
	stream.Stream, stream.TTFT, stream.Deployment = true, 30*time.Millisecond, "d2"
	r.Observe(stream)
	r.Observe(&metrics.Request{RequestedModel: "fast", ModelGroup: "gpt-4o", Deployment: "d1", Status: 429, RateLimited: "key", Latency: time.Millisecond})
	r.Observe(&metrics.Request{RequestedModel: "fast", ModelGroup: "gpt-4o", Deployment: "d2", Status: 503, Retries: 2, Fallbacks: 1, Latency: time.Second})
	r.Observe(&metrics.Request{RequestedModel: "gpt-4o", Status: 400, BudgetExceeded: "member"})
	r.FailOpen()
	r.StoreError(metrics.StoreDynamoDB)
	r.StoreError(metrics.StoreDynamoDB)
	r.StoreError(metrics.StoreSQS)
	r.SpendFallbackEvents(metrics.PathStore, 3)
	r.CooldownStarted("gpt-4o", "d2", 503, t0.Add(time.Minute))

	types, s, text := render(t, r)
	for _, name := range []string{metrics.TotalRequests, metrics.FailedRequests, metrics.Responses5xx, metrics.Latency,
		metrics.TimeToFirstToken, metrics.InputTokens, metrics.OutputTokens, metrics.Spend, metrics.DeploymentState,
		metrics.CooledDown, metrics.FallbacksOK, metrics.FallbacksFailed, metrics.Retries, metrics.RateLimited,
		metrics.BudgetExceeded, metrics.FailOpen, metrics.StoreErrors, metrics.SpendFallback} {
		if types[name] == "" {
			t.Errorf("family %s missing", name)
		}
	}
	check := func(name string, labels map[string]string, want float64) {
		t.Helper()
		got, ok := value(t, s, name, labels)
		if !ok || got != want {
			t.Errorf("%s%v = %v (found %v), want %v", name, labels, got, ok, want)
		}
	}
	check(metrics.TotalRequests, map[string]string{"requested_model": "fast", "model_group": "gpt-4o", "api_key_alias": `alias "q"`, "team": "t1", "status_code": "200"}, 3)
	check(metrics.FailedRequests, map[string]string{"status_code": "429"}, 1)
	check(metrics.FailedRequests, map[string]string{"status_code": "503"}, 1)
	if _, ok := value(t, s, metrics.FailedRequests, map[string]string{"status_code": "200"}); ok {
		t.Errorf("a 200 counted as failed")
	}
	check(metrics.Responses5xx, map[string]string{"model_group": "gpt-4o"}, 1)
	check(metrics.Latency+"_count", map[string]string{"model_group": "gpt-4o"}, 5)
	check(metrics.Latency+"_bucket", map[string]string{"model_group": "gpt-4o", "le": "0.1"}, 1)
	check(metrics.Latency+"_bucket", map[string]string{"model_group": "gpt-4o", "le": "0.25"}, 4)
	check(metrics.TimeToFirstToken+"_count", map[string]string{"model_group": "gpt-4o", "deployment": "d2"}, 1)
	if _, ok := value(t, s, metrics.TimeToFirstToken+"_count", map[string]string{"deployment": "d1"}); ok {
		t.Errorf("time to first token reported for a deployment with no stream")
	}
	check(metrics.InputTokens, map[string]string{"deployment": "d1"}, 20)
	check(metrics.OutputTokens, map[string]string{"deployment": "d2"}, 5)
	check(metrics.Spend, map[string]string{"deployment": "d1", "team": "t1"}, 0.003)
	check(metrics.DeploymentState, map[string]string{"deployment": "d1"}, 0)
	check(metrics.DeploymentState, map[string]string{"deployment": "d2"}, 2)
	check(metrics.CooledDown, map[string]string{"deployment": "d2", "exception_status": "503"}, 1)
	check(metrics.FallbacksFailed, map[string]string{"requested_model": "fast", "fallback_model": "gpt-4o"}, 1)
	check(metrics.Retries, map[string]string{"model_group": "gpt-4o"}, 2)
	check(metrics.RateLimited, map[string]string{"scope": "key"}, 1)
	check(metrics.RateLimited, map[string]string{"scope": "team"}, 0)
	check(metrics.BudgetExceeded, map[string]string{"scope": "team_member"}, 1)
	check(metrics.FailOpen, nil, 1)
	check(metrics.StoreErrors, map[string]string{"store": "dynamodb"}, 2)
	check(metrics.StoreErrors, map[string]string{"store": "sqs"}, 1)
	check(metrics.StoreErrors, map[string]string{"store": "ssm"}, 0)
	check(metrics.SpendFallback, map[string]string{"path": "store"}, 3)
	check(metrics.SpendFallback, map[string]string{"path": "log"}, 0)
	if !strings.Contains(text, `api_key_alias="alias \"q\""`) {
		t.Errorf("label value not escaped:\n%s", text)
	}
}

func TestCooldownEnds(t *testing.T) {
	now := t0
	r := metrics.New(metrics.Options{Prometheus: true, Now: func() time.Time { return now }})
	r.Register(nil, []metrics.Deployment{{Group: "g", ID: "d"}})
	r.CooldownStarted("g", "d", 429, t0.Add(5*time.Second))
	_, s, _ := render(t, r)
	if v, _ := value(t, s, metrics.DeploymentState, map[string]string{"deployment": "d"}); v != 2 {
		t.Fatalf("state while cooling = %v, want 2", v)
	}
	now = t0.Add(5 * time.Second)
	_, s, _ = render(t, r)
	if v, _ := value(t, s, metrics.DeploymentState, map[string]string{"deployment": "d"}); v != 0 {
		t.Fatalf("state after the cooldown = %v, want 0", v)
	}
}

// TestBoundedLabels: models no config names collapse to their wildcard
// group or "unknown", and past MaxSeries new aliases share one series.
func TestBoundedLabels(t *testing.T) {
	r := metrics.New(metrics.Options{Prometheus: true, MaxSeries: 5})
	r.Register([]string{"gpt-4o"}, nil)
	for i := range 50 {
		r.Observe(&metrics.Request{RequestedModel: fmt.Sprintf("random-%d", i), Status: 404})
		r.Observe(&metrics.Request{RequestedModel: fmt.Sprintf("openai/model-%d", i), ModelGroup: "openai/*", Deployment: "w", Status: 200})
	}
	_, s, _ := render(t, r)
	if v, _ := value(t, s, metrics.TotalRequests, map[string]string{"requested_model": "unknown"}); v != 50 {
		t.Errorf("unknown models = %v, want 50", v)
	}
	if v, _ := value(t, s, metrics.TotalRequests, map[string]string{"requested_model": "openai/*"}); v != 50 {
		t.Errorf("wildcard models = %v, want 50", v)
	}
	for i := range 100 {
		r.Observe(&metrics.Request{RequestedModel: "gpt-4o", ModelGroup: "gpt-4o", Deployment: "d", KeyAlias: fmt.Sprintf("key-%d", i), Status: 200})
	}
	_, s, _ = render(t, r)
	n := 0
	for _, x := range s {
		if x.Name == metrics.TotalRequests {
			n++
			if strings.Contains(x.Labels["requested_model"], "random") || strings.Contains(x.Labels["requested_model"], "model-") {
				t.Errorf("unbounded label value %q", x.Labels["requested_model"])
			}
		}
	}
	if n > 6 {
		t.Errorf("%d series of %s with MaxSeries 5 (one overflow series allowed)", n, metrics.TotalRequests)
	}
	if v, _ := value(t, s, metrics.TotalRequests, map[string]string{"api_key_alias": "other"}); v < 90 {
		t.Errorf("overflow series counted %v, want >= 90", v)
	}
}

// emfLine is the structure of an EMF line.
type emfLine struct {
	AWS struct {
		Timestamp         int64
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
			Metrics    []struct{ Name, Unit string }
		}
	} `json:"_aws"`
}

// checkEMF validates one line and returns it decoded as a map too.
func checkEMF(t *testing.T, line []byte) (emfLine, map[string]any) {
	t.Helper()
	var l emfLine
	var m map[string]any
	if err := json.Unmarshal(line, &l); err != nil {
		t.Fatalf("EMF line is not JSON: %v: %s", err, line)
	}
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatal(err)
	}
	if l.AWS.Timestamp <= 0 || len(l.AWS.CloudWatchMetrics) != 1 {
		t.Fatalf("bad _aws: %s", line)
	}
	d := l.AWS.CloudWatchMetrics[0]
	if d.Namespace == "" || len(d.Metrics) == 0 || len(d.Metrics) > 100 {
		t.Fatalf("bad directive: %s", line)
	}
	if len(d.Dimensions) == 0 || len(d.Dimensions[0]) != 0 {
		t.Fatalf("the dimensionless set must come first: %s", line)
	}
	for _, set := range d.Dimensions {
		for _, dim := range set {
			v, ok := m[dim].(string)
			if !ok || v == "" {
				t.Fatalf("dimension %s has no value: %s", dim, line)
			}
		}
	}
	for _, mt := range d.Metrics {
		switch mt.Unit {
		case "Count", "Milliseconds", "None":
		default:
			t.Fatalf("unit %q: %s", mt.Unit, line)
		}
		if _, ok := m[mt.Name].(float64); !ok {
			t.Fatalf("metric %s has no numeric value: %s", mt.Name, line)
		}
	}
	return l, m
}

func lines(b *bytes.Buffer) [][]byte {
	return bytes.Split(bytes.TrimSuffix(b.Bytes(), []byte("\n")), []byte("\n"))
}

func TestEMF(t *testing.T) {
	var out bytes.Buffer
	r := newRegistry(&out)
	q := success()
	q.Stream, q.TTFT, q.Fallbacks = true, 25*time.Millisecond, 1
	r.Observe(q)
	r.Observe(&metrics.Request{RequestedModel: "nope\n\"x", Status: 401, End: t0})
	r.Observe(&metrics.Request{RequestedModel: "fast", ModelGroup: "gpt-4o", Status: 429, RateLimited: "end_user", End: t0})
	if out.Len() != 0 {
		t.Fatalf("EMF written before Flush")
	}
	r.StoreError(metrics.StoreDynamoDB)
	r.FailOpen()
	r.CooldownStarted("gpt-4o", "d1", 429, t0.Add(time.Minute))
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	ls := lines(&out)
	if len(ls) != 5 { // 3 requests, the cooldown, the service line
		t.Fatalf("%d lines, want 5:\n%s", len(ls), out.String())
	}
	l, m := checkEMF(t, ls[0])
	d := l.AWS.CloudWatchMetrics[0]
	if d.Namespace != "Test" || len(d.Dimensions) != 3 || l.AWS.Timestamp != t0.UnixMilli() {
		t.Errorf("first line: %s", ls[0])
	}
	want := map[string]any{
		metrics.TotalRequests: 1.0, metrics.FailedRequests: 0.0, metrics.Responses5xx: 0.0, metrics.Latency: 120.0,
		metrics.TimeToFirstToken: 25.0, metrics.InputTokens: 10.0, metrics.OutputTokens: 5.0, metrics.Spend: 0.0015,
		metrics.DeploymentState: 0.0, metrics.FallbacksOK: 1.0, "model_group": "gpt-4o", "deployment": "d1",
		"requested_model": "fast", "api_key_alias": `alias "q"`, "team": "t1", "status_code": 200.0, "call_id": "c-1",
		"fallback_model": "gpt-4o",
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	l, m = checkEMF(t, ls[1])
	if len(l.AWS.CloudWatchMetrics[0].Dimensions) != 1 || m["requested_model"] != "unknown" || m[metrics.FailedRequests] != 1.0 {
		t.Errorf("refused line: %s", ls[1])
	}
	l, m = checkEMF(t, ls[2])
	if len(l.AWS.CloudWatchMetrics[0].Dimensions) != 2 || m[metrics.RateLimited] != 1.0 || m["scope"] != "end_user" {
		t.Errorf("rate-limited line: %s", ls[2])
	}
	_, m = checkEMF(t, ls[3])
	if m[metrics.CooledDown] != 1.0 || m[metrics.DeploymentState] != 2.0 || m["exception_status"] != "429" {
		t.Errorf("cooldown line: %s", ls[3])
	}
	l, m = checkEMF(t, ls[4])
	if len(l.AWS.CloudWatchMetrics[0].Dimensions) != 1 || m[metrics.StoreErrors] != 1.0 || m[metrics.FailOpen] != 1.0 || m["store_errors_dynamodb"] != 1.0 {
		t.Errorf("service line: %s", ls[4])
	}

	// The deployment cools: the next request on it says so; the service
	// line comes only when a service-wide counter changed again.
	out.Reset()
	r.Observe(success())
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	ls = lines(&out)
	if len(ls) != 1 {
		t.Fatalf("%d lines, want 1:\n%s", len(ls), out.String())
	}
	if _, m = checkEMF(t, ls[0]); m[metrics.DeploymentState] != 2.0 {
		t.Errorf("state of a cooling deployment = %v, want 2", m[metrics.DeploymentState])
	}
	out.Reset()
	if err := r.Flush(); err != nil || out.Len() != 0 {
		t.Errorf("empty flush wrote %q (%v)", out.String(), err)
	}
}

func TestEMFStringEscapes(t *testing.T) {
	var out bytes.Buffer
	r := newRegistry(&out)
	q := success()
	q.KeyAlias = "tab\tnl\nquote\"back\\ctl\x01bad\xffé"
	r.Observe(q)
	_ = r.Flush()
	_, m := checkEMF(t, lines(&out)[0])
	if m["api_key_alias"] != "tab\tnl\nquote\"back\\ctl\x01bad\uFFFDé" {
		t.Errorf("alias = %q", m["api_key_alias"])
	}
}

func TestNilRegistry(t *testing.T) {
	var r *metrics.Registry
	r.Register([]string{"x"}, nil)
	r.Observe(success())
	r.FailOpen()
	r.StoreError(metrics.StoreSQS)
	r.SpendFallbackEvents(metrics.PathLog, 1)
	r.CooldownStarted("g", "d", 500, t0)
	if err := r.Flush(); err != nil || r.EMF() {
		t.Fatal("nil registry")
	}
	var b bytes.Buffer
	if err := r.WritePrometheus(&b); err != nil || b.Len() != 0 {
		t.Fatal("nil registry rendered")
	}
}

func TestConcurrent(t *testing.T) {
	var out bytes.Buffer
	r := newRegistry(&out)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				q := success()
				q.KeyAlias = fmt.Sprintf("k%d", (g*i)%7)
				r.Observe(q)
				if i%50 == 0 {
					var b bytes.Buffer
					_ = r.WritePrometheus(&b)
					r.CooldownStarted("gpt-4o", "d1", 500, t0)
				}
			}
		}()
	}
	wg.Wait()
	_ = r.Flush()
	_, s, _ := render(t, r)
	total := 0.0
	for _, x := range s {
		if x.Name == metrics.TotalRequests {
			total += x.Value
		}
	}
	if total != 1600 {
		t.Errorf("total = %v, want 1600", total)
	}
	if n := len(lines(&out)); n != 1600+32 {
		t.Errorf("%d EMF lines, want %d", n, 1600+32)
	}
}

func BenchmarkObserve(b *testing.B) {
	for _, emf := range []bool{false, true} {
		b.Run(fmt.Sprintf("emf=%v", emf), func(b *testing.B) {
			var out bytes.Buffer
			o := metrics.Options{Prometheus: true}
			if emf {
				o.EMF = &out
			}
			r := metrics.New(o)
			r.Register([]string{"fast"}, nil)
			q := success()
			b.ReportAllocs()
			for b.Loop() {
				r.Observe(q)
				if emf {
					out.Reset()
					_ = r.Flush()
				}
			}
		})
	}
}
