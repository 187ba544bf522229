package spendpipe_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/spendsqs"
	"github.com/sluice-gw/sluice/test/ddblocal"
	"github.com/sluice-gw/sluice/test/sqslocal"
)

const e2eSecret = "sk-e2e-virtual-key"

// want is what one request of the scenario must leave as its spend log.
type want struct {
	status                   spend.Status
	prompt, completion, cost int64 // -1: any positive value (estimated)
	stream                   bool
}

// scenario sends, with a virtual key: a non-streamed request, a streamed
// one, a failed one and a stream whose client disconnects after the first
// chunk. It returns each request's call id and what its log must say.
func scenario(t *testing.T, h http.Handler) map[string]want {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	out := map[string]want{}
	post := func(ctx context.Context, body string) *http.Response {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e2eSecret)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	one := func(body string, status int, w want) {
		resp := post(context.Background(), body)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != status {
			t.Fatalf("%s: status %d, want %d: %s", body, resp.StatusCode, status, b)
		}
		out[resp.Header.Get("X-Litellm-Call-Id")] = w
	}
	// $1/M in, $2/M out: 10 in + 5 out = 20,000 nano-USD; 10 in + 3 out = 16,000.
	one(`{"model":"m","user":"cust-1","messages":[{"role":"user","content":"hi"}]}`, 200,
		want{status: spend.StatusSuccess, prompt: 10, completion: 5, cost: 20_000})
	one(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`, 200,
		want{status: spend.StatusSuccess, prompt: 10, completion: 3, cost: 16_000, stream: true})
	one(`{"model":"broken","messages":[{"role":"user","content":"hi"}]}`, 502,
		want{status: spend.StatusFailure})
	// The client goes away after the first chunk.
	ctx, cancel := context.WithCancel(context.Background())
	resp := post(ctx, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hang"}]}`)
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "data: ") {
		t.Fatalf("first chunk: %q, %v", line, err)
	}
	cancel()
	resp.Body.Close()
	out[resp.Header.Get("X-Litellm-Call-Id")] = want{status: spend.StatusDisconnected, prompt: -1, completion: -1, cost: -1, stream: true}
	return out
}

// checkScenario waits until st holds the scenario's four logs, then checks
// each log, the key's spend and the key's daily row.
func checkScenario(t *testing.T, st spend.Store, keySpend func() int64, hash string, wants map[string]want, flush func()) {
	t.Helper()
	c := context.Background()
	now := time.Now()
	var logs []spend.Event
	deadline := time.Now().Add(30 * time.Second)
	for {
		flush()
		var err error
		logs, err = st.Logs(c, spend.LogQuery{KeyHash: hash, From: now.Add(-time.Hour), To: now.Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if len(logs) >= len(wants) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(logs) != len(wants) {
		t.Fatalf("%d spend logs, want %d: %+v", len(logs), len(wants), logs)
	}
	var total int64
	var counters spend.Counters
	for _, l := range logs {
		w, ok := wants[l.RequestID]
		if !ok {
			t.Errorf("log of an unknown request %s", l.RequestID)
			continue
		}
		delete(wants, l.RequestID) // each once
		if l.Status != w.status || l.Stream != w.stream || !l.CostKnown {
			t.Errorf("%s: status %s stream %v cost known %v; want %s, %v, known", l.RequestID, l.Status, l.Stream, l.CostKnown, w.status, w.stream)
		}
		switch {
		case w.cost >= 0 && (l.Cost != w.cost || l.PromptTokens != w.prompt || l.CompletionTokens != w.completion):
			t.Errorf("%s (%s): tokens %d+%d cost %d; want %d+%d, %d", l.RequestID, l.Status, l.PromptTokens, l.CompletionTokens, l.Cost, w.prompt, w.completion, w.cost)
		case w.cost < 0 && (l.Cost <= 0 || l.PromptTokens <= 0 || !l.UsageEstimated):
			t.Errorf("%s (%s): tokens %d+%d cost %d estimated %v; want an estimated, positive cost", l.RequestID, l.Status, l.PromptTokens, l.CompletionTokens, l.Cost, l.UsageEstimated)
		}
		if l.KeyHash != hash || l.TeamID != "team-e2e" || l.ModelGroup == "" {
			t.Errorf("%s: key %s team %q group %q", l.RequestID, l.KeyHash, l.TeamID, l.ModelGroup)
		}
		total += l.Cost
		counters.Add(&l)
	}
	if got := keySpend(); got != total {
		t.Errorf("key spend %d nano-USD, want the logs' sum %d", got, total)
	}
	rows, err := st.Daily(c, spend.DailyQuery{KeyHash: hash, From: now.Add(-24 * time.Hour), To: now.Add(24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	var sum spend.Counters
	for _, r := range rows {
		sum = sum.Plus(r.Counters)
	}
	if sum != counters || sum.Requests != 4 || sum.Successes != 2 || sum.Failures != 2 {
		t.Errorf("daily rows add up to %+v, want %+v (4 requests, 2 successes)", sum, counters)
	}
}

func createKey(t *testing.T, ks keys.Admin) string {
	t.Helper()
	c := context.Background()
	max := 100.0
	if err := ks.Teams().Create(c, keys.Team{ID: "team-e2e", Settings: keys.Settings{Budget: keys.Budget{MaxBudget: &max}}}); err != nil {
		t.Fatal(err)
	}
	hash := keys.HashSecret(e2eSecret)
	if err := ks.CreateKey(c, keys.Key{Hash: hash, Alias: "e2e", TeamID: "team-e2e", Settings: keys.Settings{Budget: keys.Budget{MaxBudget: &max}}}); err != nil {
		t.Fatal(err)
	}
	return hash
}

// Local mode: memory store, in-process queue, no AWS.
func TestEndToEndLocal(t *testing.T) {
	up := upstream(t)
	gw, err := app.Build(context.Background(), app.Settings{ConfigYAML: []byte(gatewayConfig(up.URL)), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close(context.Background()) })
	hash := createKey(t, gw.Keys)
	wants := scenario(t, gw.Handler)
	checkScenario(t, gw.Spend, func() int64 {
		k, err := gw.Keys.GetKey(context.Background(), hash)
		if err != nil {
			t.Fatal(err)
		}
		return keys.Nanos(k.Spend)
	}, hash, wants, func() { gw.FlushSpend(context.Background()) })
}

// -store dynamodb with SPEND_QUEUE_URL: the gateway sends to SQS (batched
// as a server; held until the after-response flush as in Lambda), a local
// consumer records into the tables.
func TestEndToEndDynamoDBAndSQS(t *testing.T) {
	up := upstream(t)
	cfg := awsConfig(t, nil)
	for _, lambda := range []bool{false, true} {
		name := "server"
		if lambda {
			name = "lambda"
		}
		t.Run(name, func(t *testing.T) {
			names := ddblocal.Tables(t)
			q := sqslocal.NewQueues(t, 5*time.Second, 3)
			gw, err := app.Build(context.Background(), app.Settings{
				ConfigYAML: []byte(gatewayConfig(up.URL)), Logger: quiet(),
				Store: app.StoreDynamoDB, AWS: &cfg, Emulator: true, Tables: names,
				SpendQueueURL: q.URL, Lambda: lambda,
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { gw.Close(context.Background()) })
			hash := createKey(t, gw.Keys)
			st := consumerStore(t, cfg, names)
			consumer(t, cfg, q.URL, st, spendsqs.PollOptions{})
			wants := scenario(t, gw.Handler)
			checkScenario(t, st, func() int64 {
				return rawSpend(t, ddblocal.Client(t), names.Keys, keys.Ref{Kind: keys.KindKey, ID: hash})
			}, hash, wants, func() { gw.FlushSpend(context.Background()) })
			if s := st.Stats(); s.Transactions == 0 {
				t.Errorf("consumer stats %+v", s)
			}
		})
	}
}
