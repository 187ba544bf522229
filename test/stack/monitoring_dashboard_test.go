package stack_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/metrics"
)

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
