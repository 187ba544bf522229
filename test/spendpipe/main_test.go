// Package spendpipe_test runs the spend pipeline whole: gateways publishing
// spend events, SQS (moto's server), the consumer and the DynamoDB tables
// (DynamoDB Local), and local mode with the in-process queue.
//
//	go test ./test/spendpipe/                       # needs DynamoDB Local and moto_server (./test/run.sh starts both)
//	go test -run TestSpendCost -v ./test/spendpipe/ # prints AWS calls and dollars per million requests
package spendpipe_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/sluice-gw/sluice/infra/tables"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/ddbspend"
	"github.com/sluice-gw/sluice/shared/spend/spendsqs"
	"github.com/sluice-gw/sluice/test/ddblocal"
	"github.com/sluice-gw/sluice/test/ddblocal/ddbharness"
	"github.com/sluice-gw/sluice/test/sqslocal"
)

func TestMain(m *testing.M) { os.Exit(ddbharness.PipelineMain(m)) }

var (
	quiet    = gatewaytest.Quiet
	upstream = ddbharness.Upstream
)

// awsConfig is one config for DynamoDB Local and moto's SQS (each endpoint
// from the SDK's own per-service variables), counting calls in calls.
func awsConfig(t *testing.T, calls *Calls) aws.Config {
	t.Helper()
	sqslocal.Require(t)
	cfg := ddblocal.Config(t)
	if calls != nil {
		cfg.APIOptions = append(cfg.APIOptions, calls.middleware)
	}
	return cfg
}

// Calls counts AWS operations by service and name.
type Calls struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *Calls) middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("countCalls",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			c.mu.Lock()
			if c.n == nil {
				c.n = map[string]int{}
			}
			c.n[awsmiddleware.GetServiceID(ctx)+"."+awsmiddleware.GetOperationName(ctx)]++
			c.mu.Unlock()
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
}

// Get returns the count of service.op ("SQS.SendMessageBatch").
func (c *Calls) Get(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[op]
}

// consumerStore is the spend function's store on names, with its own client.
func consumerStore(t *testing.T, cfg aws.Config, names tables.Names) *ddbspend.Store {
	st, _ := ddbharness.ConsumerStore(t, cfg, names)
	return st
}

// consumer runs a local consumer of st (the spend function's handler
// through the poller) until stop is called; stop returns Poll's error.
func consumer(t *testing.T, cfg aws.Config, url string, st spend.Store, o spendsqs.PollOptions) (stop func() error) {
	return ddbharness.Consume(t, cfg, url, spend.NewConsumer(st, quiet()), o)
}

// waitDrained waits until the queue has no message, visible or in flight.
func waitDrained(t *testing.T, url string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if v, f := sqslocal.Count(t, url); v == 0 && f == 0 {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	v, f := sqslocal.Count(t, url)
	t.Fatalf("queue not drained after %v: %d visible, %d in flight", timeout, v, f)
}

// rawSpend reads a keys-table record's spend attribute as DynamoDB stores
// it, exactly.
func rawSpend(t *testing.T, client *dynamodb.Client, table string, r keys.Ref) int64 {
	t.Helper()
	out, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: r.String()}},
	})
	if err != nil {
		t.Fatal(err)
	}
	v, ok := out.Item["spend"].(*types.AttributeValueMemberN)
	if !ok {
		t.Fatalf("%s has no spend number: %v", r, out.Item)
	}
	n, err := keys.ParseDecimalUSD(v.Value)
	if err != nil {
		t.Fatalf("%s spend %q: %v", r, v.Value, err)
	}
	return n
}

// gatewayConfig prices $1 per million input tokens and $2 per million
// output tokens.
func gatewayConfig(up string) string { return ddbharness.GatewayConfig(up, "sk-e2e-master", "") }
