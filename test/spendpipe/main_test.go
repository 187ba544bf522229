// Package spendpipe_test runs the spend pipeline whole: gateways publishing
// spend events, SQS (moto's server), the consumer and the DynamoDB tables
// (DynamoDB Local), and local mode with the in-process queue.
//
//	go test ./test/spendpipe/                       # needs DynamoDB Local and moto_server (./test/run.sh starts both)
//	go test -run TestSpendCost -v ./test/spendpipe/ # prints AWS calls and dollars per million requests
package spendpipe_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"

	"github.com/sluice-gw/sluice/infra/tables"
	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/keys/ddbkeys"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/ddbspend"
	"github.com/sluice-gw/sluice/shared/spend/spendsqs"
	"github.com/sluice-gw/sluice/test/ddblocal"
	"github.com/sluice-gw/sluice/test/sqslocal"
)

func TestMain(m *testing.M) {
	os.Exit(sqslocal.With(func() int { return ddblocal.Main(m) }))
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

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
	client := ddb.NewClient(cfg, ddb.ClientOptions{Emulator: true})
	return ddbspend.New(client, names.Spend, names.Keys, ddbkeys.New(client, names.Keys, ddbkeys.Options{}), ddbspend.Options{Logger: quiet()})
}

// consumer runs a local consumer (the spend function's handler through the
// poller) until stop is called; stop returns Poll's error.
func consumer(t *testing.T, cfg aws.Config, url string, st spend.Store, o spendsqs.PollOptions) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	if o.Logger == nil {
		o.Logger = quiet()
	}
	if o.Wait == 0 {
		o.Wait = time.Second
	}
	if o.Window == 0 {
		o.Window = 300 * time.Millisecond
	}
	o.ShortPoll = true // moto keeps a thread per long poll
	c := spend.NewConsumer(st, quiet())
	go func() { errc <- spendsqs.Poll(ctx, sqs.NewFromConfig(cfg), url, c.HandleSQS, o) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() { cancel(); err = <-errc })
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
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

// upstream is an OpenAI-compatible provider: a JSON answer with usage, a
// stream ending with a usage chunk when asked for one, a stream that hangs
// after its first chunk when the prompt says "hang", and a 500 under /fail.
func upstream(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.HasPrefix(r.URL.Path, "/fail") {
			w.WriteHeader(500)
			io.WriteString(w, `{"error":{"message":"boom"}}`)
			return
		}
		if !strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hello there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		chunk := func(s string) { io.WriteString(w, "data: "+s+"\n\n"); f.Flush() }
		chunk(`{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"hel"},"finish_reason":null}]}`)
		if strings.Contains(string(body), "hang") {
			<-r.Context().Done()
			return
		}
		chunk(`{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}`)
		if strings.Contains(string(body), `"include_usage":true`) {
			chunk(`{"id":"x","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13}}`)
		}
		io.WriteString(w, "data: [DONE]\n\n")
		f.Flush()
	}))
	t.Cleanup(srv.Close)
	return srv
}

// gatewayConfig prices $1 per million input tokens and $2 per million
// output tokens.
func gatewayConfig(up string) string {
	return fmt.Sprintf(`model_list:
  - model_name: m
    litellm_params: {model: openai/gpt-x, api_base: %[1]s/v1, api_key: x, input_cost_per_token: 0.000001, output_cost_per_token: 0.000002}
    model_info: {id: dep-up}
  - model_name: broken
    litellm_params: {model: openai/gpt-x, api_base: %[1]s/fail/v1, api_key: x, input_cost_per_token: 0.000001, output_cost_per_token: 0.000002}
    model_info: {id: dep-fail}
router_settings: {num_retries: 0}
general_settings: {master_key: sk-e2e-master}
`, up)
}
