// Package cooldown probes, as an attacker would, whether one caller can take
// a deployment away from everyone else (issue 29): every failure a caller
// controls (a timeout shorter than the deployment's, a client gone, a
// request the deployment refuses for the caller's own fault, a route it
// lacks) is sent through the real handler (shared/app's assembly) with a
// fake OpenAI-compatible upstream, against the memory stores and the shared
// cooldown store on DynamoDB Local. After each, another key must still be
// served, and the cooldown store must hold nothing for the deployment. The
// deployment's own faults (a 500, a 404 naming its model, a timeout of its
// own) are the controls: they do cool it, so the probes can see a cooldown.
package cooldown

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/infra/tables"
	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

func TestMain(m *testing.M) { os.Exit(ddblocal.Main(m)) }

const (
	attacker = "sk-probe-attacker"
	victim   = "sk-probe-victim"
)

// upstream is a chat-only OpenAI-compatible server (no /v1/responses, no
// /v1/embeddings, as a small model server): its answer depends on the
// request's model and on a word in its messages.
func upstream(t *testing.T) string {
	return gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		body := string(b)
		w.Header().Set("Content-Type", "application/json")
		fail := func(status int, msg string) {
			w.WriteHeader(status)
			_, _ = io.WriteString(w, msg)
		}
		if r.URL.Path != "/v1/chat/completions" {
			fail(http.StatusNotFound, `{"detail":"Not Found"}`) // FastAPI's answer for a route it lacks
			return
		}
		switch {
		case strings.Contains(body, `"model":"missing-model"`):
			fail(http.StatusNotFound, `{"error":{"message":"The model `+"`missing-model`"+` does not exist or you do not have access to it.","type":"invalid_request_error","code":"model_not_found"}}`)
			return
		case strings.Contains(body, `"model":"broken-model"`):
			fail(http.StatusInternalServerError, `{"error":{"message":"The server had an error","type":"server_error"}}`)
			return
		case strings.Contains(body, "SLOW"): // answers after the caller gave up
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return
		case strings.Contains(body, "BADPARAM"):
			fail(http.StatusBadRequest, `{"error":{"message":"Invalid value for 'temperature'","type":"invalid_request_error","param":"temperature","code":"invalid_value"}}`)
			return
		case strings.Contains(body, "TOOLARGE"):
			fail(http.StatusRequestEntityTooLarge, `{"error":{"message":"request entity too large"}}`)
			return
		case strings.Contains(body, "UNPROCESSABLE"):
			fail(http.StatusUnprocessableEntity, `{"detail":"field required"}`)
			return
		case strings.Contains(body, "LONGPROMPT"):
			fail(http.StatusBadRequest, `{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`)
			return
		case strings.Contains(body, "REFUSED"):
			fail(http.StatusBadRequest, `{"error":{"message":"Your request was rejected as a result of our safety system.","type":"invalid_request_error","code":"content_policy_violation"}}`)
			return
		}
		if strings.Contains(body, `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
			return
		}
		_, _ = io.WriteString(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`)
	}).URL
}

// config: group m (deployment dep-m, the one the attacker aims at, with
// its own timeouts of 30 s), and one group per control, each on its own
// deployment. allowed_fails 0: the first failure held against a deployment
// cools it, for a minute.
func config(url string) string {
	dep := func(group, id, model, params string) string {
		return fmt.Sprintf("  - model_name: %s\n    litellm_params: {model: openai/%s, api_base: %s/v1, api_key: k%s}\n    model_info: {id: %s}\n", group, model, url, params, id)
	}
	return "model_list:\n" +
		dep("m", "dep-m", "chat-model", ", timeout: 30, stream_timeout: 30") +
		dep("broken", "dep-broken", "broken-model", "") +
		dep("gone", "dep-gone", "missing-model", "") +
		dep("slow", "dep-slow", "chat-model", ", timeout: 0.2") +
		dep("slow-long", "dep-slow-long", "chat-model", ", timeout: 0.2") +
		"router_settings: {num_retries: 0, allowed_fails: 0, cooldown_time: 60}\n" +
		"general_settings: {master_key: sk-probe-master}\n"
}

// store builds gateways on one store: memory (one instance) or DynamoDB
// Local (instances sharing this test's tables, each with its own caches).
type store struct {
	name  string
	build func(t *testing.T, yaml string) *app.Gateway
}

func stores() []store {
	return []store{
		{"memory", func(t *testing.T, yaml string) *app.Gateway {
			return build(t, app.Settings{ConfigYAML: []byte(yaml), Store: app.StoreMemory})
		}},
		{"dynamodb", func(t *testing.T, yaml string) *app.Gateway {
			names := sharedTables(t)
			cfg := ddblocal.Config(t)
			// A loaded machine slows DynamoDB Local: a store slower than
			// the default bound would refuse the victim's key (503), which
			// is not what these probes look at.
			return build(t, app.Settings{ConfigYAML: []byte(yaml), Store: app.StoreDynamoDB, AWS: &cfg, Emulator: true, Tables: names, StoreTimeout: 30 * time.Second})
		}},
	}
}

// tablesOf are each test's DynamoDB tables, made once: its instances
// share them.
var tablesOf = map[string]tables.Names{}

func sharedTables(t *testing.T) tables.Names {
	t.Helper()
	if n, ok := tablesOf[t.Name()]; ok {
		return n
	}
	n := ddblocal.Tables(t)
	tablesOf[t.Name()] = n
	return n
}

func build(t *testing.T, s app.Settings) *app.Gateway {
	t.Helper()
	s.Logger = gatewaytest.Quiet()
	gw, err := app.Build(context.Background(), s)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	t.Cleanup(func() { gw.Close(context.Background()) })
	ctx := context.Background()
	for _, secret := range []string{attacker, victim} {
		if err := gw.Keys.CreateKey(ctx, keys.Key{Hash: keys.HashSecret(secret), Alias: secret}); err != nil && !errors.Is(err, apierr.ErrExists) {
			t.Fatal(err)
		}
	}
	return gw
}

// probe is one request a caller sends.
type probe struct {
	name, path, body string
	header           map[string]string
	cancelAfter      time.Duration // the client goes away after this long
	status           int           // what the caller gets (0: the client went away)
}

func send(t *testing.T, h http.Handler, key string, p probe) int {
	t.Helper()
	path := p.path
	if path == "" {
		path = "/v1/chat/completions"
	}
	req := gatewaytest.Request(http.MethodPost, path, key, p.body)
	for k, v := range p.header {
		req.Header.Set(k, v)
	}
	if p.cancelAfter > 0 {
		ctx, cancel := context.WithTimeout(req.Context(), p.cancelAfter)
		defer cancel()
		req = req.WithContext(ctx)
	}
	rec := gatewaytest.Do(h, req)
	if p.status != 0 && rec.Code != p.status {
		t.Logf("%s: %d %s", p.name, rec.Code, rec.Body)
	}
	return rec.Code
}

// served checks that the victim's key is served by group m.
func served(t *testing.T, h http.Handler, after string) {
	t.Helper()
	for _, body := range []string{`{"model":"m","messages":[{"role":"user","content":"hi"}]}`, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`} {
		rec := gatewaytest.Do(h, gatewaytest.Request(http.MethodPost, "/v1/chat/completions", victim, body))
		if rec.Code != http.StatusOK {
			t.Fatalf("after %s, another key gets %d: %s", after, rec.Code, rec.Body)
		}
	}
}

// cooling lists which of ids the gateway's cooldown store holds as cooling.
func cooling(t *testing.T, gw *app.Gateway, ids ...string) map[string]time.Time {
	t.Helper()
	got, err := gw.Cooldowns.CoolingDown(context.Background(), ids, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func msg(word string) string {
	return `"messages":[{"role":"user","content":"` + word + `"}]`
}

// The caller-controlled failures, one by one: each fails the attacker's own
// request, and none cools dep-m.
var callerProbes = []probe{
	{name: "body timeout", body: `{"model":"m","timeout":0.05,` + msg("SLOW") + `}`, status: 504},
	{name: "body request_timeout", body: `{"model":"m","request_timeout":0.05,` + msg("SLOW") + `}`, status: 504},
	{name: "x-litellm-timeout", body: `{"model":"m",` + msg("SLOW") + `}`, header: map[string]string{"x-litellm-timeout": "0.05"}, status: 504},
	{name: "timeout of a stream", body: `{"model":"m","stream":true,"timeout":0.05,` + msg("SLOW") + `}`, status: 504},
	{name: "stream_timeout", body: `{"model":"m","stream":true,"stream_timeout":0.05,` + msg("SLOW") + `}`, status: 504},
	{name: "x-litellm-stream-timeout", body: `{"model":"m","stream":true,` + msg("SLOW") + `}`, header: map[string]string{"x-litellm-stream-timeout": "0.05"}, status: 504},
	{name: "client disconnect", body: `{"model":"m",` + msg("SLOW") + `}`, cancelAfter: 50 * time.Millisecond},
	{name: "client disconnect, stream", body: `{"model":"m","stream":true,` + msg("SLOW") + `}`, cancelAfter: 50 * time.Millisecond},
	{name: "400", body: `{"model":"m",` + msg("BADPARAM") + `}`, status: 400},
	{name: "413", body: `{"model":"m",` + msg("TOOLARGE") + `}`, status: 400},
	{name: "422", body: `{"model":"m",` + msg("UNPROCESSABLE") + `}`, status: 400},
	{name: "context window", body: `{"model":"m",` + msg("LONGPROMPT") + `}`, status: 400},
	{name: "content policy", body: `{"model":"m",` + msg("REFUSED") + `}`, status: 400},
	// Served through chat since issue 31 (the missing route learnt): a 200.
	{name: "404: /v1/responses on a chat-only server", path: "/v1/responses", body: `{"model":"m","input":"hi"}`, status: 200},
	{name: "404: /v1/embeddings on a chat-only server", path: "/v1/embeddings", body: `{"model":"m","input":"hi"}`, status: 502},
}

// controlProbes are the deployment's own faults, each on its own group:
// they cool their deployment, as before.
var controlProbes = []struct {
	probe
	deployment string
}{
	{probe{name: "500", body: `{"model":"broken",` + msg("hi") + `}`, status: 502}, "dep-broken"},
	{probe{name: "404 naming the deployment's model", body: `{"model":"gone",` + msg("hi") + `}`, status: 502}, "dep-gone"},
	{probe{name: "timeout of the deployment's own", body: `{"model":"slow",` + msg("SLOW") + `}`, status: 504}, "dep-slow"},
	{probe{name: "timeout of the request, above the deployment's", body: `{"model":"slow-long","timeout":0.3,` + msg("SLOW") + `}`, status: 504}, "dep-slow-long"},
}

// Each probe on a gateway of its own (its own tables on DynamoDB), so that
// each kind shows on its own.
func TestCallerFailuresNeverCool(t *testing.T) {
	url := upstream(t)
	for _, st := range stores() {
		t.Run(st.name, func(t *testing.T) {
			for _, p := range callerProbes {
				t.Run(p.name, func(t *testing.T) {
					gw := st.build(t, config(url))
					for range 3 { // past allowed_fails whatever it is
						if got := send(t, gw.HTTP, attacker, p); p.status != 0 && got != p.status {
							t.Fatalf("the attacker got %d, want %d", got, p.status)
						}
					}
					served(t, gw.HTTP, p.name)
					if c := cooling(t, gw, "dep-m"); len(c) > 0 {
						t.Fatalf("dep-m cooling: %v", c)
					}
					if st.name == "dynamodb" { // the shared store, read by a fresh instance
						other := st.build(t, config(url))
						if c := cooling(t, other, "dep-m"); len(c) > 0 {
							t.Fatalf("another instance sees dep-m cooling: %v", c)
						}
						served(t, other.HTTP, p.name+", on another instance")
					}
				})
			}
			for _, c := range controlProbes {
				t.Run("control: "+c.name, func(t *testing.T) {
					gw := st.build(t, config(url))
					if got := send(t, gw.HTTP, attacker, c.probe); got != c.status {
						t.Fatalf("%d, want %d", got, c.status)
					}
					if len(cooling(t, gw, c.deployment)) == 0 {
						t.Fatalf("%s does not cool", c.deployment)
					}
					if st.name == "dynamodb" {
						if len(cooling(t, st.build(t, config(url)), c.deployment)) == 0 {
							t.Fatalf("another instance does not see %s cooling", c.deployment)
						}
					}
					served(t, gw.HTTP, "a control on another group")
				})
			}
		})
	}
}

// One key sends 100 requests with tiny timeouts and for a route the
// deployment lacks; every other key is still served, on every instance.
func TestOneKeyCannotCoolAGroup(t *testing.T) {
	url := upstream(t)
	for _, st := range stores() {
		t.Run(st.name, func(t *testing.T) {
			gw := st.build(t, config(url))
			for i := range 100 {
				p := probe{body: `{"model":"m","timeout":0.01,` + msg("SLOW") + `}`, status: 504}
				if i%2 == 1 {
					p = probe{path: "/v1/embeddings", body: `{"model":"m","input":"hi"}`, status: 502}
				}
				if got := send(t, gw.HTTP, attacker, p); got != p.status {
					t.Fatalf("attack %d: %d, want %d", i, got, p.status)
				}
			}
			served(t, gw.HTTP, "100 requests of one key")
			if c := cooling(t, gw, "dep-m"); len(c) > 0 {
				t.Fatalf("dep-m cooling: %v", c)
			}
			if st.name == "dynamodb" {
				served(t, st.build(t, config(url)).HTTP, "100 requests of one key, on another instance")
			}
		})
	}
}
