package ddbharness

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sluice-gw/sluice/infra/tables"
	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys/ddbkeys"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/ddbspend"
	"github.com/sluice-gw/sluice/shared/spend/spendsqs"
	"github.com/sluice-gw/sluice/test/ddblocal"
	"github.com/sluice-gw/sluice/test/sqslocal"
)

// The spend pipeline whole (test/spendpipe, test/callbackpipe): gateways
// publishing spend events to SQS on moto, consumers polling it into the
// tables on DynamoDB Local, an OpenAI-compatible upstream.

// PipelineMain runs a package's tests with DynamoDB Local and moto's SQS
// available and returns the exit code for os.Exit:
//
//	func TestMain(m *testing.M) { os.Exit(ddbharness.PipelineMain(m)) }
func PipelineMain(m *testing.M) int {
	return sqslocal.With(func() int { return ddblocal.Main(m) })
}

// GatewayConfig is a config of model m on up (deployment dep-up) and
// model broken on its /fail (dep-fail), priced $1 per million input tokens
// and $2 per million output tokens, no retries, behind masterKey, followed
// by extra (more top-level sections).
func GatewayConfig(up, masterKey, extra string) string {
	return fmt.Sprintf(`model_list:
  - model_name: m
    litellm_params: {model: openai/gpt-x, api_base: %[1]s/v1, api_key: x, input_cost_per_token: 0.000001, output_cost_per_token: 0.000002}
    model_info: {id: dep-up}
  - model_name: broken
    litellm_params: {model: openai/gpt-x, api_base: %[1]s/fail/v1, api_key: x, input_cost_per_token: 0.000001, output_cost_per_token: 0.000002}
    model_info: {id: dep-fail}
router_settings: {num_retries: 0}
general_settings: {master_key: %[2]s}
%[3]s`, up, masterKey, extra)
}

// ConsumerStore is the spend function's store on names (strict-budget
// holds settled) and the keys store it reads, with their own SDK client.
func ConsumerStore(t *testing.T, cfg aws.Config, names tables.Names) (*ddbspend.Store, *ddbkeys.Store) {
	client := ddb.NewClient(cfg, ddb.ClientOptions{Emulator: true})
	ks := ddbkeys.New(client, names.Keys, ddbkeys.Options{})
	return ddbspend.New(client, names.Spend, names.Keys, ks, ddbspend.Options{Logger: gatewaytest.Quiet(), CountersTable: names.Counters}), ks
}

// Consume polls url with c (the spend function's handler through the
// poller) until stop is called or the test ends; stop returns Poll's
// error. Unset options are a 1 s wait, a 300 ms window, a quiet logger;
// polls are short (moto keeps a thread per long poll).
func Consume(t *testing.T, cfg aws.Config, url string, c *spend.Consumer, o spendsqs.PollOptions) (stop func() error) {
	if o.Logger == nil {
		o.Logger = gatewaytest.Quiet()
	}
	if o.Wait == 0 {
		o.Wait = time.Second
	}
	if o.Window == 0 {
		o.Window = 300 * time.Millisecond
	}
	o.ShortPoll = true
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
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
