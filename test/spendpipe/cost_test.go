package spendpipe_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/spendsqs"
	"github.com/sluice-gw/sluice/test/ddblocal"
	"github.com/sluice-gw/sluice/test/sqslocal"
)

// On-demand prices, us-east-1 (AWS price pages, 2025): DynamoDB $0.625 per
// million write request units and $0.125 per million read request units
// (since the November 2024 price cut); SQS standard queue $0.40 per million
// requests (each 64 KB of a request is one); Lambda $0.20 per million
// invocations. Lambda duration and storage are not counted.
const (
	priceWRU       = 0.625 / 1e6
	priceRRU       = 0.125 / 1e6
	priceSQS       = 0.40 / 1e6
	priceInvoke    = 0.20 / 1e6
	costTargetUSD  = 2.5 // per million requests, the target
	costRequests   = 400
	costBatchSize  = 100 // the event source mapping's BatchSize in template.yaml
	costKeysPerReq = 2   // the key and its team
)

// TestSpendCost counts what the spend pipeline costs per request in AWS
// calls, as deployed: each request through a gateway in Lambda mode (one
// SQS message sent after the response), then the consumer's batches of 100
// through SQS into DynamoDB; a key with a budget in a team with a budget.
// It prints dollars per million requests and fails above the target.
//
//	go test -run TestSpendCost -v ./test/spendpipe/
func TestSpendCost(t *testing.T) {
	up := upstream(t)
	gwCalls, conCalls := &Calls{}, &Calls{}
	gwCfg, conCfg := awsConfig(t, gwCalls), awsConfig(t, conCalls)
	names := ddblocal.Tables(t)
	q := sqslocal.NewQueues(t, 60*time.Second, 3)
	gw, err := app.Build(context.Background(), app.Settings{
		ConfigYAML: []byte(gatewayConfig(up.URL)), Logger: quiet(),
		Store: app.StoreDynamoDB, AWS: &gwCfg, Emulator: true, Tables: names,
		SpendQueueURL: q.URL, Lambda: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	createKey(t, gw.Keys)
	// Lambda runs the after-response hook once the handler has returned;
	// the client can have the whole answer before that, so wait for it here
	// too, or the last request's event is left unflushed.
	returned := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { returned <- struct{}{} }()
		gw.Handler.ServeHTTP(w, r)
	}))
	defer srv.Close()
	var eventBytes int
	for i := range costRequests {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions",
			strings.NewReader(fmt.Sprintf(`{"model":"m","user":"customer-%d","messages":[{"role":"user","content":"hi"}]}`, i%3)))
		req.Header.Set("Authorization", "Bearer "+e2eSecret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		<-returned
		gw.FlushSpend(context.Background()) // the Lambda after-response hook
	}
	sends := gwCalls.Get("SQS.SendMessageBatch")
	gwDynamo := 0
	for op, n := range gwCalls.snapshot() {
		if strings.HasPrefix(op, "DynamoDB.") {
			gwDynamo += n
		}
	}

	// The consumer, in batches of up to 100 as the event source mapping
	// delivers them.
	st := consumerStore(t, conCfg, names)
	c := spend.NewConsumer(st, quiet())
	var invocations atomic.Int64
	var recorded atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- spendsqs.Poll(ctx, sqs.NewFromConfig(conCfg), q.URL, func(ctx context.Context, b events.SQSEvent) (events.SQSEventResponse, error) {
			invocations.Add(1)
			recorded.Add(int64(len(b.Records)))
			return c.HandleSQS(ctx, b)
		}, spendsqs.PollOptions{MaxBatch: costBatchSize, Window: 2 * time.Second, Wait: 200 * time.Millisecond, ShortPoll: true, Logger: quiet()})
	}()
	waitDrained(t, q.URL, 5*time.Minute)
	cancel()
	<-done
	logs, err := st.Logs(context.Background(), spend.LogQuery{From: time.Now().Add(-time.Hour), Limit: 10 * costRequests})
	if err != nil || len(logs) != costRequests {
		t.Fatalf("%d logs (%v), want %d", len(logs), err, costRequests)
	}
	for i := range logs {
		eventBytes += len(spend.Encode(&logs[i]))
	}
	stats := st.Stats()
	n := float64(costRequests)
	wru := float64(stats.EstimatedWriteUnits)
	if stats.WriteUnits > 0 {
		wru = max(wru, stats.WriteUnits)
	}
	// Reads: the records of each transaction, strongly consistent, < 4 KB:
	// one unit each.
	rru := float64(stats.Transactions * costKeysPerReq)
	// As deployed, a full batch of 100 needs 10 ReceiveMessage and 10
	// DeleteMessageBatch calls; count what the poller made, but no fewer.
	receives, deletes := conCalls.Get("SQS.ReceiveMessage"), conCalls.Get("SQS.DeleteMessageBatch")
	sqsPerReq := float64(sends)/n + max(float64(receives), n/10)/n + max(float64(deletes), n/10)/n
	rows := []struct {
		what     string
		perReq   float64
		unitCost float64
	}{
		{"SQS SendMessageBatch (gateway, Lambda: one per request)", float64(sends) / n, priceSQS},
		{"SQS ReceiveMessage + DeleteMessageBatch (event source mapping)", sqsPerReq - float64(sends)/n, priceSQS},
		{"DynamoDB write units (transactional: logs, daily rows, key+team)", wru / n, priceWRU},
		{"DynamoDB read units (records read before each transaction)", rru / n, priceRRU},
		{fmt.Sprintf("consumer invocations (batches of up to %d)", costBatchSize), float64(invocations.Load()) / n, priceInvoke},
	}
	total := 0.0
	var b strings.Builder
	fmt.Fprintf(&b, "spend pipeline cost, %d requests, key + team with budgets, events %d B on average, %d transactions (%d items):\n",
		costRequests, eventBytes/costRequests, stats.Transactions, stats.TransactItems)
	for _, r := range rows {
		usd := r.perReq * r.unitCost * 1e6
		total += usd
		fmt.Fprintf(&b, "  %-68s %7.4f /request  $%.3f per million requests\n", r.what, r.perReq, usd)
	}
	fmt.Fprintf(&b, "  %-68s %7s           $%.3f per million requests (target $%.2f)\n", "total", "", total, costTargetUSD)
	fmt.Fprintf(&b, "  gateway DynamoDB calls per request (keys, admission; none for spend): %.2f; write units reported by DynamoDB Local: %.0f, estimated from item sizes: %d\n",
		float64(gwDynamo)/n, stats.WriteUnits, stats.EstimatedWriteUnits)
	t.Log(b.String())
	if math.IsNaN(total) || total > costTargetUSD {
		t.Errorf("$%.3f per million requests, above the $%.2f target", total, costTargetUSD)
	}
	if stats.EstimatedWriteUnits/int64(costRequests) > 3 {
		t.Errorf("%.2f write units per request: a log item outgrew 1 KB?", wru/n)
	}
}

func (c *Calls) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.n))
	for k, v := range c.n {
		out[k] = v
	}
	return out
}
