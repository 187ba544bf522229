// Package minting probes issue 29's first item: a key a team admin or an
// organization admin mints for another user carries no more than the
// minter could do. Each test walks one escalation chain step by step
// through the real handlers (admin API and gateway on one port, as local
// mode serves them), on the memory store and on DynamoDB Local, and
// asserts that every step crossing the minter's scope is refused (403,
// LiteLLM's error JSON) and wrote nothing.
package minting

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

func TestMain(m *testing.M) { os.Exit(ddblocal.Main(m)) }

const master = "sk-master"

// config is one mock model behind the master key: requests cost a known,
// non-zero amount and need no network.
const config = `model_list:
  - model_name: m
    litellm_params: {model: mock/gpt-4o-mini, input_cost_per_token: 0.001, output_cost_per_token: 0.001}
router_settings: {num_retries: 0}
general_settings: {master_key: sk-master}
`

// stores runs fn on a gateway over each store.
func stores(t *testing.T, fn func(t *testing.T, p *probe)) {
	t.Run("memory", func(t *testing.T) {
		fn(t, build(t, app.Settings{Store: app.StoreMemory}))
	})
	t.Run("dynamodb", func(t *testing.T) {
		cfg := ddblocal.Config(t)
		fn(t, build(t, app.Settings{Store: app.StoreDynamoDB, AWS: &cfg, Emulator: true, Tables: ddblocal.Tables(t),
			KeyCacheTTL: time.Nanosecond, StoreTimeout: 30 * time.Second}))
	})
}

func build(t *testing.T, s app.Settings) *probe {
	t.Helper()
	s.ConfigYAML = []byte(config)
	s.Logger = gatewaytest.Quiet()
	gw, err := app.Build(context.Background(), s)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	t.Cleanup(func() { _ = gw.Close(context.Background()) })
	return &probe{t: t, gw: gw}
}

// probe calls one gateway.
type probe struct {
	t  *testing.T
	gw *app.Gateway
}

// answer is a response: its status, its body and the body decoded.
type answer struct {
	code int
	body string
	json map[string]any
}

// do sends a request with key and a JSON body ("" for none).
func (p *probe) do(method, path, key, body string) answer {
	p.t.Helper()
	rec := gatewaytest.Do(p.gw.HTTP, gatewaytest.Request(method, path, key, body))
	a := answer{code: rec.Code, body: rec.Body.String()}
	_ = json.Unmarshal(rec.Body.Bytes(), &a.json)
	return a
}

// ok is do, failing the test unless the answer is a 200.
func (p *probe) ok(step, method, path, key, body string) answer {
	p.t.Helper()
	a := p.do(method, path, key, body)
	if a.code != http.StatusOK {
		p.t.Fatalf("%s: %s %s = %d %s, want 200", step, method, path, a.code, a.body)
	}
	return a
}

// refused is do, asserting a 403 in LiteLLM's error JSON that shows none
// of secrets (the ids and key hashes of what lies outside the scope).
func (p *probe) refused(step, method, path, key, body string, secrets ...string) {
	p.t.Helper()
	a := p.do(method, path, key, body)
	e, _ := a.json["error"].(map[string]any)
	if a.code != http.StatusForbidden || e == nil || e["message"] == nil || e["type"] == nil {
		p.t.Errorf("%s: %s %s = %d %s, want 403 with LiteLLM's error JSON", step, method, path, a.code, a.body)
		return
	}
	p.hidden(step, a, secrets...)
}

// hidden asserts that a's body names none of secrets.
func (p *probe) hidden(step string, a answer, secrets ...string) {
	p.t.Helper()
	for _, s := range secrets {
		if strings.Contains(a.body, s) {
			p.t.Errorf("%s: the answer shows %q, outside the key's scope: %s", step, s, a.body)
		}
	}
}

// keysOf lists the hashes of a team's keys (as the master key sees them).
func (p *probe) keysOf(team string) []string {
	p.t.Helper()
	a := p.ok("list keys of "+team, http.MethodGet, "/key/list?size=100&team_id="+team, master, "")
	var out []string
	for _, k := range a.json["keys"].([]any) {
		out = append(out, k.(string))
	}
	return out
}

// spendOf is a team's or an organization's recorded spend, once every
// queued spend event is recorded.
func (p *probe) spendOf(path string) float64 {
	p.t.Helper()
	p.gw.FlushSpend(context.Background())
	a := p.ok("spend of "+path, http.MethodGet, path, master, "")
	for _, at := range []string{"team_info", ""} {
		o := a.json
		if at != "" {
			if v, ok := o[at].(map[string]any); ok {
				o = v
			}
		}
		if s, ok := o["spend"].(float64); ok {
			return s
		}
	}
	p.t.Fatalf("spend of %s: none in %s", path, a.body)
	return 0
}

// str reads a string field of a.
func (a answer) str(path ...string) string {
	var v any = a.json
	for _, f := range path {
		m, _ := v.(map[string]any)
		v = m[f]
	}
	s, _ := v.(string)
	return s
}

// chat is one chat completion through the gateway.
func (p *probe) chat(key string) answer {
	p.t.Helper()
	return p.do(http.MethodPost, "/v1/chat/completions", key, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
}
