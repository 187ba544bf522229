// Package callbackpipe_test runs the logging callbacks whole: gateways
// publishing spend events with what the sinks need, SQS (moto), the spend
// consumer recording into DynamoDB Local and delivering to a fake
// Langfuse, S3 on moto and a fake webhook; and local mode's in-process
// queue with a sink that never answers.
//
//	go test ./test/callbackpipe/   # needs DynamoDB Local and moto_server (./test/run.sh starts both)
package callbackpipe_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sluice-gw/sluice/infra/tables"
	"github.com/sluice-gw/sluice/shared/callbacks/sinks"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/keys/ddbkeys"
	"github.com/sluice-gw/sluice/shared/models"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/ddbspend"
	"github.com/sluice-gw/sluice/shared/spend/spendsqs"
	"github.com/sluice-gw/sluice/test/ddblocal/ddbharness"
)

func TestMain(m *testing.M) { os.Exit(ddbharness.PipelineMain(m)) }

// gatewayConfig prices $1 per million input tokens and $2 per million
// output tokens, and adds litellm (the litellm_settings lines).
func gatewayConfig(up, litellm string) string {
	return ddbharness.GatewayConfig(up, "sk-cb-master", "litellm_settings:\n"+litellm)
}

const secret = "sk-cb-virtual-key"

// createKey makes a key (alias "cb-key") in team "team-cb".
func createKey(t *testing.T, ks keys.Admin) string {
	t.Helper()
	c := context.Background()
	if err := ks.Teams().Create(c, keys.Team{ID: "team-cb"}); err != nil {
		t.Fatal(err)
	}
	hash := keys.HashSecret(secret)
	if err := ks.CreateKey(c, keys.Key{Hash: hash, Alias: "cb-key", TeamID: "team-cb"}); err != nil {
		t.Fatal(err)
	}
	return hash
}

// call makes one chat request and returns its call id.
func call(t *testing.T, url, model, prompt string) string {
	t.Helper()
	body := fmt.Sprintf(`{"model":%q,"user":"cust-1","metadata":{"tags":["t1"],"run":"r-9"},"messages":[{"role":"user","content":%q}]}`, model, prompt)
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	id := resp.Header.Get("X-Litellm-Call-Id")
	if id == "" {
		t.Fatalf("no call id (status %d)", resp.StatusCode)
	}
	return id
}

// pipeline is the spend function: the consumer on the tables, delivering
// the callbacks of cfgYAML's litellm_settings (read as the spend function
// reads them, from the file), polling url until the test ends.
type pipeline struct {
	store *ddbspend.Store
	keys  *ddbkeys.Store
}

func startConsumer(t *testing.T, cfg aws.Config, names tables.Names, url, cfgYAML string, env map[string]string) *pipeline {
	t.Helper()
	st, ks := ddbharness.ConsumerStore(t, cfg, names)
	path := t.TempDir() + "/config.yaml"
	if err := os.WriteFile(path, []byte(cfgYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cb, _, err := config.LoadCallbacksFile(path, getenv)
	if err != nil {
		t.Fatal(err)
	}
	open := models.Opener(func() (string, error) { return "sk-cb-master", nil }) // the gateway config's master key
	d, err := sinks.New(context.Background(), cb, getenv, ks, open, &cfg, gatewaytest.Quiet())
	if err != nil {
		t.Fatal(err)
	}
	c := spend.NewConsumer(st, gatewaytest.Quiet())
	c.Sinks = d
	ddbharness.Consume(t, cfg, url, c, spendsqs.PollOptions{MaxBatch: 100})
	return &pipeline{store: st, keys: ks}
}

// waitFor polls cond every 200 ms until it holds, failing after limit
// (a bound against hanging, not a timing assertion).
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s after %v", what, limit)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// logs returns the spend logs of the key, by request id.
func logs(t *testing.T, st spend.Store, hash string) map[string]spend.Event {
	t.Helper()
	now := time.Now()
	ls, err := st.Logs(context.Background(), spend.LogQuery{KeyHash: hash, From: now.Add(-time.Hour), To: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]spend.Event{}
	for _, l := range ls {
		out[l.RequestID] = l
	}
	return out
}
