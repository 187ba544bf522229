package stack_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// story is the user's story, step by step, against the running functions:
// LiteLLM's admin API for a team and a key, the OpenAI API with that key,
// the spend through the queue, and the reports.
type story struct {
	s   *stack
	fns map[string]*function
	m   *mapping

	master  string
	teamID  string
	key     string   // the virtual key's secret
	callIDs []string // x-litellm-call-id of each gateway request with the key
	poison  string   // body of the poison message
}

func (s *stack) story(t *testing.T, fns map[string]*function, m *mapping) {
	st := &story{s: s, fns: fns, m: m, master: s.masterKey(t)}
	// Each step runs even when an earlier one failed, as far as it can, so
	// that one broken part does not hide the state of the others.
	t.Run("admin health", st.adminHealth)
	t.Run("team new", st.teamNew)
	t.Run("key generate", st.keyGenerate)
	t.Run("gateway chat with the key", st.chat)
	t.Run("gateway stream with the key", st.stream)
	t.Run("spend events queued", st.spendQueued)
	t.Run("spend consumed", st.consume)
	t.Run("poison message in the dead-letter queue", st.deadLetter)
	t.Run("key info reports the spend", st.keyInfo)
	t.Run("spend logs have the requests", st.spendLogs)
}

// --- function URL events

// urlEvent is a function URL request (payload 2.0) made from a file of
// events/, with the path, query, key and body the step needs.
func urlEvent(t *testing.T, file, method, path, query, bearer string, body any) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "events", file))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.LambdaFunctionURLRequest
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatalf("events/%s: %v", file, err)
	}
	ev.RawPath, ev.RequestContext.HTTP.Path = path, path
	ev.RawQueryString = query
	ev.RequestContext.HTTP.Method = method
	ev.RequestContext.RequestID = "stack-" + randomHex(8)
	ev.RequestContext.TimeEpoch = time.Now().UnixMilli()
	ev.RequestContext.Time = time.Now().UTC().Format("02/Jan/2006:15:04:05 -0700")
	if ev.Headers == nil {
		ev.Headers = map[string]string{}
	}
	delete(ev.Headers, "authorization")
	if bearer != "" {
		ev.Headers["authorization"] = "Bearer " + bearer
	}
	switch b := body.(type) {
	case nil:
		ev.Body = ""
	case string:
		ev.Body = b
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		ev.Body = string(j)
		ev.Headers["content-type"] = "application/json"
	}
	out, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// eventBody returns the body of a file of events/, so that the steps send
// what the samples send.
func eventBody(t *testing.T, file string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "events", file))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.LambdaFunctionURLRequest
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(ev.Body), &body); err != nil {
		t.Fatalf("events/%s body: %v", file, err)
	}
	return body
}

// httpResult is a function URL response: the buffered admin function's
// (statusCode, headers, body JSON) or the streaming gateway's (a JSON
// prelude, eight NUL bytes, the body).
type httpResult struct {
	status  int
	headers map[string]string
	body    []byte
}

func (r *httpResult) header(name string) string {
	for k, v := range r.headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

func buffered(t *testing.T, out []byte) *httpResult {
	t.Helper()
	var r struct {
		StatusCode      int               `json:"statusCode"`
		Headers         map[string]string `json:"headers"`
		Body            string            `json:"body"`
		IsBase64Encoded bool              `json:"isBase64Encoded"`
		ErrorMessage    string            `json:"errorMessage"`
	}
	if err := json.Unmarshal(out, &r); err != nil || r.StatusCode == 0 {
		t.Fatalf("not a function URL response (%v): %s", err, truncate(out))
	}
	if r.IsBase64Encoded {
		t.Fatalf("base64 body: %s", truncate(out))
	}
	return &httpResult{status: r.StatusCode, headers: r.Headers, body: []byte(r.Body)}
}

func streamed(t *testing.T, out []byte) *httpResult {
	t.Helper()
	i := bytes.Index(out, make([]byte, 8))
	if i < 0 {
		t.Fatalf("no streaming prelude in %s", truncate(out))
	}
	var p struct {
		StatusCode int               `json:"statusCode"`
		Headers    map[string]string `json:"headers"`
	}
	if err := json.Unmarshal(out[:i], &p); err != nil || p.StatusCode == 0 {
		t.Fatalf("prelude %q: %v", out[:i], err)
	}
	return &httpResult{status: p.StatusCode, headers: p.Headers, body: out[i+8:]}
}

// admin calls the admin function with the master key.
func (st *story) admin(t *testing.T, method, path, query string, body any) *httpResult {
	t.Helper()
	r := buffered(t, st.fns["admin"].invoke(t, urlEvent(t, "admin-key-generate.json", method, path, query, st.master, body)))
	t.Logf("admin %s %s?%s -> %d %s", method, path, query, r.status, truncate(r.body))
	return r
}

func decodeJSON(t *testing.T, r *httpResult, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("body: %v: %s", err, truncate(r.body))
	}
}

// --- the steps

// adminHealth: the admin function starts with the master key read from
// moto's SSM and answers its health check (events/admin-health.json).
func (st *story) adminHealth(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "events", "admin-health.json"))
	if err != nil {
		t.Fatal(err)
	}
	r := buffered(t, st.fns["admin"].invoke(t, b))
	if r.status != 200 {
		t.Fatalf("health: %d %s", r.status, r.body)
	}
}

func (st *story) teamNew(t *testing.T) {
	r := st.admin(t, "POST", "/team/new", "", map[string]any{"team_alias": "stack-test-team", "models": []string{"gpt-4o-mini"}})
	if r.status != 200 {
		t.Fatalf("/team/new: %d %s", r.status, r.body)
	}
	var out struct {
		TeamID string `json:"team_id"`
	}
	decodeJSON(t, r, &out)
	if out.TeamID == "" {
		t.Fatalf("/team/new answered no team_id: %s", r.body)
	}
	st.teamID = out.TeamID
}

// keyGenerate sends events/admin-key-generate.json's body, in the team.
func (st *story) keyGenerate(t *testing.T) {
	body := eventBody(t, "admin-key-generate.json")
	body["key_alias"] = "stack-test-key"
	if st.teamID != "" {
		body["team_id"] = st.teamID
	} else {
		t.Log("no team (team new failed): generating a key without one")
	}
	r := st.admin(t, "POST", "/key/generate", "", body)
	if r.status != 200 {
		t.Fatalf("/key/generate: %d %s", r.status, r.body)
	}
	var out struct {
		Key    string `json:"key"`
		TeamID string `json:"team_id"`
	}
	decodeJSON(t, r, &out)
	if !strings.HasPrefix(out.Key, "sk-") {
		t.Fatalf("/key/generate answered no sk- key: %s", r.body)
	}
	if st.teamID != "" && out.TeamID != st.teamID {
		t.Errorf("the key is in team %q, want %q", out.TeamID, st.teamID)
	}
	st.key = out.Key
}

func (st *story) needKey(t *testing.T) {
	t.Helper()
	if st.key == "" {
		t.Fatal("no virtual key: /key/generate failed (see above)")
	}
}

// chat sends events/gateway-chat.json with the virtual key.
func (st *story) chat(t *testing.T) {
	st.needKey(t)
	r := streamed(t, st.fns["gateway"].invoke(t, urlEvent(t, "gateway-chat.json", "POST", "/v1/chat/completions", "", st.key, eventBody(t, "gateway-chat.json"))))
	if r.status != 200 {
		t.Fatalf("chat: %d %s", r.status, truncate(r.body))
	}
	var c struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Usage struct {
			TotalTokens int `json:"total_tokens"`
		} `json:"usage"`
	}
	decodeJSON(t, r, &c)
	if c.Object != "chat.completion" || len(c.Choices) == 0 || c.Choices[0].Message.Content == "" || c.Usage.TotalTokens == 0 {
		t.Errorf("not a chat.completion with usage: %s", truncate(r.body))
	}
	if cost, err := strconv.ParseFloat(r.header("x-litellm-response-cost"), 64); err != nil || cost <= 0 {
		t.Errorf("x-litellm-response-cost %q: want a cost > 0", r.header("x-litellm-response-cost"))
	}
	st.noteCall(t, r)
}

// stream sends events/gateway-chat-stream.json with the virtual key.
func (st *story) stream(t *testing.T) {
	st.needKey(t)
	r := streamed(t, st.fns["gateway"].invoke(t, urlEvent(t, "gateway-chat-stream.json", "POST", "/v1/chat/completions", "", st.key, eventBody(t, "gateway-chat-stream.json"))))
	if r.status != 200 || !strings.HasPrefix(r.header("content-type"), "text/event-stream") {
		t.Fatalf("stream: %d %s %s", r.status, r.header("content-type"), truncate(r.body))
	}
	var data []string
	for _, line := range strings.Split(string(r.body), "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			data = append(data, d)
		}
	}
	if len(data) < 2 || data[len(data)-1] != "[DONE]" {
		t.Errorf("not an SSE stream ending in [DONE]: %s", truncate(r.body))
	}
	st.noteCall(t, r)
}

func (st *story) noteCall(t *testing.T, r *httpResult) {
	t.Helper()
	id := r.header("x-litellm-call-id")
	if id == "" {
		t.Error("no x-litellm-call-id")
		return
	}
	st.callIDs = append(st.callIDs, id)
}

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
