package lambda_test

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/infra/tables"
)

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
		env(consumer, tables.Keys.EnvVar):     {"dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:UpdateItem"}, // GetItem: team and key callbacks
		env(consumer, tables.Counters.EnvVar): {"dynamodb:UpdateItem"},                                              // strict-budget counters
	}
	got := map[string][]string{}
	for _, p := range tpl.policies(consumer) {
		switch {
		case strings.HasPrefix(p.name, "DynamoDB"):
			t.Errorf("consumer policy %s on %s: want inline statements with exactly the actions it uses", p.name, p.target)
		case p.name == "Statement:dynamodb":
			got[p.target] = append(got[p.target], p.actions...)
		case p.name == "Statement:s3" && p.target == "CallbackBucketName" && slices.Equal(p.actions, []string{"s3:PutObject"}):
			// the s3 logging callback's objects (docs/callbacks.md)
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
