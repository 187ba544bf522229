package spendpipe_test

import (
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

// A request's "user" and tags that the gateway must cut (past 256 bytes,
// with a rune across the limit) or that hold invalid UTF-8 still reach the
// totals through SQS: the event used to grow past its limits in JSON and
// go to the dead-letter queue, its spend never counted.
func TestAdversarialUserSpendCounted(t *testing.T) {
	up := upstream(t)
	cfg := awsConfig(t, nil)
	names := ddblocal.Tables(t)
	q := sqslocal.NewQueues(t, time.Second, 1)
	gw, err := app.Build(context.Background(), app.Settings{
		ConfigYAML: []byte(gatewayConfig(up.URL)), Logger: quiet(),
		Store: app.StoreDynamoDB, AWS: &cfg, Emulator: true, Tables: names,
		SpendQueueURL: q.URL,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close(context.Background()) })
	hash := createKey(t, gw.Keys)
	st := consumerStore(t, cfg, names)
	consumer(t, cfg, q.URL, st, spendsqs.PollOptions{})
	srv := httptest.NewServer(gw.Handler)
	defer srv.Close()
	users := []string{
		"cust-ok",
		strings.Repeat("a", 255) + "é",
		strings.Repeat("a", 254) + "😀",
		"bad\xff\xfe" + strings.Repeat("b", 300),
	}
	for _, u := range users {
		body := `{"model":"m","user":"` + u + `","tags":["` + u + `"],"messages":[{"role":"user","content":"hi"}]}`
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e2eSecret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("user %.20q: status %d: %s", u, resp.StatusCode, b)
		}
	}
	gw.FlushSpend(context.Background())
	now := time.Now()
	var logs []spend.Event
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		logs, err = st.Logs(context.Background(), spend.LogQuery{KeyHash: hash, From: now.Add(-time.Hour), To: now.Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if len(logs) >= len(users) || time.Now().After(deadline) {
			break
		}
	}
	if len(logs) != len(users) {
		t.Errorf("%d spend logs of %d requests; %d dead letters", len(logs), len(users), len(sqslocal.Drain(t, q.DLQ)))
	}
	var total int64
	for _, l := range logs {
		total += l.Cost
	}
	if got := rawSpend(t, ddblocal.Client(t), names.Keys, keys.Ref{Kind: keys.KindKey, ID: hash}); got != total || total != int64(len(users))*20_000 {
		t.Errorf("key spend %d nano-USD, logs' sum %d, want %d", got, total, len(users)*20_000)
	}
}
