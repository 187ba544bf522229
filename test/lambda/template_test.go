package lambda_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/awslabs/goformation/v7"
	"github.com/awslabs/goformation/v7/cloudformation"
	"go.yaml.in/yaml/v3"

	"github.com/sluice-gw/sluice/infra/tables"
	"github.com/sluice-gw/sluice/shared/app/appenv"
)

// samTemplate is template.yaml read twice: by goformation, typed (it resolves
// Ref only against parameter defaults and drops some SAM properties, such as
// an SQS event's FunctionResponseTypes), and as plain YAML data with every
// intrinsic kept as data ({"Ref": ...}, {"Fn::GetAtt": [...]}, {"Fn::Sub": ...}).
type samTemplate struct {
	typed *cloudformation.Template
	raw   map[string]any
}

func loadTemplate(t *testing.T) *samTemplate {
	t.Helper()
	path := filepath.Join(repoRoot(t), "template.yaml")
	typed, err := goformation.Open(path)
	if err != nil {
		t.Fatalf("goformation: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("yaml: %v", err)
	}
	raw, ok := yamlData(&doc).(map[string]any)
	if !ok {
		t.Fatal("template.yaml is not a mapping")
	}
	return &samTemplate{typed: typed, raw: raw}
}

// yamlData converts a YAML node to plain data, turning CloudFormation's
// short-form intrinsics (!Ref, !GetAtt, !Sub, ...) into their long form.
func yamlData(n *yaml.Node) any {
	var v any
	switch n.Kind {
	case yaml.DocumentNode:
		return yamlData(n.Content[0])
	case yaml.AliasNode:
		return yamlData(n.Alias)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			m[n.Content[i].Value] = yamlData(n.Content[i+1])
		}
		v = m
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			s = append(s, yamlData(c))
		}
		v = s
	case yaml.ScalarNode:
		if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
			v = n.Value
		} else if err := n.Decode(&v); err != nil {
			v = n.Value
		}
	}
	if !strings.HasPrefix(n.Tag, "!") || strings.HasPrefix(n.Tag, "!!") {
		return v
	}
	switch fn := strings.TrimPrefix(n.Tag, "!"); fn {
	case "Ref", "Condition":
		return map[string]any{fn: v}
	case "GetAtt":
		if s, ok := v.(string); ok {
			res, attr, _ := strings.Cut(s, ".")
			v = []any{res, attr}
		}
		return map[string]any{"Fn::GetAtt": v}
	default:
		return map[string]any{"Fn::" + fn: v}
	}
}

// at walks data along keys; nil if any step is missing.
func at(data any, keys ...string) any {
	for _, k := range keys {
		m, ok := data.(map[string]any)
		if !ok {
			return nil
		}
		data = m[k]
	}
	return data
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func (tpl *samTemplate) resources() map[string]any {
	m, _ := tpl.raw["Resources"].(map[string]any)
	return m
}

func (tpl *samTemplate) resourceType(id string) string {
	return str(at(tpl.resources(), id, "Type"))
}

// functions returns the logical ids of the SAM functions, sorted.
func (tpl *samTemplate) functions() []string {
	var ids []string
	for id := range tpl.typed.GetAllServerlessFunctionResources() {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// prop is a function property, falling back to Globals.Function.
func (tpl *samTemplate) prop(fn, name string) any {
	if v := at(tpl.resources(), fn, "Properties", name); v != nil {
		return v
	}
	return at(tpl.raw, "Globals", "Function", name)
}

// refTarget returns the resource a {"Ref": X} names, or "".
func refTarget(v any) string { return str(at(v, "Ref")) }

// getAttTarget returns the resource and attribute of {"Fn::GetAtt": [R, A]}.
func getAttTarget(v any) (string, string) {
	s, _ := at(v, "Fn::GetAtt").([]any)
	if len(s) != 2 {
		return "", ""
	}
	return str(s[0]), str(s[1])
}

// makeTargets reads the Makefile's build-<LogicalId> targets and the
// ./functions/<name> package each builds.
func makeTargets(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot(t), "Makefile"))
	if err != nil {
		t.Fatalf("Makefile: %v", err)
	}
	defer f.Close()
	target := regexp.MustCompile(`^(build-[A-Za-z0-9]+):`)
	pkg := regexp.MustCompile(`\./functions/([a-z0-9_-]+)`)
	out := map[string]string{}
	cur := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if m := target.FindStringSubmatch(line); m != nil {
			cur = m[1]
			out[cur] = ""
			continue
		}
		if !strings.HasPrefix(line, "\t") {
			cur = ""
			continue
		}
		if m := pkg.FindStringSubmatch(line); cur != "" && m != nil && strings.Contains(line, "$(ARTIFACTS_DIR)/bootstrap") {
			out[cur] = m[1]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// functionPackages maps each SAM function to the functions/<name> its build
// target compiles.
func functionPackages(t *testing.T, tpl *samTemplate) map[string]string {
	t.Helper()
	targets := makeTargets(t)
	out := map[string]string{}
	for _, fn := range tpl.functions() {
		out[fn] = targets["build-"+fn]
	}
	return out
}

func TestTemplateBuilds(t *testing.T) {
	tpl := loadTemplate(t)
	targets := makeTargets(t)
	if len(tpl.functions()) == 0 {
		t.Fatal("no functions in template.yaml")
	}
	for _, fn := range tpl.functions() {
		t.Run(fn, func(t *testing.T) {
			if bm := str(at(tpl.resources(), fn, "Metadata", "BuildMethod")); bm != "makefile" {
				t.Errorf("Metadata.BuildMethod = %q, want makefile", bm)
			}
			pkg, ok := targets["build-"+fn]
			if !ok {
				t.Fatalf("Makefile has no target build-%s", fn)
			}
			if pkg == "" {
				t.Fatalf("Makefile target build-%s does not build ./functions/<name> into $(ARTIFACTS_DIR)/bootstrap", fn)
			}
			if _, err := os.Stat(filepath.Join(repoRoot(t), "functions", pkg, "main.go")); err != nil {
				t.Errorf("build-%s builds functions/%s: %v", fn, pkg, err)
			}
			if rt := str(tpl.prop(fn, "Runtime")); rt != "provided.al2023" {
				t.Errorf("Runtime = %q, want provided.al2023", rt)
			}
			if arch, _ := tpl.prop(fn, "Architectures").([]any); len(arch) != 1 || arch[0] != "arm64" {
				t.Errorf("Architectures = %v, want [arm64]", arch)
			}
			if h := str(tpl.prop(fn, "Handler")); h != "bootstrap" {
				t.Errorf("Handler = %q, want bootstrap", h)
			}
		})
	}
}

// resourceEnvVars are the environment variables that name a deployed
// resource, with the resource type each must refer to.
func resourceEnvVars() map[string]string {
	m := map[string]string{tables.SpendQueueEnvVar: "AWS::SQS::Queue"}
	for _, tb := range tables.All() {
		m[tb.EnvVar] = "AWS::DynamoDB::Table"
	}
	return m
}

func TestTemplateEnvironmentRefersToDeclaredResources(t *testing.T) {
	tpl := loadTemplate(t)
	kinds := resourceEnvVars()
	for _, fn := range tpl.functions() {
		t.Run(fn, func(t *testing.T) {
			vars, _ := at(tpl.resources(), fn, "Properties", "Environment", "Variables").(map[string]any)
			for name, v := range vars {
				want, isResource := kinds[name]
				if !isResource && (strings.HasSuffix(name, "_TABLE") || strings.HasSuffix(name, "_QUEUE_URL")) {
					t.Errorf("%s names a table or queue that infra/tables does not know", name)
					continue
				}
				if isResource {
					target := refTarget(v)
					if target == "" {
						t.Errorf("%s = %v: want !Ref to a declared resource", name, v)
					} else if got := tpl.resourceType(target); got != want {
						t.Errorf("%s = !Ref %s, a %q; want a declared %s", name, target, got, want)
					}
				}
				if s, ok := v.(string); ok && (strings.Contains(s, "sk-") || strings.Contains(strings.ToLower(name), "master_key") && name != "GATEWAY_MASTER_KEY_PARAMETER") {
					t.Errorf("%s looks like a secret in plain text", name)
				}
			}
			if v, ok := vars["GATEWAY_MASTER_KEY_PARAMETER"]; ok {
				sub := str(at(v, "Fn::Sub"))
				if sub != "/${MasterKeyParameterName}" || at(tpl.raw, "Parameters", "MasterKeyParameterName") == nil {
					t.Errorf("GATEWAY_MASTER_KEY_PARAMETER = %v: want !Sub \"/${MasterKeyParameterName}\" on a declared parameter", v)
				}
			}
		})
	}
}

// envVarsReadBy returns the resource environment variables functions/<pkg>
// reads: every name its settings (appenv.Read, run as in Lambda) look up,
// and any name written as a literal in its own sources.
func envVarsReadBy(t *testing.T, pkg string) []string {
	t.Helper()
	candidates := resourceEnvVars()
	candidates["GATEWAY_MASTER_KEY_PARAMETER"] = ""
	seen := map[string]bool{}
	lookup := func(name string) (string, bool) {
		if _, ok := candidates[name]; ok {
			seen[name] = true
		}
		if name == "AWS_LAMBDA_RUNTIME_API" {
			return "127.0.0.1:9001", true
		}
		return "", false
	}
	if _, err := appenv.Read(appenv.Function(pkg), lookup, []string{pkg}); err != nil {
		t.Fatalf("appenv.Read(%s) in Lambda with no other variable: %v", pkg, err)
	}
	files, _ := filepath.Glob(filepath.Join(repoRoot(t), "functions", pkg, "*.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for name := range candidates {
			if strings.Contains(string(b), `"`+name+`"`) {
				seen[name] = true
			}
		}
	}
	var out []string
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// policy is one SAM policy template use, or one statement of an inline
// policy: its name ("Statement:<service>" for a statement whose actions
// are all of one service) and the resource it is scoped to.
type policy struct {
	name, target string
	actions      []string // inline statements only
}

func (tpl *samTemplate) policies(fn string) []policy {
	var out []policy
	list, _ := at(tpl.resources(), fn, "Properties", "Policies").([]any)
	for _, p := range list {
		m, ok := p.(map[string]any)
		if !ok {
			out = append(out, policy{name: fmt.Sprint(p)})
			continue
		}
		if stmts, ok := m["Statement"].([]any); ok {
			out = append(out, statements(stmts)...)
			continue
		}
		for name, args := range m {
			var target string
			for _, key := range []string{"TableName", "QueueName", "ParameterName"} {
				if v := at(args, key); v != nil {
					if r := refTarget(v); r != "" {
						target = r
					} else if r, attr := getAttTarget(v); r != "" && attr == "QueueName" {
						target = r
					}
				}
			}
			out = append(out, policy{name: name, target: target})
		}
	}
	return out
}

// statements reads inline policy statements: each Allow statement on one
// resource (!GetAtt X.Arn) becomes a policy named by its actions' service.
func statements(stmts []any) []policy {
	var out []policy
	for _, st := range stmts {
		var actions []string
		switch a := at(st, "Action").(type) {
		case string:
			actions = []string{a}
		case []any:
			for _, x := range a {
				actions = append(actions, str(x))
			}
		}
		service := ""
		for _, a := range actions {
			svc, _, _ := strings.Cut(a, ":")
			if service == "" {
				service = svc
			} else if service != svc {
				service = "mixed"
			}
		}
		if str(at(st, "Effect")) != "Allow" || len(actions) == 0 || strings.Contains(strings.Join(actions, ","), "*") {
			service = "broad"
		}
		target, attr := getAttTarget(at(st, "Resource"))
		if attr != "Arn" {
			target = ""
		}
		// Resources from a parameter, with a default when it is empty:
		// !If [Cond, [defaults...], !Ref Param].
		if cond, _ := at(st, "Resource", "Fn::If").([]any); len(cond) == 3 {
			target = refTarget(cond[2])
		}
		out = append(out, policy{name: "Statement:" + service, target: target, actions: actions})
	}
	return out
}

func hasPolicy(ps []policy, target string, names ...string) bool {
	return slices.ContainsFunc(ps, func(p policy) bool { return p.target == target && slices.Contains(names, p.name) })
}

func TestTemplatePoliciesCoverWhatEachFunctionUses(t *testing.T) {
	tpl := loadTemplate(t)
	pkgs := functionPackages(t, tpl)
	dynamo := []string{"DynamoDBCrudPolicy", "DynamoDBReadPolicy", "DynamoDBWritePolicy", "Statement:dynamodb"}
	for _, fn := range tpl.functions() {
		t.Run(fn, func(t *testing.T) {
			ps := tpl.policies(fn)
			vars, _ := at(tpl.resources(), fn, "Properties", "Environment", "Variables").(map[string]any)
			// The code reads no resource the template does not give it.
			for _, name := range envVarsReadBy(t, pkgs[fn]) {
				if _, ok := vars[name]; !ok {
					t.Errorf("functions/%s reads %s, which the template does not set", pkgs[fn], name)
				}
			}
			granted := map[string]bool{}
			for name, v := range vars {
				target := refTarget(v)
				switch resourceEnvVars()[name] {
				case "AWS::DynamoDB::Table":
					if !hasPolicy(ps, target, dynamo...) {
						t.Errorf("%s names table %s, but no DynamoDB policy is scoped to it", name, target)
					}
					granted[target] = true
				case "AWS::SQS::Queue":
					// A sender needs SQSSendMessagePolicy; the queue's own
					// consumer names it too (it polls it outside Lambda).
					if !hasPolicy(ps, target, "SQSSendMessagePolicy") && !(hasPolicy(ps, target, "SQSPollerPolicy") && slices.Contains(tpl.sqsEventQueues(fn), target)) {
						t.Errorf("%s names queue %s, but no SQSSendMessagePolicy (or, for its consumer, SQSPollerPolicy) is scoped to it", name, target)
					}
					granted[target] = true
				}
				if name == "GATEWAY_MASTER_KEY_PARAMETER" {
					if !hasPolicy(ps, "MasterKeyParameterName", "SSMParameterReadPolicy") {
						t.Error("the function reads the master key parameter without SSMParameterReadPolicy on it")
					}
					granted["MasterKeyParameterName"] = true
				}
			}
			if pkgs[fn] == "gateway" { // calls Bedrock with its role
				if !hasPolicy(ps, "BedrockModelArns", "Statement:bedrock") {
					t.Error("the gateway has no bedrock statement scoped by BedrockModelArns")
				}
				granted["BedrockModelArns"] = true
			}
			for _, q := range tpl.sqsEventQueues(fn) {
				if !hasPolicy(ps, q, "SQSPollerPolicy") {
					t.Errorf("SQS event source on %s without SQSPollerPolicy scoped to it", q)
				}
				granted[q] = true
			}
			// Least privilege: every policy is scoped to a resource the
			// function is given.
			for _, p := range ps {
				if p.target == "" || !granted[p.target] {
					t.Errorf("policy %s on %q: not scoped to a resource this function uses", p.name, p.target)
				}
			}
		})
	}
}

// consumer is one SQS event source: a SAM `Type: SQS` event or an
// AWS::Lambda::EventSourceMapping on a queue.
type consumer struct {
	name     string // event name or mapping logical id
	function string // logical id
	props    any    // BatchSize, MaximumBatchingWindowInSeconds, FunctionResponseTypes, ...
	queue    any    // the queue's ARN, as written
	samEvent bool
}

// consumers returns every SQS event source in the template.
func (tpl *samTemplate) consumers() []consumer {
	var out []consumer
	for _, fn := range tpl.functions() {
		evs, _ := at(tpl.resources(), fn, "Properties", "Events").(map[string]any)
		for name, ev := range evs {
			if str(at(ev, "Type")) == "SQS" {
				out = append(out, consumer{name: name, function: fn, props: at(ev, "Properties"), queue: at(ev, "Properties", "Queue"), samEvent: true})
			}
		}
	}
	for id, r := range tpl.resources() {
		if str(at(r, "Type")) != "AWS::Lambda::EventSourceMapping" {
			continue
		}
		props := at(r, "Properties")
		q, _ := getAttTarget(at(props, "EventSourceArn"))
		if tpl.resourceType(q) != "AWS::SQS::Queue" {
			continue
		}
		out = append(out, consumer{name: id, function: refTarget(at(props, "FunctionName")), props: props, queue: at(props, "EventSourceArn")})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// sqsEventQueues returns the queues whose SQS event sources trigger fn.
func (tpl *samTemplate) sqsEventQueues(fn string) []string {
	var out []string
	for _, c := range tpl.consumers() {
		if c.function == fn {
			q, _ := getAttTarget(c.queue)
			out = append(out, q)
		}
	}
	return out
}

func TestTemplateGatewayURLStreams(t *testing.T) {
	tpl := loadTemplate(t)
	pkgs := functionPackages(t, tpl)
	found := false
	for id, fn := range tpl.typed.GetAllServerlessFunctionResources() {
		switch pkgs[id] {
		case "gateway":
			found = true
			u := fn.FunctionUrlConfig
			if u == nil || u.InvokeMode == nil || *u.InvokeMode != "RESPONSE_STREAM" {
				t.Errorf("%s: the function URL does not stream (InvokeMode RESPONSE_STREAM)", id)
			}
			if u != nil && u.AuthType != "NONE" {
				t.Errorf("%s: AuthType = %q; OpenAI SDKs send Bearer keys and cannot sign SigV4: want NONE", id, u.AuthType)
			}
		case "admin":
			if u := fn.FunctionUrlConfig; u != nil && u.InvokeMode != nil && *u.InvokeMode != "BUFFERED" {
				t.Errorf("%s: httpadapter answers buffered: InvokeMode = %s", id, *u.InvokeMode)
			}
		}
	}
	if !found {
		t.Fatal("no function builds functions/gateway")
	}
	if v := at(tpl.raw, "Outputs", "GatewayUrl", "Value"); v == nil {
		t.Error("no GatewayUrl output")
	} else if r, attr := getAttTarget(v); attr != "FunctionUrl" || r == "" {
		t.Errorf("GatewayUrl = %v: want !GetAtt <Function>Url.FunctionUrl", v)
	}
}

func TestTemplateSpendConsumer(t *testing.T) {
	tpl := loadTemplate(t)
	typedQueues := tpl.typed.GetAllSQSQueueResources()
	consumers := tpl.consumers()
	if len(consumers) == 0 {
		t.Fatal("no function consumes a queue")
	}
	for _, c := range consumers {
		t.Run(c.name, func(t *testing.T) {
			if c.samEvent {
				t.Errorf("%s: a SAM SQS event also attaches AWSLambdaSQSQueueExecutionRole (every queue in the account); declare an AWS::Lambda::EventSourceMapping", c.function)
			}
			if tpl.resourceType(c.function) != "AWS::Serverless::Function" {
				t.Fatalf("event source for %q, which is not a declared function", c.function)
			}
			frt, _ := at(c.props, "FunctionResponseTypes").([]any)
			if !slices.Contains(frt, any("ReportBatchItemFailures")) {
				t.Errorf("FunctionResponseTypes = %v, want [ReportBatchItemFailures]", frt)
			}
			if w, _ := at(c.props, "MaximumBatchingWindowInSeconds").(int); w <= 0 {
				t.Errorf("MaximumBatchingWindowInSeconds = %v, want a batching window", at(c.props, "MaximumBatchingWindowInSeconds"))
			}
			if at(c.props, "ScalingConfig", "MaximumConcurrency") == nil {
				t.Error("no ScalingConfig.MaximumConcurrency")
			}
			queue, attr := getAttTarget(c.queue)
			q, ok := typedQueues[queue]
			if !ok || attr != "Arn" {
				t.Fatalf("queue = %v: want !GetAtt <declared queue>.Arn", c.queue)
			}
			timeout := 3 // Lambda's default
			if v, ok := tpl.prop(c.function, "Timeout").(int); ok {
				timeout = v
			}
			if vt := q.VisibilityTimeout; vt == nil || *vt < 6*timeout {
				t.Errorf("%s VisibilityTimeout = %v, want at least 6 x %d s (the consumer's timeout)", queue, at(tpl.resources(), queue, "Properties", "VisibilityTimeout"), timeout)
			}
			dlq, _ := getAttTarget(at(tpl.resources(), queue, "Properties", "RedrivePolicy", "deadLetterTargetArn"))
			if _, ok := typedQueues[dlq]; !ok || dlq == queue {
				t.Errorf("%s has no redrive to a declared dead-letter queue (got %q)", queue, dlq)
			}
			if n, _ := at(tpl.resources(), queue, "Properties", "RedrivePolicy", "maxReceiveCount").(int); n <= 0 {
				t.Errorf("%s RedrivePolicy.maxReceiveCount = %v", queue, n)
			}
		})
	}
}

// TestTemplateTablesMatchInfraTables checks template.yaml against the single
// definition of the tables in infra/tables.
func TestTemplateTablesMatchInfraTables(t *testing.T) {
	tpl := loadTemplate(t)
	declared := tpl.typed.GetAllDynamoDBTableResources()
	known := map[string]bool{}
	for _, want := range tables.All() {
		known[want.LogicalID] = true
		t.Run(want.LogicalID, func(t *testing.T) {
			got, ok := declared[want.LogicalID]
			if !ok {
				t.Fatalf("template.yaml does not declare %s", want.LogicalID)
			}
			if got.BillingMode == nil || *got.BillingMode != string(tables.BillingMode) {
				t.Errorf("BillingMode = %v, want %s", got.BillingMode, tables.BillingMode)
			}
			var gotKeys, wantKeys []string
			for _, k := range got.KeySchema {
				gotKeys = append(gotKeys, k.AttributeName+"/"+k.KeyType)
			}
			for _, k := range want.KeySchema() {
				wantKeys = append(wantKeys, *k.AttributeName+"/"+string(k.KeyType))
			}
			if !slices.Equal(gotKeys, wantKeys) {
				t.Errorf("KeySchema = %v, want %v", gotKeys, wantKeys)
			}
			var gotAttrs, wantAttrs []string
			for _, a := range got.AttributeDefinitions {
				gotAttrs = append(gotAttrs, a.AttributeName+"/"+a.AttributeType)
			}
			for _, a := range want.AttributeDefinitions() {
				wantAttrs = append(wantAttrs, *a.AttributeName+"/"+string(a.AttributeType))
			}
			sort.Strings(gotAttrs)
			sort.Strings(wantAttrs)
			if !slices.Equal(gotAttrs, wantAttrs) {
				t.Errorf("AttributeDefinitions = %v, want %v", gotAttrs, wantAttrs)
			}
			ttl := got.TimeToLiveSpecification
			switch {
			case want.TTLAttribute == "" && ttl != nil && ttl.Enabled:
				t.Errorf("TTL on %v, but infra/tables has none", ttl.AttributeName)
			case want.TTLAttribute != "" && (ttl == nil || !ttl.Enabled || ttl.AttributeName == nil || *ttl.AttributeName != want.TTLAttribute):
				t.Errorf("TTL = %v, want enabled on %q", at(tpl.resources(), want.LogicalID, "Properties", "TimeToLiveSpecification"), want.TTLAttribute)
			}
		})
	}
	for id := range declared {
		if !known[id] {
			t.Errorf("template.yaml declares table %s, which infra/tables does not define", id)
		}
	}
}

// TestTemplateSpendPipeline: the gateway sends spend events to the queue the
// consumer reads, and may record them directly when SQS refuses; the
// consumer gets exactly the DynamoDB actions recording needs, on the spend
// and keys tables only.
func TestTemplateSpendPipeline(t *testing.T) {
	tpl := loadTemplate(t)
	pkgs := functionPackages(t, tpl)
	var gateway, consumer string
	for fn, pkg := range pkgs {
		switch pkg {
		case "gateway":
			gateway = fn
		case "spend":
			consumer = fn
		}
	}
	if gateway == "" || consumer == "" {
		t.Fatalf("gateway %q, consumer %q: want both functions", gateway, consumer)
	}
	queues := tpl.sqsEventQueues(consumer)
	if len(queues) != 1 {
		t.Fatalf("the consumer reads queues %v, want one", queues)
	}
	env := func(fn, name string) string {
		return refTarget(at(tpl.resources(), fn, "Properties", "Environment", "Variables", name))
	}
	if q := env(gateway, tables.SpendQueueEnvVar); q != queues[0] {
		t.Errorf("gateway %s = %q, want the consumer's queue %s", tables.SpendQueueEnvVar, q, queues[0])
	}
	gps := tpl.policies(gateway)
	if !hasPolicy(gps, queues[0], "SQSSendMessagePolicy") {
		t.Error("the gateway cannot send to the spend queue")
	}
	spendTable := env(gateway, tables.Spend.EnvVar)
	if !hasPolicy(gps, spendTable, "DynamoDBWritePolicy", "DynamoDBCrudPolicy") {
		t.Error("the gateway cannot record spend directly when SQS refuses (no write policy on the spend table)")
	}
	want := map[string][]string{
		env(consumer, tables.Spend.EnvVar):    {"dynamodb:BatchGetItem", "dynamodb:DeleteItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"},
		env(consumer, tables.Keys.EnvVar):     {"dynamodb:BatchGetItem", "dynamodb:UpdateItem"},
		env(consumer, tables.Counters.EnvVar): {"dynamodb:UpdateItem"}, // strict-budget counters
	}
	got := map[string][]string{}
	for _, p := range tpl.policies(consumer) {
		switch {
		case strings.HasPrefix(p.name, "DynamoDB"):
			t.Errorf("consumer policy %s on %s: want inline statements with exactly the actions it uses", p.name, p.target)
		case p.name == "Statement:dynamodb":
			got[p.target] = append(got[p.target], p.actions...)
		case strings.HasPrefix(p.name, "Statement:"):
			t.Errorf("consumer statement %s on %q: broad or mixed", p.name, p.target)
		}
	}
	for table, actions := range want {
		g := slices.Clone(got[table])
		sort.Strings(g)
		if !slices.Equal(g, actions) {
			t.Errorf("consumer actions on %s = %v, want %v", table, g, actions)
		}
	}
	if len(got) != len(want) {
		t.Errorf("consumer has DynamoDB statements on %d tables, want %d", len(got), len(want))
	}
	for _, c := range tpl.consumers() {
		if c.function != consumer {
			continue
		}
		if n, _ := at(c.props, "BatchSize").(int); n < 10 || n > 100 {
			t.Errorf("BatchSize = %v: want 10..100 (one transaction of up to 100 items per batch)", at(c.props, "BatchSize"))
		}
		if w, _ := at(c.props, "MaximumBatchingWindowInSeconds").(int); w < 1 || w > 5 {
			t.Errorf("MaximumBatchingWindowInSeconds = %v: want 1..5 (spend lands within seconds)", w)
		}
	}
}

// The gateway may invoke Bedrock models (what Converse and ConverseStream
// need, nothing more), on the ARNs of the BedrockModelArns parameter, by
// default the region's inference profiles and the foundation models.
func TestTemplateBedrockPolicy(t *testing.T) {
	tpl := loadTemplate(t)
	if at(tpl.raw, "Parameters", "BedrockModelArns", "Type") != "CommaDelimitedList" {
		t.Fatal("no BedrockModelArns parameter (CommaDelimitedList)")
	}
	var found []policy
	for _, p := range tpl.policies("GatewayFunction") {
		if p.name == "Statement:bedrock" {
			found = append(found, p)
		}
	}
	if len(found) != 1 || found[0].target != "BedrockModelArns" {
		t.Fatalf("bedrock statements %+v, want one scoped by BedrockModelArns", found)
	}
	want := []string{"bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"}
	if got := found[0].actions; !slices.Equal(got, want) {
		t.Errorf("actions %v, want %v", got, want)
	}
	if at(tpl.raw, "Conditions", "BedrockDefaultModels") == nil {
		t.Error("no BedrockDefaultModels condition")
	}
	for _, fn := range []string{"AdminFunction", "SpendFunction"} {
		for _, p := range tpl.policies(fn) {
			if p.name == "Statement:bedrock" {
				t.Errorf("%s may call Bedrock", fn)
			}
		}
	}
}
