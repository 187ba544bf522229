package stack_test

// The template's monitoring and browser access, checked on the template as
// CloudFormation receives it (aws-sam-translator's output) with the stack's
// parameters applied, as CloudFormation applies them: the alarms and the
// dashboard name only metrics the gateway emits (shared/metrics) or AWS
// publishes, the dashboard body is valid JSON once substituted, and the
// gateway's function URL has CORS settings exactly when origins are given.
// Moto cannot create alarms (so neither the dashboard that shows them): the
// whole-stack test takes them out, and this is where they are checked. These
// tests need only python3 with aws-sam-translator, not moto.

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/metrics"
)

// gatewayMetrics are the metric names the gateway emits (EMF in Lambda,
// Prometheus locally): the only ones the alarms and the dashboard may read
// in MetricsNamespace.
var gatewayMetrics = []string{
	metrics.TotalRequests, metrics.FailedRequests, metrics.Responses5xx,
	metrics.Latency, metrics.TimeToFirstToken,
	metrics.InputTokens, metrics.OutputTokens, metrics.Spend,
	metrics.DeploymentState, metrics.CooledDown,
	metrics.FallbacksOK, metrics.FallbacksFailed, metrics.Retries,
	metrics.RateLimited, metrics.BudgetExceeded,
	metrics.FailOpen, metrics.Throttled, metrics.StoreErrors, metrics.SpendFallback,
}

// awsMetrics are the AWS-published metrics the template may read, by
// namespace, with the dimension each is read by.
var awsMetrics = map[string]struct {
	dimension string
	names     []string
}{
	"AWS/Lambda": {"FunctionName", []string{"Errors", "Throttles", "Duration", "ConcurrentExecutions", "Invocations"}},
	"AWS/SQS":    {"QueueName", []string{"ApproximateNumberOfMessagesVisible", "ApproximateAgeOfOldestMessage", "NumberOfMessagesSent"}},
}

// metricRef is one metric the alarms or the dashboard read.
type metricRef struct {
	where, namespace, name string
	dims                   map[string]string
}

// checkMetric checks a metric is one the gateway emits (in its namespace)
// or one AWS publishes, read by its dimension.
func checkMetric(t *testing.T, m metricRef, namespace string) {
	t.Helper()
	if m.namespace == namespace {
		if !slices.Contains(gatewayMetrics, m.name) {
			t.Errorf("%s reads %s/%s, which the gateway does not emit (shared/metrics)", m.where, m.namespace, m.name)
		}
		return
	}
	aws, ok := awsMetrics[m.namespace]
	if !ok {
		t.Errorf("%s reads %s in namespace %q: want MetricsNamespace (%q) or one of AWS/Lambda, AWS/SQS", m.where, m.name, m.namespace, namespace)
		return
	}
	if !slices.Contains(aws.names, m.name) {
		t.Errorf("%s reads %s/%s: not one of %v", m.where, m.namespace, m.name, aws.names)
	}
	if m.dims[aws.dimension] == "" || len(m.dims) != 1 {
		t.Errorf("%s reads %s/%s by %v, want by %s alone", m.where, m.namespace, m.name, m.dims, aws.dimension)
	}
}

func TestTemplateAlarms(t *testing.T) {
	const topic = "arn:aws:sns:us-east-1:123456789012:oncall"
	quiet := transform(t, nil)
	tr := transform(t, map[string]string{"AlarmTopicArn": topic})
	ns := tr.params["MetricsNamespace"]
	if ns == "" {
		t.Fatal("no MetricsNamespace parameter default")
	}
	if env := at(tr.tpl, "Resources", "GatewayFunction", "Properties", "Environment", "Variables", "METRICS_NAMESPACE"); str(at(env, "Ref")) != "MetricsNamespace" {
		t.Errorf("the gateway's METRICS_NAMESPACE = %v, want !Ref MetricsNamespace", env)
	}
	alarms := tr.resources("AWS::CloudWatch::Alarm")
	if len(alarms) == 0 {
		t.Fatal("no alarms")
	}

	// What each alarm reads, its actions, its treatment of missing data.
	reads := map[string][]metricRef{}
	props := map[string]map[string]any{}
	for _, id := range alarms {
		p := tr.props(t, id)
		props[id] = p
		if p["TreatMissingData"] != "notBreaching" {
			t.Errorf("%s: TreatMissingData %v; the metrics have no data when nothing happens, which is no alarm", id, p["TreatMissingData"])
		}
		for _, k := range []string{"AlarmActions", "OKActions"} {
			if got := stringsOf(p[k]); !slices.Equal(got, []string{topic}) {
				t.Errorf("%s: %s = %v with AlarmTopicArn, want [%s]", id, k, got, topic)
			}
			if v, ok := quiet.props(t, id)[k]; ok {
				t.Errorf("%s: %s = %v without AlarmTopicArn, want none", id, k, v)
			}
		}
		namespace := func(v any) string {
			if _, ok := v.(string); !ok {
				t.Errorf("%s: namespace %v is not a parameter or a literal", id, v)
			}
			return str(v)
		}
		dims := func(l []any) map[string]string {
			out := map[string]string{}
			for _, d := range l {
				out[str(at(d, "Name"))] = fmt.Sprint(at(d, "Value"))
			}
			return out
		}
		if name := str(p["MetricName"]); name != "" {
			d, _ := p["Dimensions"].([]any)
			reads[id] = append(reads[id], metricRef{id, namespace(p["Namespace"]), name, dims(d)})
		}
		queries, _ := p["Metrics"].([]any)
		for _, q := range queries {
			if m := at(q, "MetricStat", "Metric"); m != nil {
				d, _ := at(m, "Dimensions").([]any)
				reads[id] = append(reads[id], metricRef{id + "." + str(at(q, "Id")), namespace(at(m, "Namespace")), str(at(m, "MetricName")), dims(d)})
			}
		}
		if len(reads[id]) == 0 {
			t.Errorf("%s reads no metric", id)
		}
		for _, m := range reads[id] {
			checkMetric(t, m, ns)
		}
	}

	find := func(pred func(id string, m metricRef) bool) []string {
		var out []string
		for _, id := range alarms {
			for _, m := range reads[id] {
				if pred(id, m) {
					out = append(out, id)
					break
				}
			}
		}
		return out
	}
	t.Run("5xx rate", func(t *testing.T) {
		ids := find(func(_ string, m metricRef) bool { return m.name == metrics.Responses5xx })
		if len(ids) != 1 {
			t.Fatalf("alarms on %s: %v, want one", metrics.Responses5xx, ids)
		}
		p := props[ids[0]]
		var names, math []string
		queries, _ := p["Metrics"].([]any)
		for _, q := range queries {
			if e := str(at(q, "Expression")); e != "" {
				if at(q, "ReturnData") != true {
					t.Errorf("expression %q does not return data", e)
				}
				math = append(math, e)
				continue
			}
			names = append(names, str(at(q, "MetricStat", "Metric", "MetricName")))
			if s := at(q, "MetricStat", "Stat"); s != "Sum" {
				t.Errorf("%s read by %v, want Sum", at(q, "MetricStat", "Metric", "MetricName"), s)
			}
			if len(mapAt(q, "MetricStat", "Metric")) != 2 || at(q, "MetricStat", "Metric", "Dimensions") != nil {
				t.Errorf("%v: want the dimensionless series (every request line declares it)", at(q, "MetricStat", "Metric"))
			}
		}
		sort.Strings(names)
		if want := []string{metrics.TotalRequests, metrics.Responses5xx}; !slices.Equal(names, want) {
			t.Errorf("reads %v, want %v", names, want)
		}
		if len(math) != 1 || !strings.Contains(math[0], "/") {
			t.Errorf("expressions %v: want one rate, 5xx / requests", math)
		}
		if th, _ := p["Threshold"].(float64); th <= 0 || th >= 1 {
			t.Errorf("Threshold %v: want a share of requests, in (0, 1)", p["Threshold"])
		}
		if len(math) != 1 {
			return
		}
		// The alarm's verdict on one 5-minute period, its expression
		// evaluated as CloudWatch evaluates it (a series without a data
		// point is missing; missing data is not breaching).
		idOf := map[string]string{}
		for _, q := range queries {
			if n := str(at(q, "MetricStat", "Metric", "MetricName")); n != "" {
				idOf[n] = str(at(q, "Id"))
			}
		}
		fires := func(errors, requests float64) bool {
			env := map[string]float64{}
			if errors >= 0 {
				env[idOf[metrics.Responses5xx]] = errors
			}
			if requests >= 0 {
				env[idOf[metrics.TotalRequests]] = requests
			}
			v, ok, err := evalMath(math[0], env)
			if err != nil {
				t.Fatalf("expression %q: %v", math[0], err)
			}
			if !ok {
				return p["TreatMissingData"] == "breaching"
			}
			return compare(t, v, str(p["ComparisonOperator"]), p["Threshold"].(float64))
		}
		for _, c := range []struct {
			name             string
			errors, requests float64 // -1: no data point
			want             bool
		}{
			{"no traffic", -1, -1, false},
			{"one failure out of two requests at night", 1, 2, false},
			{"traffic without a 5xx data point", -1, 500, false},
			{"one failure in a hundred", 1, 100, false},
			{"a fifth failing", 100, 500, true},
			{"everything failing at modest traffic", 40, 40, true},
		} {
			if got := fires(c.errors, c.requests); got != c.want {
				t.Errorf("%s (%v 5xx of %v requests, -1: no data): alarm %v, want %v", c.name, c.errors, c.requests, got, c.want)
			}
		}
	})
	t.Run("dead-letter queue", func(t *testing.T) {
		var dlqs []string
		for _, q := range tr.resources("AWS::SQS::Queue") {
			if d, _ := getAtt(at(tr.tpl, "Resources", q, "Properties", "RedrivePolicy", "deadLetterTargetArn")); d != "" {
				dlqs = append(dlqs, d)
			}
		}
		if len(dlqs) == 0 {
			t.Fatal("no queue has a dead-letter queue")
		}
		for _, dlq := range dlqs {
			ids := find(func(id string, m metricRef) bool {
				return m.name == "ApproximateNumberOfMessagesVisible" && m.dims["QueueName"] == fmt.Sprint(map[string]any{"Fn::GetAtt": []any{dlq, "QueueName"}})
			})
			if len(ids) != 1 {
				t.Errorf("alarms on %s's depth: %v, want one", dlq, ids)
				continue
			}
			p := props[ids[0]]
			if p["ComparisonOperator"] != "GreaterThanThreshold" || p["Threshold"] != 0.0 {
				t.Errorf("%s: %v %v, want GreaterThanThreshold 0 (one message is one unrecorded spend event)", ids[0], p["ComparisonOperator"], p["Threshold"])
			}
		}
	})
	t.Run("each function's errors and throttles", func(t *testing.T) {
		fns := tr.resources("AWS::Lambda::Function")
		if len(fns) == 0 {
			t.Fatal("no functions")
		}
		for _, fn := range fns {
			for _, metric := range []string{"Errors", "Throttles"} {
				ids := find(func(_ string, m metricRef) bool {
					return m.namespace == "AWS/Lambda" && m.name == metric && m.dims["FunctionName"] == fmt.Sprint(map[string]any{"Ref": fn})
				})
				if len(ids) != 1 {
					t.Errorf("alarms on %s's %s: %v, want one", fn, metric, ids)
				}
			}
		}
	})
	t.Run("throttled admission writes", func(t *testing.T) {
		ids := find(func(_ string, m metricRef) bool { return m.name == metrics.Throttled && m.namespace == ns })
		if len(ids) != 1 {
			t.Fatalf("alarms on %s: %v, want one", metrics.Throttled, ids)
		}
		if p := props[ids[0]]; p["Statistic"] != "Sum" || p["ComparisonOperator"] != "GreaterThanThreshold" {
			t.Errorf("%s: %v %v, want a Sum above a threshold", ids[0], p["Statistic"], p["ComparisonOperator"])
		}
	})
	t.Run("fail-open admissions", func(t *testing.T) {
		ids := find(func(_ string, m metricRef) bool { return m.name == metrics.FailOpen && m.namespace == ns })
		if len(ids) != 1 {
			t.Fatalf("alarms on %s: %v, want one", metrics.FailOpen, ids)
		}
		if p := props[ids[0]]; p["ComparisonOperator"] != "GreaterThanThreshold" || p["Threshold"] != 0.0 || p["Statistic"] != "Sum" {
			t.Errorf("%s: %v %v %v, want Sum GreaterThanThreshold 0 (limits are not enforced while it happens)", ids[0], p["Statistic"], p["ComparisonOperator"], p["Threshold"])
		}
	})
}
