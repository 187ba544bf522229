package gateway

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
)

// infoFixture serves a config with a master key and a key limited to
// group "a".
func infoFixture(t *testing.T, yaml string) *fixture {
	t.Helper()
	cfg, err := config.Load([]byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	ks := keys.NewMemory()
	if err := ks.CreateKey(context.Background(), keys.Key{Hash: keys.HashSecret("sk-only-a"), Settings: keys.Settings{Models: []string{"a"}}}); err != nil {
		t.Fatal(err)
	}
	return serve(t, testHandler(Options{Config: cfg, Keys: ks}))
}

func (f *fixture) get(t *testing.T, path, key string, v any) int {
	t.Helper()
	resp := f.send(t, http.MethodGet, path, nil, bearer(key)...)
	if resp.StatusCode == 200 && v != nil {
		gatewaytest.Decode(t, resp.Body, v)
	} else {
		io.Copy(io.Discard, resp.Body)
	}
	return resp.StatusCode
}

// /model_group/info answers LiteLLM's ModelGroupInfo per group: every group
// for the master key, the allowed ones for a key, never a provider key.
func TestModelGroupInfo(t *testing.T) {
	f := infoFixture(t, `model_list:
  - model_name: a
    litellm_params: {model: openai/gpt-4o, api_key: sk-upstream-secret, rpm: 10, input_cost_per_token: 0.000002, output_cost_per_token: 0.00001}
    model_info: {max_input_tokens: 1000}
  - model_name: a
    litellm_params: {model: azure/gpt4o, api_base: https://x.openai.azure.com, api_key: az-secret, rpm: 5, input_cost_per_token: 0.000003, output_cost_per_token: 0.00001}
    model_info: {max_input_tokens: 800}
  - model_name: b
    litellm_params: {model: openai/text-embedding-3-small, api_key: sk-upstream-secret, input_cost_per_token: 0.00000002, output_cost_per_token: 0}
general_settings: {master_key: sk-master}
`)
	var all struct{ Data []map[string]any }
	if st := f.get(t, "/model_group/info", "sk-master", &all); st != 200 || len(all.Data) != 2 {
		t.Fatalf("%d %v", st, all)
	}
	a := all.Data[0]
	if a["model_group"] != "a" || fmt.Sprint(a["providers"]) != "[openai azure]" || a["rpm"] != 15.0 || a["max_input_tokens"] != 800.0 ||
		a["input_cost_per_token"] != 0.000003 || a["mode"] != "chat" || a["supports_vision"] != false {
		t.Errorf("group a: %v", a)
	}
	if b := all.Data[1]; b["mode"] != "embedding" {
		t.Errorf("group b: %v", b)
	}
	var mine struct{ Data []map[string]any }
	if st := f.get(t, "/model_group/info", "sk-only-a", &mine); st != 200 || len(mine.Data) != 1 || mine.Data[0]["model_group"] != "a" {
		t.Errorf("key limited to a: %d %v", st, mine)
	}
	var one struct{ Data []map[string]any }
	if f.get(t, "/model_group/info?model_group=b", "sk-master", &one); len(one.Data) != 1 {
		t.Errorf("filter: %v", one)
	}
	if st := f.get(t, "/model_group/info", "", nil); st != 401 {
		t.Errorf("no key: %d", st)
	}
	var raw map[string]any
	f.get(t, "/model_group/info", "sk-master", &raw)
	if s := fmt.Sprint(raw); strings.Contains(s, "secret") {
		t.Errorf("a provider key in %s", s)
	}
}

// /routes lists LiteLLM's {"routes":[{path, methods, name, endpoint}]},
// the gateway's and the admin API's.
func TestRoutes(t *testing.T) {
	f := infoFixture(t, "model_list: []\ngeneral_settings: {master_key: sk-master}\n")
	found := listedRoutes(t, f, "sk-only-a")
	for path, method := range map[string]string{"/v1/chat/completions": "POST", "/v1/completions": "POST", "/key/generate": "POST", "/model_group/info": "GET"} {
		if got := strings.Join(found[path], ","); got != method {
			t.Errorf("%s: %q", path, got)
		}
	}
	if st := f.get(t, "/routes", "", nil); st != 401 {
		t.Errorf("no key: %d", st)
	}
}

// listedRoutes is what /routes lists, asked with key: each path's methods.
func listedRoutes(t *testing.T, f *fixture, key string) map[string][]string {
	t.Helper()
	var out struct {
		Routes []struct {
			Path    string
			Methods []string
		}
	}
	if st := f.get(t, "/routes", key, &out); st != 200 {
		t.Fatalf("/routes: %d", st)
	}
	found := map[string][]string{}
	for _, r := range out.Routes {
		found[r.Path] = append(found[r.Path], r.Methods...)
	}
	return found
}

// /health (master key only) calls every deployment now and sorts them into
// LiteLLM's healthy and unhealthy endpoints, provider keys redacted.
func TestHealth(t *testing.T) {
	var n atomic.Int32
	up := gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if strings.Contains(r.URL.Path, "bad") {
			w.WriteHeader(401)
			io.WriteString(w, `{"error":{"message":"Incorrect API key provided: sk-upstream-secret"}}`)
			return
		}
		io.WriteString(w, completion)
	})
	f := infoFixture(t, fmt.Sprintf(`model_list:
  - model_name: a
    litellm_params: {model: openai/gpt-4o, api_base: %[1]s/good, api_key: sk-upstream-secret}
  - model_name: b
    litellm_params: {model: openai/gpt-4o, api_base: %[1]s/bad, api_key: sk-upstream-secret}
  - model_name: c
    litellm_params: {model: openai/dall-e-3, api_base: %[1]s/good, api_key: sk-upstream-secret}
general_settings: {master_key: sk-master}
`, up.URL))
	var out struct {
		Healthy        []map[string]any `json:"healthy_endpoints"`
		Unhealthy      []map[string]any `json:"unhealthy_endpoints"`
		HealthyCount   int              `json:"healthy_count"`
		UnhealthyCount int              `json:"unhealthy_count"`
	}
	if st := f.get(t, "/health", "sk-master", &out); st != 200 {
		t.Fatal(st)
	}
	calls := n.Load()
	if out.HealthyCount != 1 || out.UnhealthyCount != 2 || out.Healthy[0]["model_name"] != "a" || calls != 2 {
		t.Errorf("%+v (%d calls)", out, calls)
	}
	if s := fmt.Sprint(out); strings.Contains(s, "sk-upstream-secret") {
		t.Errorf("a provider key in %s", s)
	}
	if st := f.get(t, "/health", "sk-master", &out); st != 200 || n.Load() != 4 {
		t.Errorf("a second /health made %d calls in all: answered from a cache", n.Load())
	}
	if st := f.get(t, "/health?model=a", "sk-master", &out); out.HealthyCount+out.UnhealthyCount != 1 {
		t.Errorf("?model=a: %d %+v", st, out)
	}
	if st := f.get(t, "/health", "sk-only-a", nil); st != 403 {
		t.Errorf("a virtual key: %d", st)
	}
}

// /health/readiness is the public probe; /health/readiness/details gives
// LiteLLM's detail fields to any valid key.
func TestReadiness(t *testing.T) {
	f := infoFixture(t, "model_list: []\ngeneral_settings: {master_key: sk-master}\n")
	var pub map[string]any
	if st := f.get(t, "/health/readiness", "", &pub); st != 200 || pub["status"] != "healthy" || len(pub) != 1 {
		t.Errorf("public: %d %v", st, pub)
	}
	var d map[string]any
	if st := f.get(t, "/health/readiness/details", "sk-only-a", &d); st != 200 {
		t.Fatal(st)
	}
	for _, k := range []string{"status", "db", "cache", "litellm_version", "success_callbacks", "use_aiohttp_transport", "log_level", "is_detailed_debug"} {
		if _, ok := d[k]; !ok {
			t.Errorf("details lack %q: %v", k, d)
		}
	}
	if d["db"] != "connected" {
		t.Errorf("db %v", d["db"])
	}
	if st := f.get(t, "/health/readiness/details", "", nil); st != 401 {
		t.Errorf("no key: %d", st)
	}
}

// /health/readiness/details names the configured success callbacks as
// LiteLLM does (litellm.success_callback: success_callback's names, not
// failure_callback's nor callbacks').
func TestReadinessCallbacks(t *testing.T) {
	f := infoFixture(t, `model_list: []
general_settings: {master_key: sk-master}
litellm_settings:
  success_callback: [langfuse, s3, langfuse]
  failure_callback: [generic_api]
  callbacks: [otel]
`)
	var d struct {
		Success []string `json:"success_callbacks"`
	}
	if st := f.get(t, "/health/readiness/details", "sk-master", &d); st != 200 {
		t.Fatal(st)
	}
	if got := strings.Join(d.Success, ","); got != "langfuse,s3" {
		t.Errorf("success_callbacks %q, want langfuse,s3", got)
	}
}
