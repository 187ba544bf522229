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
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
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
	metrics.FailOpen, metrics.StoreErrors, metrics.SpendFallback,
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

// transformed is one run of samtransform.py: the CloudFormation template and
// the parameter values it was given, defaults filled in.
type transformed struct {
	tpl    map[string]any
	params map[string]string
}

var (
	samPythonOnce sync.Once
	samPython     string
	samPythonErr  string
)

// requireSAMTranslator returns a python3 that imports samtranslator, or
// fails (skips under -short) saying how to install it.
func requireSAMTranslator(t *testing.T) string {
	t.Helper()
	samPythonOnce.Do(func() {
		p, err := exec.LookPath("python3")
		if err != nil {
			samPythonErr = "the template tests need python3 with aws-sam-translator (" + pipInstall + ")"
			return
		}
		if out, err := exec.Command(p, "-c", "import samtranslator").CombinedOutput(); err != nil {
			samPythonErr = fmt.Sprintf("the template tests need aws-sam-translator for %s: %s\ninstall it with: %s", p, strings.TrimSpace(string(out)), pipInstall)
			return
		}
		samPython = p
	})
	if samPythonErr != "" {
		if testing.Short() {
			t.Skip(samPythonErr)
		}
		t.Fatal(samPythonErr)
	}
	return samPython
}

var (
	transformMu    sync.Mutex
	transformCache = map[string]transformed{}
)

// transform runs test/stack/samtransform.py on template.yaml with params, as
// `sam deploy --parameter-overrides` would (placeholder code locations),
// once per set of parameters. Callers must not modify the result.
func transform(t *testing.T, params map[string]string) transformed {
	t.Helper()
	key := fmt.Sprint(params)
	transformMu.Lock()
	defer transformMu.Unlock()
	if tr, ok := transformCache[key]; ok {
		return tr
	}
	tr := runTransform(t, params)
	transformCache[key] = tr
	return tr
}

func runTransform(t *testing.T, params map[string]string) transformed {
	t.Helper()
	py := requireSAMTranslator(t)
	root := repoRoot(t)
	args := []string{filepath.Join(root, "test", "stack", "samtransform.py"), filepath.Join(root, "template.yaml")}
	for _, fn := range samFunctions(t) {
		args = append(args, "--code", fn+"=s3://bucket/"+fn+".zip")
	}
	for _, k := range sortedKeys(params) {
		args = append(args, "--param", k+"="+params[k])
	}
	cmd := exec.Command(py, args...)
	cmd.Dir = root
	cmd.Env = hostEnv("AWS_DEFAULT_REGION=" + region)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("aws-sam-translator %v: %v\n%s", params, err, stderr.String())
	}
	tr := transformed{params: map[string]string{}}
	if err := json.Unmarshal(out, &tr.tpl); err != nil {
		t.Fatalf("aws-sam-translator output: %v", err)
	}
	for name, p := range mapAt(tr.tpl, "Parameters") {
		tr.params[name] = fmt.Sprint(at(p, "Default"))
		if at(p, "Default") == nil {
			tr.params[name] = ""
		}
	}
	for k, v := range params {
		if _, ok := mapAt(tr.tpl, "Parameters")[k]; !ok {
			t.Fatalf("parameter %s: the template has no such parameter", k)
		}
		tr.params[k] = v
	}
	return tr
}

// param is a parameter's value as a Ref yields it: a list for a
// CommaDelimitedList, else a string.
func (tr transformed) param(t *testing.T, name string) any {
	t.Helper()
	v, ok := tr.params[name]
	if !ok {
		t.Fatalf("Ref %s: no such parameter", name)
	}
	if str(at(tr.tpl, "Parameters", name, "Type")) == "CommaDelimitedList" {
		var l []any
		for _, s := range strings.Split(v, ",") {
			l = append(l, strings.TrimSpace(s))
		}
		return l
	}
	return v
}

// condition evaluates a condition function as CloudFormation does (the
// functions conditions may use: Fn::Equals, Fn::Not, Fn::And, Fn::Or,
// Condition, with Ref to parameters and Fn::Join inside).
func (tr transformed) condition(t *testing.T, v any) bool {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		t.Fatalf("condition %v: want one condition function", v)
	}
	for fn, arg := range m {
		l, _ := arg.([]any)
		switch fn {
		case "Fn::Equals":
			if len(l) != 2 {
				t.Fatalf("Fn::Equals %v: want two values", arg)
			}
			a, b := tr.value(t, l[0]), tr.value(t, l[1])
			return fmt.Sprint(a) == fmt.Sprint(b)
		case "Fn::Not":
			if len(l) != 1 {
				t.Fatalf("Fn::Not %v: want one condition", arg)
			}
			return !tr.condition(t, l[0])
		case "Fn::And", "Fn::Or":
			and := fn == "Fn::And"
			for _, c := range l {
				if tr.condition(t, c) != and {
					return !and
				}
			}
			return and
		case "Condition":
			return tr.named(t, str(arg))
		}
		t.Fatalf("condition function %s: teach condition (monitoring_test.go)", fn)
	}
	return false
}

// named evaluates the template's condition name.
func (tr transformed) named(t *testing.T, name string) bool {
	t.Helper()
	c := at(tr.tpl, "Conditions", name)
	if c == nil {
		t.Fatalf("condition %s is not declared", name)
	}
	return tr.condition(t, c)
}

// value resolves what a condition compares: Ref to a parameter, Fn::Join,
// literals.
func (tr transformed) value(t *testing.T, v any) any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	if r, ok := m["Ref"]; ok {
		return tr.param(t, str(r))
	}
	if j, ok := m["Fn::Join"].([]any); ok && len(j) == 2 {
		list, _ := tr.value(t, j[1]).([]any)
		parts := make([]string, len(list))
		for i, e := range list {
			parts[i] = fmt.Sprint(tr.value(t, e))
		}
		return strings.Join(parts, str(j[0]))
	}
	t.Fatalf("value %v: teach value (monitoring_test.go)", v)
	return nil
}

// applyConditions returns v with every Fn::If decided, AWS::NoValue
// dropping its property or list item, and Ref to parameters replaced by
// their values: a resource's properties as CloudFormation hands them to the
// service (Ref and GetAtt of resources stay as they are).
func (tr transformed) applyConditions(t *testing.T, v any) (any, bool) {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		if f, ok := x["Fn::If"].([]any); ok && len(x) == 1 {
			if len(f) != 3 {
				t.Fatalf("Fn::If %v: want [condition, then, else]", f)
			}
			if tr.named(t, str(f[0])) {
				return tr.applyConditions(t, f[1])
			}
			return tr.applyConditions(t, f[2])
		}
		if r, ok := x["Ref"]; ok && len(x) == 1 {
			if str(r) == "AWS::NoValue" {
				return nil, false
			}
			if _, isParam := tr.params[str(r)]; isParam {
				return tr.param(t, str(r)), true
			}
			return x, true
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			if r, keep := tr.applyConditions(t, e); keep {
				out[k] = r
			}
		}
		return out, true
	case []any:
		out := make([]any, 0, len(x))
		for _, e := range x {
			if r, keep := tr.applyConditions(t, e); keep {
				out = append(out, r)
			}
		}
		return out, true
	}
	return v, true
}

// resources returns the logical ids of the resources of a type, sorted.
func (tr transformed) resources(typ string) []string {
	var out []string
	for _, id := range sortedKeys(mapAt(tr.tpl, "Resources")) {
		if str(at(tr.tpl, "Resources", id, "Type")) == typ {
			out = append(out, id)
		}
	}
	return out
}

// props returns a resource's properties with the conditions applied.
func (tr transformed) props(t *testing.T, id string) map[string]any {
	t.Helper()
	p, _ := tr.applyConditions(t, at(tr.tpl, "Resources", id, "Properties"))
	m, _ := p.(map[string]any)
	return m
}

// gatewayURL returns the logical id of the gateway's function URL.
func (tr transformed) gatewayURL(t *testing.T) string {
	t.Helper()
	for _, id := range tr.resources("AWS::Lambda::Url") {
		if str(at(tr.tpl, "Resources", id, "Properties", "TargetFunctionArn", "Ref")) == "GatewayFunction" {
			return id
		}
	}
	t.Fatal("no function URL targets GatewayFunction")
	return ""
}

func getAtt(v any) (string, string) {
	l, _ := at(v, "Fn::GetAtt").([]any)
	if len(l) != 2 {
		return "", ""
	}
	return str(l[0]), str(l[1])
}

func stringsOf(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, e := range l {
		out = append(out, str(e))
	}
	return out
}

// goLiterals returns the string literals of the non-test Go files of a
// repository directory that match re's first group.
func goLiterals(t *testing.T, dir string, re *regexp.Regexp) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot(t), dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in %s: %v", dir, err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			seen[m[1]] = true
		}
	}
	return sortedKeys(seen)
}

func TestTemplateCORS(t *testing.T) {
	t.Run("no origins: no CORS configuration", func(t *testing.T) {
		tr := transform(t, nil)
		for _, id := range tr.resources("AWS::Lambda::Url") {
			if c, ok := tr.props(t, id)["Cors"]; ok {
				t.Errorf("%s has Cors %v without CorsAllowOrigins", id, c)
			}
		}
		if at(tr.tpl, "Resources", tr.gatewayURL(t), "Properties", "Cors") == nil {
			t.Error("the gateway URL has no Cors setting at all: want one decided by the CorsAllowOrigins condition")
		}
	})

	origins := []string{"https://app.example.com", "http://localhost:5173"}
	tr := transform(t, map[string]string{"CorsAllowOrigins": strings.Join(origins, ",")})
	gw := tr.gatewayURL(t)
	cors, ok := tr.props(t, gw)["Cors"].(map[string]any)
	if !ok {
		t.Fatalf("%s: no Cors with CorsAllowOrigins set: %v", gw, tr.props(t, gw))
	}
	t.Run("origins", func(t *testing.T) {
		if got := stringsOf(cors["AllowOrigins"]); !slices.Equal(got, origins) {
			t.Errorf("AllowOrigins = %v, want %v", got, origins)
		}
		if cors["AllowCredentials"] == true {
			t.Error("AllowCredentials: the gateway takes Bearer keys, never cookies")
		}
		for _, id := range tr.resources("AWS::Lambda::Url") {
			if _, ok := tr.props(t, id)["Cors"]; ok && id != gw {
				t.Errorf("%s has Cors: only the gateway's URL is opened to browsers", id)
			}
		}
	})
	t.Run("methods", func(t *testing.T) {
		got := stringsOf(cors["AllowMethods"])
		for _, m := range []string{"GET", "POST"} { // /v1/models, every completion
			if !slices.Contains(got, m) && !slices.Contains(got, "*") {
				t.Errorf("AllowMethods %v: no %s", got, m)
			}
		}
	})
	t.Run("request headers", func(t *testing.T) {
		got := stringsOf(cors["AllowHeaders"])
		// What the OpenAI JS SDK sends from a browser (dangerouslyAllowBrowser),
		// then every request header the gateway reads.
		want := []string{"authorization", "content-type", "openai-organization", "openai-project",
			"x-stainless-arch", "x-stainless-lang", "x-stainless-os", "x-stainless-package-version",
			"x-stainless-runtime", "x-stainless-runtime-version", "x-stainless-retry-count", "x-stainless-timeout",
			"x-stainless-helper-method"}
		read := goLiterals(t, "shared/gateway", regexp.MustCompile(`Header\.Get\("([A-Za-z0-9-]+)"\)`))
		if len(read) == 0 {
			t.Fatal("found no request header the gateway reads (r.Header.Get): the scan is out of date")
		}
		for _, h := range read {
			want = append(want, strings.ToLower(h))
		}
		for _, h := range want {
			if !slices.Contains(got, h) {
				t.Errorf("AllowHeaders has no %q: a browser's preflight for it fails", h)
			}
		}
		for _, h := range got {
			if h != strings.ToLower(h) {
				t.Errorf("AllowHeaders %q: write header names in lower case, as browsers send them in the preflight", h)
			}
		}
		if len(got) > 100 {
			t.Errorf("AllowHeaders has %d entries; Lambda takes at most 100", len(got))
		}
	})
	t.Run("response headers", func(t *testing.T) {
		got := stringsOf(cors["ExposeHeaders"])
		// Every x-litellm-* header the gateway sets, the Retry-After the SDK
		// honours, and the provider headers passed on under llm_provider-.
		want := []string{"retry-after", "llm_provider-x-request-id"}
		for _, h := range goLiterals(t, "shared/gateway", regexp.MustCompile(`\["(X-Litellm-[A-Za-z-]+)"\]\s*=[^=]`)) {
			want = append(want, strings.ToLower(h))
		}
		if len(want) < 5 {
			t.Fatalf("found %d x-litellm-* headers the gateway sets (header map assignments): the scan is out of date", len(want)-2)
		}
		for _, h := range want {
			if !slices.Contains(got, h) {
				t.Errorf("ExposeHeaders has no %q: a browser app cannot read it", h)
			}
		}
	})
	t.Run("preflight cache", func(t *testing.T) {
		if n, _ := cors["MaxAge"].(float64); n <= 0 || n > 86400 {
			t.Errorf("MaxAge = %v, want 1..86400 s (0 sends a preflight before every request)", cors["MaxAge"])
		}
	})
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

// subVars matches ${Name}, ${Name.Attr} and the literal ${!...} of Fn::Sub.
var subVars = regexp.MustCompile(`\$\{([^}]*)\}`)

// pseudo are the pseudo parameters' values for the substitution.
var pseudo = map[string]string{
	"AWS::Region": region, "AWS::AccountId": "123456789012", "AWS::Partition": "aws",
	"AWS::StackName": "sluice", "AWS::URLSuffix": "amazonaws.com",
}

// dashboard returns the dashboard's body as CloudFormation substitutes it:
// parameters by their values, resources by placeholders naming them. A
// variable that names nothing in the template fails the test.
func (tr transformed) dashboard(t *testing.T) (string, map[string]any) {
	t.Helper()
	ids := tr.resources("AWS::CloudWatch::Dashboard")
	if len(ids) != 1 {
		t.Fatalf("dashboards %v, want one", ids)
	}
	sub := at(tr.tpl, "Resources", ids[0], "Properties", "DashboardBody", "Fn::Sub")
	body, ok := sub.(string)
	if !ok {
		t.Fatalf("DashboardBody = %v, want !Sub of a string", at(tr.tpl, "Resources", ids[0], "Properties", "DashboardBody"))
	}
	body = subVars.ReplaceAllStringFunc(body, func(m string) string {
		name := m[2 : len(m)-1]
		if lit, ok := strings.CutPrefix(name, "!"); ok {
			return "${" + lit + "}"
		}
		if v, ok := pseudo[name]; ok {
			return v
		}
		if _, ok := tr.params[name]; ok {
			return tr.params[name]
		}
		res, attr, _ := strings.Cut(name, ".")
		if at(tr.tpl, "Resources", res) == nil {
			t.Errorf("dashboard: ${%s} names no parameter or resource", name)
			return m
		}
		if attr == "" {
			return "ref-" + res
		}
		return "getatt-" + res + "-" + attr
	})
	var doc map[string]any
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("dashboard body is not JSON once substituted: %v\n%s", err, body)
	}
	return body, doc
}

var (
	searchSchema = regexp.MustCompile(`SEARCH\('\{"?([^",}]+)"?((?:,[a-z_]+)*)\}\s+MetricName="([^"]+)"'`)
	mathIDs      = regexp.MustCompile(`'[^']*'|\b([a-z][A-Za-z0-9_]*)\b`)
)

func TestTemplateDashboard(t *testing.T) {
	// A namespace that is not the default: nothing may say "Sluice" itself.
	const ns = "Acme/LLM-gateway"
	tr := transform(t, map[string]string{"MetricsNamespace": ns})
	_, doc := tr.dashboard(t)
	widgets, _ := doc["widgets"].([]any)
	if len(widgets) == 0 {
		t.Fatal("no widgets")
	}
	functions := map[string]bool{}
	for _, fn := range tr.resources("AWS::Lambda::Function") {
		functions["ref-"+fn] = true
	}
	shown := map[string]bool{}
	alarmsShown := map[string]bool{}
	lambdaShown := map[string]bool{}
	byDeployment := map[string]bool{}
	for i, w := range widgets {
		typ := str(at(w, "type"))
		where := fmt.Sprintf("widget %d (%s %q)", i, typ, str(at(w, "properties", "title")))
		x, _ := at(w, "x").(float64)
		width, _ := at(w, "width").(float64)
		if h, _ := at(w, "height").(float64); width <= 0 || h <= 0 || x < 0 || x+width > 24 {
			t.Errorf("%s: x %v width %v height %v: want a place on the 24-column grid", where, x, width, h)
		}
		switch typ {
		case "text":
			if str(at(w, "properties", "markdown")) == "" {
				t.Errorf("%s: no markdown", where)
			}
			continue
		case "alarm":
			for _, a := range stringsOf(at(w, "properties", "alarms")) {
				alarmsShown[a] = true
			}
			continue
		case "metric":
		default:
			t.Errorf("%s: unexpected widget type", where)
			continue
		}
		if at(w, "properties", "region") != region {
			t.Errorf("%s: region %v, want the stack's", where, at(w, "properties", "region"))
		}
		list, _ := at(w, "properties", "metrics").([]any)
		if len(list) == 0 {
			t.Errorf("%s: no metrics", where)
		}
		ids := map[string]bool{}
		var exprs []string
		for _, e := range list {
			row, _ := e.([]any)
			if len(row) == 0 {
				t.Errorf("%s: empty metric row", where)
				continue
			}
			opts, _ := row[len(row)-1].(map[string]any)
			if id := str(opts["id"]); id != "" {
				if ids[id] {
					t.Errorf("%s: id %s twice", where, id)
				}
				ids[id] = true
			}
			if expr := str(opts["expression"]); expr != "" {
				if len(row) != 1 {
					t.Errorf("%s: expression row %v has more than its options", where, row)
				}
				exprs = append(exprs, expr)
				for _, m := range searchSchema.FindAllStringSubmatch(expr, -1) {
					dims := map[string]string{}
					for _, d := range strings.Split(strings.TrimPrefix(m[2], ","), ",") {
						if d != "" {
							dims[d] = "*"
						}
					}
					if dims["deployment"] != "" {
						byDeployment[m[3]] = true
					}
					checkMetric(t, metricRef{where, m[1], m[3], dims}, ns)
					shown[m[3]] = true
				}
				if strings.Contains(expr, "SEARCH(") && !searchSchema.MatchString(expr) {
					t.Errorf("%s: SEARCH %q: want SEARCH('{\"namespace\",dimension,...} MetricName=\"...\"', stat, period)", where, expr)
				}
				continue
			}
			// [namespace, name, dimension, value, ..., {options}]
			n := len(row)
			if _, ok := row[n-1].(map[string]any); ok {
				n--
			}
			if n < 2 || n%2 != 0 {
				t.Errorf("%s: metric row %v: want namespace, name, then dimension name/value pairs", where, row)
				continue
			}
			m := metricRef{where, str(row[0]), str(row[1]), map[string]string{}}
			for j := 2; j+1 < n; j += 2 {
				m.dims[str(row[j])] = str(row[j+1])
			}
			checkMetric(t, m, ns)
			if fn, ok := m.dims["FunctionName"]; ok {
				if !functions[fn] {
					t.Errorf("%s: FunctionName %q is not one of the stack's functions", where, fn)
				}
				lambdaShown[m.name+" "+fn] = true
			}
			if q, ok := m.dims["QueueName"]; ok && !strings.HasSuffix(q, "-QueueName") {
				t.Errorf("%s: QueueName %q is not a queue of the stack", where, q)
			}
			shown[m.name] = true
		}
		// Metric math reads only ids of the widget.
		for _, e := range exprs {
			if strings.HasPrefix(e, "SEARCH(") {
				continue
			}
			for _, m := range mathIDs.FindAllStringSubmatch(e, -1) {
				if m[1] != "" && !ids[m[1]] {
					t.Errorf("%s: expression %q reads %s, which the widget does not define", where, e, m[1])
				}
			}
		}
	}
	for _, name := range gatewayMetrics {
		if !shown[name] {
			t.Errorf("the dashboard does not show %s", name)
		}
	}
	for _, name := range []string{metrics.DeploymentState, metrics.CooledDown} {
		if !byDeployment[name] {
			t.Errorf("the dashboard does not show %s by deployment (SEARCH over model_group,deployment)", name)
		}
	}
	for _, fn := range sortedKeys(functions) {
		for _, metric := range []string{"Errors", "Throttles", "Duration", "ConcurrentExecutions"} {
			if !lambdaShown[metric+" "+fn] {
				t.Errorf("the dashboard does not show Lambda %s of %s", metric, strings.TrimPrefix(fn, "ref-"))
			}
		}
	}
	for _, id := range tr.resources("AWS::CloudWatch::Alarm") {
		if !alarmsShown["getatt-"+id+"-Arn"] {
			t.Errorf("the alarm widget does not show %s", id)
		}
	}
}

// compare applies an alarm's ComparisonOperator.
func compare(t *testing.T, v float64, op string, threshold float64) bool {
	t.Helper()
	switch op {
	case "GreaterThanThreshold":
		return v > threshold
	case "GreaterThanOrEqualToThreshold":
		return v >= threshold
	case "LessThanThreshold":
		return v < threshold
	case "LessThanOrEqualToThreshold":
		return v <= threshold
	}
	t.Fatalf("ComparisonOperator %q", op)
	return false
}

// evalMath evaluates a CloudWatch metric math expression on one data point
// of each series in env (a series not in env has no data point): numbers,
// + - * /, comparisons (1 or 0), parentheses, IF(c, a, b) and FILL(x, v).
// ok is false when the result has no data point.
func evalMath(expr string, env map[string]float64) (v float64, ok bool, err error) {
	p := &mathParser{toks: mathTokens.FindAllString(expr, -1), env: env}
	if strings.Join(p.toks, "") != strings.Join(strings.Fields(expr), "") {
		return 0, false, fmt.Errorf("unexpected characters")
	}
	r := p.cmp()
	if p.err == nil && p.i != len(p.toks) {
		p.err = fmt.Errorf("unexpected %q", p.toks[p.i])
	}
	return r.v, r.ok, p.err
}

var mathTokens = regexp.MustCompile(`[0-9]+(?:\.[0-9]+)?|[A-Za-z_][A-Za-z0-9_]*|>=|<=|==|!=|[-+*/(),<>]`)

type mathValue struct {
	v  float64
	ok bool
}

type mathParser struct {
	toks []string
	i    int
	env  map[string]float64
	err  error
}

func (p *mathParser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

func (p *mathParser) next() string {
	s := p.peek()
	p.i++
	return s
}

func (p *mathParser) expect(s string) {
	if got := p.next(); got != s && p.err == nil {
		p.err = fmt.Errorf("want %q, got %q", s, got)
	}
}

func both(a, b mathValue, f func(x, y float64) float64) mathValue {
	if !a.ok || !b.ok {
		return mathValue{}
	}
	return mathValue{f(a.v, b.v), true}
}

func b01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func (p *mathParser) cmp() mathValue {
	a := p.add()
	ops := map[string]func(x, y float64) float64{
		">=": func(x, y float64) float64 { return b01(x >= y) },
		"<=": func(x, y float64) float64 { return b01(x <= y) },
		">":  func(x, y float64) float64 { return b01(x > y) },
		"<":  func(x, y float64) float64 { return b01(x < y) },
		"==": func(x, y float64) float64 { return b01(x == y) },
		"!=": func(x, y float64) float64 { return b01(x != y) },
	}
	if f, ok := ops[p.peek()]; ok {
		p.next()
		return both(a, p.add(), f)
	}
	return a
}

func (p *mathParser) add() mathValue {
	a := p.mul()
	for p.peek() == "+" || p.peek() == "-" {
		if p.next() == "+" {
			a = both(a, p.mul(), func(x, y float64) float64 { return x + y })
		} else {
			a = both(a, p.mul(), func(x, y float64) float64 { return x - y })
		}
	}
	return a
}

func (p *mathParser) mul() mathValue {
	a := p.unary()
	for p.peek() == "*" || p.peek() == "/" {
		if p.next() == "*" {
			a = both(a, p.unary(), func(x, y float64) float64 { return x * y })
			continue
		}
		b := p.unary()
		if b.ok && b.v == 0 {
			a = mathValue{} // CloudWatch drops a division by zero's point
			continue
		}
		a = both(a, b, func(x, y float64) float64 { return x / y })
	}
	return a
}

func (p *mathParser) unary() mathValue {
	tok := p.next()
	switch {
	case tok == "(":
		v := p.cmp()
		p.expect(")")
		return v
	case tok == "IF" || tok == "FILL":
		p.expect("(")
		var args []mathValue
		for {
			args = append(args, p.cmp())
			if p.peek() != "," {
				break
			}
			p.next()
		}
		p.expect(")")
		switch {
		case tok == "IF" && len(args) == 3:
			if !args[0].ok {
				return mathValue{}
			}
			if args[0].v != 0 {
				return args[1]
			}
			return args[2]
		case tok == "FILL" && len(args) == 2:
			if args[0].ok {
				return args[0]
			}
			return args[1]
		}
		if p.err == nil {
			p.err = fmt.Errorf("%s with %d arguments", tok, len(args))
		}
		return mathValue{}
	case tok != "" && (tok[0] >= '0' && tok[0] <= '9'):
		var f float64
		if _, err := fmt.Sscan(tok, &f); err != nil && p.err == nil {
			p.err = err
		}
		return mathValue{f, true}
	case tok != "" && tok[0] >= 'a' && tok[0] <= 'z':
		v, ok := p.env[tok]
		return mathValue{v, ok}
	}
	if p.err == nil {
		p.err = fmt.Errorf("unexpected %q (teach evalMath)", tok)
	}
	return mathValue{}
}
