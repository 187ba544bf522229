package stack_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// queueDepth is a queue's visible and in-flight message counts.
func (st *story) queueDepth(t *testing.T, url string) (visible, inFlight int) {
	t.Helper()
	a := st.s.queueAttrs(t, url)
	visible, _ = strconv.Atoi(a["ApproximateNumberOfMessages"])
	inFlight, _ = strconv.Atoi(a["ApproximateNumberOfMessagesNotVisible"])
	return visible, inFlight
}

// spendQueued: the gateway sent one spend message per request to the queue
// its SPEND_QUEUE_URL names (moto's queue URLs are real-looking
// https://sqs.<region>.amazonaws.com/... ones; with AWS_ENDPOINT_URL set the
// SDK still sends to moto). Then the test adds a poison message.
func (st *story) spendQueued(t *testing.T) {
	defer st.sendPoison(t)
	if len(st.callIDs) == 0 {
		t.Fatal("no gateway request succeeded: nothing to spend")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, f := st.queueDepth(t, st.m.queueURL)
		if v+f >= len(st.callIDs) {
			if v+f > len(st.callIDs) {
				t.Errorf("%d messages in the spend queue after %d requests", v+f, len(st.callIDs))
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d messages in the spend queue after %d gateway requests, want one each (is SPEND_QUEUE_URL used? gateway log below)\n%s",
				v+f, len(st.callIDs), truncate([]byte(st.fns["gateway"].logs.String())))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sendPoison puts a message no consumer can read on the spend queue: the
// malformed record of events/spend-batch.json.
func (st *story) sendPoison(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "events", "spend-batch.json"))
	if err != nil {
		t.Fatal(err)
	}
	var batch events.SQSEvent
	if err := json.Unmarshal(b, &batch); err != nil {
		t.Fatal(err)
	}
	for _, r := range batch.Records {
		if !json.Valid([]byte(r.Body)) {
			st.poison = r.Body
		}
	}
	if st.poison == "" {
		t.Fatal("events/spend-batch.json has no malformed record to use as the poison message")
	}
	if _, err := st.s.c.sqs.SendMessage(ctx(t), &sqs.SendMessageInput{QueueUrl: aws.String(st.m.queueURL), MessageBody: aws.String(st.poison)}); err != nil {
		t.Fatalf("send the poison message: %v", err)
	}
}

// consume plays Lambda's poller until the queue is empty: the spend
// messages are consumed and deleted in the first batch; the poison one is
// reported failed, stays, is retried until SQS moves it to the dead-letter
// queue after maxReceiveCount receives.
func (st *story) consume(t *testing.T) {
	p := &poller{s: st.s, m: st.m, fn: st.fns["spend"]}
	maxReceive := st.maxReceiveCount(t)
	rounds := p.drain(t, maxReceive+3)
	if len(rounds) == 0 {
		t.Fatal("nothing to consume")
	}
	first := rounds[0]
	if first.fnError != "" {
		t.Errorf("the spend function failed on its first batch as a whole: %s (it must report the bad record alone)", first.fnError)
	}
	if len(first.received) != len(st.callIDs)+1 {
		t.Errorf("first batch has %d messages, want the %d spend messages and the poison one together (BatchSize %d, window %d s)",
			len(first.received), len(st.callIDs), st.m.batchSize, st.m.window)
	}
	if len(first.deleted) != len(st.callIDs) || len(first.failed) != 1 {
		t.Errorf("first batch: %d deleted, %d failed; want the %d spend messages deleted and the poison one failed", len(first.deleted), len(first.failed), len(st.callIDs))
	}
	poisonID := ""
	if len(first.failed) == 1 {
		poisonID = first.failed[0]
	}
	for i, r := range rounds[1:] {
		if !slices.Equal(r.received, []string{poisonID}) || !slices.Equal(r.failed, []string{poisonID}) {
			t.Errorf("retry %d: received %v, failed %v; want only the poison message %s, failed again", i+1, r.received, r.failed, poisonID)
		}
	}
	if len(rounds) != maxReceive {
		t.Errorf("the poison message was delivered %d times, want maxReceiveCount = %d", len(rounds), maxReceive)
	}
	if v, f := st.queueDepth(t, st.m.queueURL); v+f != 0 {
		t.Errorf("%d messages left in the spend queue", v+f)
	}
}

func (st *story) maxReceiveCount(t *testing.T) int {
	t.Helper()
	var rp struct {
		MaxReceiveCount any `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(st.s.queueAttrs(t, st.m.queueURL)["RedrivePolicy"]), &rp); err != nil {
		t.Fatalf("spend queue redrive policy: %v", err)
	}
	n, err := strconv.Atoi(fmt.Sprint(rp.MaxReceiveCount))
	if err != nil || n <= 0 {
		t.Fatalf("maxReceiveCount %v", rp.MaxReceiveCount)
	}
	return n
}

// deadLetter: the poison message, and only it, is in the dead-letter queue.
func (st *story) deadLetter(t *testing.T) {
	if st.poison == "" {
		t.Fatal("no poison message was sent")
	}
	dlq := st.dlqURL(t)
	out, err := st.s.c.sqs.ReceiveMessage(ctx(t), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(dlq), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
	})
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, m := range out.Messages {
		bodies = append(bodies, aws.ToString(m.Body))
	}
	if !slices.Equal(bodies, []string{st.poison}) {
		t.Errorf("dead-letter queue holds %q, want only the poison message %q", bodies, st.poison)
	}
}

// dlqURL is the URL of the spend queue's dead-letter queue.
func (st *story) dlqURL(t *testing.T) string {
	t.Helper()
	var rp struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
	}
	if err := json.Unmarshal([]byte(st.s.queueAttrs(t, st.m.queueURL)["RedrivePolicy"]), &rp); err != nil {
		t.Fatal(err)
	}
	for _, id := range st.s.resourcesOfType("AWS::SQS::Queue") {
		u := st.s.physical[id]
		if st.s.queueAttrs(t, u)["QueueArn"] == rp.DeadLetterTargetArn {
			return u
		}
	}
	t.Fatalf("no queue of the stack is %s", rp.DeadLetterTargetArn)
	return ""
}

// keyInfo: /key/info reports the key's spend, which the consumer added up.
func (st *story) keyInfo(t *testing.T) {
	st.needKey(t)
	r := st.admin(t, "GET", "/key/info", "key="+url.QueryEscape(st.key), nil)
	if r.status != 200 {
		t.Fatalf("/key/info: %d %s", r.status, r.body)
	}
	var out struct {
		Info struct {
			Spend  *float64 `json:"spend"`
			TeamID string   `json:"team_id"`
		} `json:"info"`
	}
	decodeJSON(t, r, &out)
	if out.Info.Spend == nil || *out.Info.Spend <= 0 {
		t.Errorf("/key/info spend = %v, want > 0 after %d requests", out.Info.Spend, len(st.callIDs))
	}
}

// spendLogs: /spend/logs has a row for each request, by request id and by
// key.
func (st *story) spendLogs(t *testing.T) {
	st.needKey(t)
	if len(st.callIDs) == 0 {
		t.Fatal("no gateway request succeeded")
	}
	type row struct {
		RequestID string   `json:"request_id"`
		Spend     *float64 `json:"spend"`
	}
	for _, id := range st.callIDs {
		r := st.admin(t, "GET", "/spend/logs", "request_id="+url.QueryEscape(id), nil)
		if r.status != 200 {
			t.Errorf("/spend/logs?request_id=%s: %d %s", id, r.status, r.body)
			continue
		}
		var rows []row
		decodeJSON(t, r, &rows)
		if len(rows) != 1 || rows[0].RequestID != id || rows[0].Spend == nil || *rows[0].Spend <= 0 {
			t.Errorf("/spend/logs?request_id=%s = %s, want that request with its spend", id, truncate(r.body))
		}
	}
	r := st.admin(t, "GET", "/spend/logs", "api_key="+url.QueryEscape(st.key), nil)
	if r.status != 200 {
		t.Fatalf("/spend/logs?api_key=: %d %s", r.status, r.body)
	}
	var rows []row
	decodeJSON(t, r, &rows)
	var got []string
	for _, x := range rows {
		got = append(got, x.RequestID)
	}
	slices.Sort(got)
	want := slices.Clone(st.callIDs)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("/spend/logs?api_key=<the key> has requests %v, want %v", got, want)
	}
}
