package stack_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/sluice-gw/sluice/infra/tables"
)

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
				if !s.present(t, v) {
					continue
				}
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
