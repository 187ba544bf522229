package stack_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	cfn "github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/sluice-gw/sluice/infra/tables"
)

// resolve evaluates a template value (a literal or an intrinsic function)
// against the deployed stack, as CloudFormation did when it created it.
func (s *stack) resolve(t *testing.T, v any) string {
	t.Helper()
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case map[string]any:
		if len(x) != 1 {
			break
		}
		if r, ok := x["Ref"]; ok {
			return s.ref(t, str(r))
		}
		if g, ok := x["Fn::GetAtt"].([]any); ok && len(g) == 2 {
			return s.getAtt(t, str(g[0]), str(g[1]))
		}
		if sub, ok := x["Fn::Sub"]; ok {
			tmpl, vars := str(sub), map[string]any{}
			if l, ok := sub.([]any); ok && len(l) == 2 {
				tmpl, vars = str(l[0]), mapAt(l[1])
			}
			return subVar.ReplaceAllStringFunc(tmpl, func(m string) string {
				name := m[2 : len(m)-1]
				if v, ok := vars[name]; ok {
					return s.resolve(t, v)
				}
				if res, attr, ok := strings.Cut(name, "."); ok {
					return s.getAtt(t, res, attr)
				}
				return s.ref(t, name)
			})
		}
	}
	t.Fatalf("the test cannot resolve %v: teach resolve (checks_test.go)", v)
	return ""
}

func (s *stack) ref(t *testing.T, name string) string {
	t.Helper()
	if v, ok := s.params[name]; ok {
		return v
	}
	switch name {
	case "AWS::Region":
		return region
	case "AWS::Partition":
		return "aws"
	case "AWS::AccountId":
		return s.account(t)
	case "AWS::StackName":
		return s.name
	}
	if p, ok := s.physical[name]; ok {
		return p
	}
	t.Fatalf("Ref %s: neither a parameter nor a resource of the stack", name)
	return ""
}

func (s *stack) getAtt(t *testing.T, id, attr string) string {
	t.Helper()
	typ := str(at(s.deployed, "Resources", id, "Type"))
	phys := s.ref(t, id)
	switch {
	case typ == "AWS::SQS::Queue" && attr == "Arn":
		return s.queueAttrs(t, phys)[string(sqstypes.QueueAttributeNameQueueArn)]
	case typ == "AWS::SQS::Queue" && attr == "QueueName":
		return phys[strings.LastIndex(phys, "/")+1:]
	case typ == "AWS::Lambda::Function" && attr == "Arn":
		return aws.ToString(s.functionConfig(t, phys).FunctionArn)
	case typ == "AWS::IAM::Role" && attr == "Arn":
		return fmt.Sprintf("arn:aws:iam::%s:role/%s", s.account(t), phys)
	case typ == "AWS::DynamoDB::Table" && attr == "Arn":
		out, err := s.c.ddb.DescribeTable(ctx(t), &dynamodb.DescribeTableInput{TableName: aws.String(phys)})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.Table.TableArn)
	}
	t.Fatalf("the test cannot resolve Fn::GetAtt %s.%s (%s): teach getAtt (checks_test.go)", id, attr, typ)
	return ""
}

// account is the stack's account, as moto reports it in ARNs.
func (s *stack) account(t *testing.T) string {
	t.Helper()
	for _, id := range s.resourcesOfType("AWS::Lambda::Function") {
		arn := aws.ToString(s.functionConfig(t, s.physical[id]).FunctionArn)
		if parts := strings.Split(arn, ":"); len(parts) > 4 {
			return parts[4]
		}
	}
	t.Fatal("no function ARN to read the account from")
	return ""
}

func (s *stack) queueAttrs(t *testing.T, url string) map[string]string {
	t.Helper()
	out, err := s.c.sqs.GetQueueAttributes(ctx(t), &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll},
	})
	if err != nil {
		t.Fatalf("queue %s: %v", url, err)
	}
	return out.Attributes
}

func (s *stack) functionConfig(t *testing.T, name string) *lambda.GetFunctionConfigurationOutput {
	t.Helper()
	out, err := s.c.lambda.GetFunctionConfiguration(ctx(t), &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(name)})
	if err != nil {
		t.Fatalf("function %s: %v", name, err)
	}
	return out
}

// checkStack checks that what came up is what the template declares.
func (s *stack) checkStack(t *testing.T) {
	t.Run("resources", s.checkResources)
	t.Run("stripped", s.checkStripped)
	t.Run("outputs", s.checkOutputs)
	t.Run("tables", s.checkTables)
	t.Run("queues", s.checkQueues)
	t.Run("functions", s.checkFunctions)
	t.Run("master key parameter", s.checkMasterKey)
}

func (s *stack) checkResources(t *testing.T) {
	out, err := s.c.cfn.DescribeStackResources(ctx(t), &cfn.DescribeStackResourcesInput{StackName: aws.String(s.name)})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range out.StackResources {
		got[aws.ToString(r.LogicalResourceId)] = string(r.ResourceStatus)
		if want := str(at(s.deployed, "Resources", aws.ToString(r.LogicalResourceId), "Type")); want != aws.ToString(r.ResourceType) {
			t.Errorf("%s: type %s, want %s", aws.ToString(r.LogicalResourceId), aws.ToString(r.ResourceType), want)
		}
	}
	for _, id := range sortedKeys(mapAt(s.deployed, "Resources")) {
		if got[id] != "CREATE_COMPLETE" {
			t.Errorf("%s (%s): %q, want CREATE_COMPLETE", id, str(at(s.deployed, "Resources", id, "Type")), got[id])
		}
	}
	for id := range got {
		if mapAt(s.deployed, "Resources", id) == nil {
			t.Errorf("the stack has %s, which the template does not declare", id)
		}
	}
}

// checkStripped checks what moto could not create on the transformed
// template: the function URLs, one per function that declares a
// FunctionUrlConfig, the gateway's streaming.
func (s *stack) checkStripped(t *testing.T) {
	urls := 0
	for _, id := range sortedKeys(mapAt(s.transformed, "Resources")) {
		r := mapAt(s.transformed, "Resources", id)
		if str(r["Type"]) != "AWS::Lambda::Url" {
			continue
		}
		urls++
		target := references(at(r, "Properties", "TargetFunctionArn"))
		if len(target) != 1 || str(at(s.deployed, "Resources", target[0], "Type")) != "AWS::Lambda::Function" {
			t.Errorf("%s: TargetFunctionArn %v is not a function of the stack", id, at(r, "Properties", "TargetFunctionArn"))
			continue
		}
		if a := str(at(r, "Properties", "AuthType")); a != "NONE" {
			t.Errorf("%s: AuthType %q, want NONE (the functions check Bearer keys themselves)", id, a)
		}
		mode := str(at(r, "Properties", "InvokeMode"))
		if s.handlerOf(t, target[0]) == "gateway" && mode != "RESPONSE_STREAM" {
			t.Errorf("%s: the gateway's URL has InvokeMode %q, want RESPONSE_STREAM", id, mode)
		}
		// The permissions SAM adds for a public URL did come up.
		perms := 0
		for _, pid := range s.resourcesOfType("AWS::Lambda::Permission") {
			if slices.Contains(references(at(s.deployed, "Resources", pid, "Properties", "FunctionName")), target[0]) {
				perms++
			}
		}
		if perms == 0 {
			t.Errorf("%s: no AWS::Lambda::Permission lets the public invoke %s", id, target[0])
		}
	}
	if urls == 0 {
		t.Error("the template has no function URL")
	}
	for _, x := range s.stripped {
		id, ok := strings.CutPrefix(x, "Resources.")
		if !ok {
			continue
		}
		switch typ := str(at(s.transformed, "Resources", id, "Type")); typ {
		case "AWS::Lambda::Url", "AWS::CloudWatch::Alarm":
		case "AWS::CloudWatch::Dashboard": // its alarm widget reads the alarms' Arn
		default:
			t.Errorf("stripped %s, a %s, which moto can create", x, typ)
		}
	}
}

// checkOutputs checks every output moto could compute against what it
// names.
func (s *stack) checkOutputs(t *testing.T) {
	outs := mapAt(s.deployed, "Outputs")
	for _, k := range sortedKeys(outs) {
		want := s.resolve(t, at(outs[k], "Value"))
		if got, ok := s.outputs[k]; !ok || got != want {
			t.Errorf("output %s = %q, want %q", k, got, want)
		}
	}
	for k := range s.outputs {
		if _, ok := outs[k]; !ok {
			t.Errorf("output %s, which the template does not declare", k)
		}
	}
}

// checkTables checks each table of infra/tables, live in moto's DynamoDB.
// Moto's CloudFormation ignores TimeToLiveSpecification and
// PointInTimeRecoverySpecification; when it reports them off, they are
// checked on the template instead, and the test says so.
func (s *stack) checkTables(t *testing.T) {
	for _, tb := range tables.All() {
		t.Run(tb.LogicalID, func(t *testing.T) {
			name := s.physical[tb.LogicalID]
			if name == "" {
				t.Fatalf("the stack has no %s", tb.LogicalID)
			}
			out, err := s.c.ddb.DescribeTable(ctx(t), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
			if err != nil {
				t.Fatal(err)
			}
			d := out.Table
			if d.TableStatus != ddbtypes.TableStatusActive {
				t.Errorf("status %s", d.TableStatus)
			}
			if got, want := keyStrings(d.KeySchema), keyStrings(tb.KeySchema()); !slices.Equal(got, want) {
				t.Errorf("key schema %v, want %v", got, want)
			}
			if got, want := attrStrings(d.AttributeDefinitions), attrStrings(tb.AttributeDefinitions()); !slices.Equal(got, want) {
				t.Errorf("attributes %v, want %v", got, want)
			}
			if d.BillingModeSummary == nil || d.BillingModeSummary.BillingMode != tables.BillingMode {
				t.Errorf("billing mode %+v, want %s", d.BillingModeSummary, tables.BillingMode)
			}
			ttl, err := s.c.ddb.DescribeTimeToLive(ctx(t), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
			if err != nil {
				t.Fatal(err)
			}
			spec := mapAt(s.deployed, "Resources", tb.LogicalID, "Properties", "TimeToLiveSpecification")
			switch d := ttl.TimeToLiveDescription; {
			case d != nil && d.TimeToLiveStatus == ddbtypes.TimeToLiveStatusEnabled:
				if aws.ToString(d.AttributeName) != tb.TTLAttribute {
					t.Errorf("TTL on %q, want %q", aws.ToString(d.AttributeName), tb.TTLAttribute)
				}
			case tb.TTLAttribute == "":
			default:
				t.Logf("moto's CloudFormation did not apply TimeToLiveSpecification; checked on the template")
				if spec["Enabled"] != true || str(spec["AttributeName"]) != tb.TTLAttribute {
					t.Errorf("TimeToLiveSpecification %v, want enabled on %q", spec, tb.TTLAttribute)
				}
			}
		})
	}
}

func keyStrings(ks []ddbtypes.KeySchemaElement) []string {
	var out []string
	for _, k := range ks {
		out = append(out, aws.ToString(k.AttributeName)+"/"+string(k.KeyType))
	}
	return out
}

func attrStrings(as []ddbtypes.AttributeDefinition) []string {
	var out []string
	for _, a := range as {
		out = append(out, aws.ToString(a.AttributeName)+"/"+string(a.AttributeType))
	}
	slices.Sort(out)
	return out
}

// checkQueues checks each queue's attributes against the template: retention,
// visibility timeout, encryption, and the redrive policy to the dead-letter
// queue.
func (s *stack) checkQueues(t *testing.T) {
	ids := s.resourcesOfType("AWS::SQS::Queue")
	if len(ids) == 0 {
		t.Fatal("no queue")
	}
	redriven := 0
	for _, id := range ids {
		t.Run(id, func(t *testing.T) {
			props := mapAt(s.deployed, "Resources", id, "Properties")
			attrs := s.queueAttrs(t, s.physical[id])
			for _, k := range []string{"VisibilityTimeout", "MessageRetentionPeriod", "SqsManagedSseEnabled", "DelaySeconds", "ReceiveMessageWaitTimeSeconds"} {
				if v, ok := props[k]; ok {
					if got, want := attrs[k], s.resolve(t, v); got != want {
						t.Errorf("%s = %q, want %q", k, got, want)
					}
				}
			}
			rp := mapAt(props, "RedrivePolicy")
			if rp == nil {
				if attrs["RedrivePolicy"] != "" {
					t.Errorf("RedrivePolicy %s, which the template does not set", attrs["RedrivePolicy"])
				}
				return
			}
			redriven++
			var got struct {
				DeadLetterTargetArn string `json:"deadLetterTargetArn"`
				MaxReceiveCount     any    `json:"maxReceiveCount"`
			}
			if err := json.Unmarshal([]byte(attrs["RedrivePolicy"]), &got); err != nil {
				t.Fatalf("RedrivePolicy %q: %v", attrs["RedrivePolicy"], err)
			}
			if want := s.resolve(t, rp["deadLetterTargetArn"]); got.DeadLetterTargetArn != want {
				t.Errorf("dead-letter target %q, want %q", got.DeadLetterTargetArn, want)
			}
			if fmt.Sprint(got.MaxReceiveCount) != s.resolve(t, rp["maxReceiveCount"]) {
				t.Errorf("maxReceiveCount %v, want %v", got.MaxReceiveCount, rp["maxReceiveCount"])
			}
		})
	}
	if redriven == 0 {
		t.Error("no queue has a redrive policy to a dead-letter queue")
	}
}

// lambdaReserved are environment variables Lambda sets itself; a function's
// configuration cannot set them.
var lambdaReserved = []string{"_HANDLER", "_X_AMZN_TRACE_ID", "AWS_DEFAULT_REGION", "AWS_REGION", "AWS_EXECUTION_ENV",
	"AWS_LAMBDA_FUNCTION_NAME", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "AWS_LAMBDA_FUNCTION_VERSION",
	"AWS_LAMBDA_INITIALIZATION_TYPE", "AWS_LAMBDA_LOG_GROUP_NAME", "AWS_LAMBDA_LOG_STREAM_NAME",
	"AWS_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
	"AWS_LAMBDA_RUNTIME_API", "LAMBDA_TASK_ROOT", "LAMBDA_RUNTIME_DIR"}

// checkFunctions checks each function as Lambda reports it: its code is the
// package built from this checkout, its settings and role are the
// template's, and its environment is exactly the template's, every
// reference resolved to the stack's own tables, queue and parameter.
func (s *stack) checkFunctions(t *testing.T) {
	for _, id := range s.resourcesOfType("AWS::Lambda::Function") {
		t.Run(id, func(t *testing.T) {
			props := mapAt(s.deployed, "Resources", id, "Properties")
			cfg := s.functionConfig(t, s.physical[id])
			p := s.packages[id]
			if p == nil {
				t.Fatalf("no package was built for %s", id)
			}
			if got := aws.ToString(cfg.CodeSha256); got != p.codeSha256() {
				t.Errorf("CodeSha256 %s, want %s (the package uploaded for it)", got, p.codeSha256())
			}
			if b, k := str(at(props, "Code", "S3Bucket")), str(at(props, "Code", "S3Key")); b != p.bucket || k != p.key {
				t.Errorf("Code s3://%s/%s, want s3://%s/%s", b, k, p.bucket, p.key)
			}
			checks := []struct {
				name     string
				got      string
				required bool
			}{
				{"Runtime", string(cfg.Runtime), true},
				{"Handler", aws.ToString(cfg.Handler), true},
				{"Role", aws.ToString(cfg.Role), true},
				{"Timeout", fmt.Sprint(aws.ToInt32(cfg.Timeout)), false},
				{"MemorySize", fmt.Sprint(aws.ToInt32(cfg.MemorySize)), false},
				{"Description", aws.ToString(cfg.Description), false},
			}
			for _, c := range checks {
				v, ok := props[c.name]
				if !ok {
					if c.required {
						t.Errorf("the template sets no %s", c.name)
					}
					continue
				}
				if want := s.resolve(t, v); c.got != want {
					t.Errorf("%s = %q, want %q", c.name, c.got, want)
				}
			}
			var arch []string
			for _, a := range cfg.Architectures {
				arch = append(arch, string(a))
			}
			wantArch := fmt.Sprint(props["Architectures"])
			if fmt.Sprint(toAny(arch)) != wantArch {
				if slices.Equal(arch, []string{"x86_64"}) {
					t.Logf("moto's CloudFormation ignores Architectures (reports its default x86_64); the template says %s", wantArch)
				} else {
					t.Errorf("Architectures %v, want %s", arch, wantArch)
				}
			}

			want := map[string]string{}
			for k, v := range mapAt(props, "Environment", "Variables") {
				want[k] = s.resolve(t, v)
				if slices.Contains(lambdaReserved, k) {
					t.Errorf("environment sets %s, which Lambda reserves", k)
				}
			}
			var got map[string]string
			if cfg.Environment != nil {
				got = cfg.Environment.Variables
			}
			if !maps.Equal(got, want) {
				t.Errorf("environment\n got %v\nwant %v", got, want)
			}
			// Each table and queue variable names one of this stack's.
			for k, v := range got {
				for _, tb := range tables.All() {
					if k == tb.EnvVar && v != s.physical[tb.LogicalID] {
						t.Errorf("%s = %q, not the stack's %s (%s)", k, v, tb.LogicalID, s.physical[tb.LogicalID])
					}
				}
				if k == tables.SpendQueueEnvVar && v != s.physical[s.spendQueue(t)] {
					t.Errorf("%s = %q, not the stack's spend queue", k, v)
				}
			}
		})
	}
}

func toAny(l []string) []any {
	out := make([]any, len(l))
	for i, s := range l {
		out[i] = s
	}
	return out
}

// checkMasterKey checks that every function reading the master key names a
// SecureString an init script put, holding the key the README's example
// uses.
func (s *stack) checkMasterKey(t *testing.T) {
	readers := 0
	for _, id := range s.resourcesOfType("AWS::Lambda::Function") {
		name := s.functionConfig(t, s.physical[id]).Environment.Variables["GATEWAY_MASTER_KEY_PARAMETER"]
		if name == "" {
			continue
		}
		readers++
		out, err := s.c.ssm.GetParameter(ctx(t), &ssm.GetParameterInput{Name: aws.String(name), WithDecryption: aws.Bool(true)})
		if err != nil {
			t.Errorf("%s reads %s: %v", id, name, err)
			continue
		}
		if out.Parameter.Type != "SecureString" {
			t.Errorf("%s is a %s, want a SecureString", name, out.Parameter.Type)
		}
		put := slices.IndexFunc(s.ssmPuts, func(p ssmPut) bool { return p.name == name })
		if put < 0 {
			t.Errorf("%s reads %s, which no init script in localstack/init puts", id, name)
		}
	}
	if readers == 0 {
		t.Error("no function reads the master key parameter")
	}
}

// masterKey is the master key the stack's functions read.
func (s *stack) masterKey(t *testing.T) string {
	t.Helper()
	name := "/" + s.params["MasterKeyParameterName"]
	out, err := s.c.ssm.GetParameter(ctx(t), &ssm.GetParameterInput{Name: aws.String(name), WithDecryption: aws.Bool(true)})
	if err != nil {
		t.Fatalf("master key %s: %v", name, err)
	}
	return aws.ToString(out.Parameter.Value)
}

// spendQueue is the logical id of the queue the event source mapping reads.
func (s *stack) spendQueue(t *testing.T) string {
	t.Helper()
	for _, id := range s.resourcesOfType("AWS::Lambda::EventSourceMapping") {
		refs := references(at(s.deployed, "Resources", id, "Properties", "EventSourceArn"))
		if len(refs) == 1 && str(at(s.deployed, "Resources", refs[0], "Type")) == "AWS::SQS::Queue" {
			return refs[0]
		}
	}
	t.Fatal("no event source mapping reads a queue")
	return ""
}

// handlerOf returns the functions/<name> package a function's build target
// compiles (from its bootstrap's Makefile target), e.g. "gateway".
func (s *stack) handlerOf(t *testing.T, id string) string {
	t.Helper()
	return makeTargetPackage(t, "build-"+id)
}

// mapping is the SQS event source mapping, as the poller plays it.
type mapping struct {
	uuid           string
	function       string // logical id
	queue          string // logical id
	queueURL       string
	queueARN       string
	batchSize      int
	window         int // seconds
	reportFailures bool
	maxConcurrency int
}

// checkMapping checks the event source mapping Lambda reports against the
// template, then disables it: moto would try to run the function in Docker
// for each message (and fail, leaving it), and the test must be the only
// poller.
func (s *stack) checkMapping(t *testing.T) *mapping {
	t.Helper()
	ids := s.resourcesOfType("AWS::Lambda::EventSourceMapping")
	if len(ids) != 1 {
		t.Fatalf("%d event source mappings, want 1 (the spend queue's)", len(ids))
	}
	id := ids[0]
	props := mapAt(s.deployed, "Resources", id, "Properties")
	m := &mapping{uuid: s.physical[id], queue: s.spendQueue(t)}
	if refs := references(props["FunctionName"]); len(refs) == 1 {
		m.function = refs[0]
	}
	m.queueURL = s.physical[m.queue]
	m.queueARN = s.resolve(t, props["EventSourceArn"])
	fn := s.physical[m.function]
	if fn == "" {
		t.Fatalf("%s: FunctionName %v is not a function of the stack", id, props["FunctionName"])
	}
	out, err := s.c.lambda.ListEventSourceMappings(ctx(t), &lambda.ListEventSourceMappingsInput{FunctionName: aws.String(fn)})
	if err != nil {
		t.Fatal(err)
	}
	var got *lambdatypes.EventSourceMappingConfiguration
	for i, e := range out.EventSourceMappings {
		if aws.ToString(e.UUID) == m.uuid {
			got = &out.EventSourceMappings[i]
		}
	}
	if got == nil {
		t.Fatalf("%s (%s): Lambda lists no such mapping for %s", id, m.uuid, fn)
	}
	if a := aws.ToString(got.EventSourceArn); a != m.queueARN {
		t.Errorf("EventSourceArn %s, want %s", a, m.queueARN)
	}
	if !strings.HasSuffix(aws.ToString(got.FunctionArn), ":function:"+fn) {
		t.Errorf("FunctionArn %s, want %s's", aws.ToString(got.FunctionArn), fn)
	}
	m.batchSize = int(aws.ToInt32(got.BatchSize))
	if want := s.resolve(t, props["BatchSize"]); fmt.Sprint(m.batchSize) != want {
		t.Errorf("BatchSize %d, want %s", m.batchSize, want)
	}
	m.window = int(aws.ToInt32(got.MaximumBatchingWindowInSeconds))
	if want := s.resolve(t, props["MaximumBatchingWindowInSeconds"]); fmt.Sprint(m.window) != want {
		t.Errorf("MaximumBatchingWindowInSeconds %d, want %s", m.window, want)
	}
	m.reportFailures = slices.Contains(got.FunctionResponseTypes, lambdatypes.FunctionResponseTypeReportBatchItemFailures)
	if !m.reportFailures {
		t.Errorf("FunctionResponseTypes %v: partial batch failures are not reported", got.FunctionResponseTypes)
	}
	if got.ScalingConfig == nil || got.ScalingConfig.MaximumConcurrency == nil {
		t.Error("no ScalingConfig.MaximumConcurrency")
	} else {
		m.maxConcurrency = int(*got.ScalingConfig.MaximumConcurrency)
		if want := s.resolve(t, at(props, "ScalingConfig", "MaximumConcurrency")); fmt.Sprint(m.maxConcurrency) != want {
			t.Errorf("MaximumConcurrency %d, want %s", m.maxConcurrency, want)
		}
	}
	if aws.ToString(got.State) != "Enabled" {
		t.Errorf("state %s, want Enabled as deployed", aws.ToString(got.State))
	}

	// Disable it: from here on the test is the only poller.
	if _, err := s.c.lambda.UpdateEventSourceMapping(ctx(t), &lambda.UpdateEventSourceMappingInput{UUID: aws.String(m.uuid), Enabled: aws.Bool(false)}); err != nil {
		t.Fatalf("disable the event source mapping: %v", err)
	}
	after, err := s.c.lambda.GetEventSourceMapping(ctx(t), &lambda.GetEventSourceMappingInput{UUID: aws.String(m.uuid)})
	if err != nil || aws.ToString(after.State) != "Disabled" {
		t.Fatalf("the event source mapping is still %s (%v)", aws.ToString(after.State), err)
	}
	return m
}
