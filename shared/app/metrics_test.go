package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/metrics"
	"github.com/sluice-gw/sluice/shared/metrics/metricstest"
)

// metricsUpstream answers chat completions: 500 on /fail, else a JSON
// completion, or an SSE stream when asked for one.
func metricsUpstream(t *testing.T) *httptest.Server {
	srv := gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.HasPrefix(r.URL.Path, "/fail") {
			w.WriteHeader(500)
			io.WriteString(w, `{"error":{"message":"boom"}}`)
			return
		}
		if !bytes.Contains(body, []byte(`"stream":true`)) {
			io.WriteString(w, okBody)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{
			`{"id":"s","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant"}}]}`,
			`{"id":"s","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}]}`,
			`{"id":"s","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			`{"id":"s","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2,"total_tokens":9}}`,
			`[DONE]`,
		} {
			fmt.Fprintf(w, "data: %s\n\n", ev)
			w.(http.Flusher).Flush()
		}
	})
	return srv
}

func metricsYAML(up string, masterKey string) string {
	y := fmt.Sprintf(`model_list:
  - model_name: ok
    litellm_params: {model: openai/x, api_base: %[1]s/v1, api_key: k, input_cost_per_token: 0.000001, output_cost_per_token: 0.000002}
    model_info: {id: dep-ok}
  - model_name: primary
    litellm_params: {model: openai/x, api_base: %[1]s/fail, api_key: k}
    model_info: {id: dep-fail}
  - model_name: backup
    litellm_params: {model: openai/x, api_base: %[1]s/v1, api_key: k}
    model_info: {id: dep-backup}
  - model_name: capped
    litellm_params: {model: openai/x, api_base: %[1]s/v1, api_key: k, rpm: 1}
    model_info: {id: dep-capped}
router_settings:
  num_retries: 0
  allowed_fails: 0
  cooldown_time: 60
  fallbacks: [{primary: [backup]}]
`, up)
	if masterKey != "" {
		y += "general_settings: {master_key: " + masterKey + "}\n"
	}
	return y
}

func buildWithMetrics(t *testing.T, yaml string, s app.Settings) *app.Gateway {
	t.Helper()
	s.ConfigYAML = []byte(yaml)
	s.Logger = gatewaytest.Quiet()
	gw, err := app.Build(context.Background(), s)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	t.Cleanup(func() { _ = gw.Close(context.Background()) })
	return gw
}

func do(h http.Handler, method, path, key, body string) *httptest.ResponseRecorder {
	return gatewaytest.Do(h, gatewaytest.Request(method, path, key, body))
}

// scrape reads /metrics with key and returns its samples.
func scrape(t *testing.T, h http.Handler, key string) []metricstest.Sample {
	t.Helper()
	rec := do(h, http.MethodGet, "/metrics", key, "")
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("/metrics: %d %q %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	_, samples := metricstest.Parse(t, rec.Body.String())
	return samples
}

// TestMetricsEndToEnd: a success, a stream, a fallback, a 429 by a key's
// RPM limit, a budget refusal and an unknown model, through the whole
// gateway, then /metrics with the master key.
func TestMetricsEndToEnd(t *testing.T) {
	const master = "sk-metrics-master"
	up := metricsUpstream(t)
	reg := metrics.New(metrics.Options{Prometheus: true})
	gw := buildWithMetrics(t, metricsYAML(up.URL, master), app.Settings{Metrics: reg})
	h := gw.HTTP

	admin := func(path, body string) map[string]any {
		t.Helper()
		rec := do(h, http.MethodPost, path, master, body)
		if rec.Code != 200 {
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
		var m map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	admin("/team/new", `{"team_id":"team-1","team_alias":"Team One"}`)
	key := admin("/key/generate", `{"key_alias":"alias-a","team_id":"team-1"}`)["key"].(string)
	limited := admin("/key/generate", `{"key_alias":"alias-limited","rpm_limit":1}`)["key"].(string)
	broke := admin("/key/generate", `{"key_alias":"alias-broke","max_budget":0}`)["key"].(string)

	chat := func(key, body string, want int) *httptest.ResponseRecorder {
		t.Helper()
		rec := do(h, http.MethodPost, "/v1/chat/completions", key, body)
		if rec.Code != want {
			t.Fatalf("%s: %d, want %d: %s", body, rec.Code, want, rec.Body)
		}
		return rec
	}
	const hi = `"messages":[{"role":"user","content":"hi"}]`
	chat(key, `{"model":"ok",`+hi+`}`, 200)
	if rec := chat(key, `{"model":"ok","stream":true,`+hi+`}`, 200); !strings.Contains(rec.Body.String(), "[DONE]") {
		t.Fatalf("stream: %s", rec.Body)
	}
	chat(key, `{"model":"primary","disable_fallbacks":true,`+hi+`}`, 502) // dep-fail fails and cools down
	chat("sk-wrong", `{"model":"ok",`+hi+`}`, 401)
	if rec := chat(key, `{"model":"primary",`+hi+`}`, 200); rec.Header().Get("X-Litellm-Model-Id") != "dep-backup" {
		t.Fatalf("fallback served by %q", rec.Header().Get("X-Litellm-Model-Id"))
	}
	chat(limited, `{"model":"ok",`+hi+`}`, 200)
	chat(limited, `{"model":"ok",`+hi+`}`, 429)
	chat(broke, `{"model":"ok",`+hi+`}`, 400)
	chat(key, `{"model":"capped",`+hi+`}`, 200)
	chat(key, `{"model":"capped",`+hi+`}`, 429) // the deployment's own rpm
	for i := range 20 {
		chat(key, fmt.Sprintf(`{"model":"random-%d",`+hi+`}`, i), 404)
	}

	s := scrape(t, h, master)
	check := func(name string, labels map[string]string, want float64) {
		t.Helper()
		if got, n := metricstest.Sum(s, name, labels); got != want || n == 0 {
			t.Errorf("%s%v = %v (%d series), want %v", name, labels, got, n, want)
		}
	}
	check(metrics.TotalRequests, map[string]string{"requested_model": "ok", "model_group": "ok", "api_key_alias": "alias-a", "team": "team-1", "status_code": "200"}, 2)
	check(metrics.TotalRequests, map[string]string{"requested_model": "primary", "model_group": "backup", "status_code": "200"}, 1)
	check(metrics.TotalRequests, map[string]string{"api_key_alias": "alias-limited", "status_code": "429"}, 1)
	check(metrics.FailedRequests, map[string]string{"api_key_alias": "alias-limited", "status_code": "429"}, 1)
	check(metrics.RateLimited, map[string]string{"scope": "key"}, 1)
	check(metrics.RateLimited, map[string]string{"scope": "team"}, 0)
	check(metrics.RateLimited, map[string]string{"scope": "deployment"}, 1)
	check(metrics.BudgetExceeded, map[string]string{"scope": "key"}, 1)
	check(metrics.TotalRequests, map[string]string{"requested_model": "unknown", "status_code": "404"}, 20)
	if _, n := metricstest.Sum(s, metrics.TotalRequests, map[string]string{"requested_model": "random-3"}); n != 0 {
		t.Errorf("an unknown model made its own series")
	}
	check(metrics.FallbacksOK, map[string]string{"requested_model": "primary", "fallback_model": "backup"}, 1)
	check(metrics.Responses5xx, map[string]string{"model_group": "primary"}, 1)
	check(metrics.FailedRequests, map[string]string{"model_group": "primary", "status_code": "502"}, 1)
	check(metrics.TotalRequests, map[string]string{"requested_model": "unknown", "model_group": "", "status_code": "401"}, 1)
	check(metrics.CooledDown, map[string]string{"model_group": "primary", "deployment": "dep-fail"}, 1)
	check(metrics.DeploymentState, map[string]string{"deployment": "dep-fail"}, 2)
	check(metrics.DeploymentState, map[string]string{"deployment": "dep-ok"}, 0)
	check(metrics.TimeToFirstToken+"_count", map[string]string{"model_group": "ok", "deployment": "dep-ok"}, 1)
	check(metrics.Latency+"_count", map[string]string{"model_group": "ok"}, 4)
	check(metrics.InputTokens, map[string]string{"deployment": "dep-ok", "api_key_alias": "alias-a"}, 5+7)
	check(metrics.OutputTokens, map[string]string{"deployment": "dep-ok", "api_key_alias": "alias-a"}, 1+2)
	if got, _ := metricstest.Sum(s, metrics.Spend, map[string]string{"deployment": "dep-ok", "api_key_alias": "alias-a"}); got < 0.0000179 || got > 0.0000181 {
		t.Errorf("spend of alias-a = %v, want 12 in + 3 out tokens = 0.000018", got)
	}
	check(metrics.FailOpen, nil, 0)
	check(metrics.StoreErrors, map[string]string{"store": "dynamodb"}, 0)
	for _, x := range s {
		for k, v := range x.Labels {
			if strings.HasPrefix(v, "sk-") {
				t.Errorf("%s carries a key in label %s", x.Name, k)
			}
		}
	}
}

// TestMetricsNeedsMasterKey: /metrics answers 401 (OpenAI-style) without
// the master key, with a wrong one, with a virtual key, and when no master
// key is set at all.
func TestMetricsNeedsMasterKey(t *testing.T) {
	const master = "sk-metrics-master"
	up := metricsUpstream(t)
	gw := buildWithMetrics(t, metricsYAML(up.URL, master), app.Settings{Metrics: metrics.New(metrics.Options{Prometheus: true})})
	rec := do(gw.HTTP, http.MethodPost, "/key/generate", master, `{"key_alias":"v"}`)
	var k struct{ Key string }
	if err := json.Unmarshal(rec.Body.Bytes(), &k); err != nil || k.Key == "" {
		t.Fatalf("key: %d %s", rec.Code, rec.Body)
	}
	open := buildWithMetrics(t, metricsYAML(up.URL, ""), app.Settings{Metrics: metrics.New(metrics.Options{Prometheus: true})})
	for _, tc := range []struct {
		name string
		h    http.Handler
		key  string
	}{{"no key", gw.HTTP, ""}, {"wrong key", gw.HTTP, "sk-wrong"}, {"virtual key", gw.HTTP, k.Key}, {"no master key set", open.HTTP, "sk-anything"}} {
		rec := do(tc.h, http.MethodGet, "/metrics", tc.key, "")
		var body struct {
			Error struct{ Type, Message string }
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); rec.Code != 401 || err != nil || body.Error.Type != "authentication_error" {
			t.Errorf("%s: %d %s", tc.name, rec.Code, rec.Body)
		}
		if strings.Contains(rec.Body.String(), metrics.TotalRequests) {
			t.Errorf("%s: metrics served", tc.name)
		}
	}
	if rec := do(gw.HTTP, http.MethodPost, "/metrics", master, ""); rec.Code != 405 {
		t.Errorf("POST /metrics: %d", rec.Code)
	}
	scrape(t, gw.HTTP, master)
	// Metrics off: no route (the gateway's 404).
	off := buildWithMetrics(t, metricsYAML(up.URL, master), app.Settings{})
	if rec := do(off.HTTP, http.MethodGet, "/metrics", master, ""); rec.Code != 404 {
		t.Errorf("metrics off: /metrics %d", rec.Code)
	}
}

// TestMetricsEMFInLambda: in Lambda the request's EMF line is written by
// AfterResponse, not before; METRICS=off and the namespace come from the
// environment.
func TestMetricsEMFInLambda(t *testing.T) {
	env := map[string]string{app.MetricsNamespaceEnv: "Acme/Gateway"}
	lookup := func(k string) string { return env[k] }
	var out bytes.Buffer
	reg, err := app.MetricsFromEnv(lookup, true, &out)
	if err != nil || reg == nil || !reg.EMF() {
		t.Fatalf("MetricsFromEnv: %v %v", reg, err)
	}
	up := metricsUpstream(t)
	gw := buildWithMetrics(t, metricsYAML(up.URL, ""), app.Settings{Metrics: reg, Lambda: true})
	if rec := do(gw.Handler, http.MethodPost, "/v1/chat/completions", "", `{"model":"ok","messages":[]}`); rec.Code != 200 {
		t.Fatalf("chat: %d %s", rec.Code, rec.Body)
	}
	if out.Len() != 0 {
		t.Fatalf("EMF written before the response hook: %s", out.String())
	}
	gw.AfterResponse(context.Background())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines: %s", len(lines), out.String())
	}
	var line struct {
		AWS struct {
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
			}
		} `json:"_aws"`
		ModelGroup string  `json:"model_group"`
		Deployment string  `json:"deployment"`
		Total      float64 `json:"litellm_proxy_total_requests_metric"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &line); err != nil {
		t.Fatal(err)
	}
	if len(line.AWS.CloudWatchMetrics) != 1 || line.AWS.CloudWatchMetrics[0].Namespace != "Acme/Gateway" ||
		len(line.AWS.CloudWatchMetrics[0].Dimensions) != 3 || line.ModelGroup != "ok" || line.Deployment != "dep-ok" || line.Total != 1 {
		t.Errorf("line: %s", lines[0])
	}
	// Lambda keeps no Prometheus series (there is no /metrics there).
	var prom bytes.Buffer
	_ = reg.WritePrometheus(&prom)
	if strings.Contains(prom.String(), metrics.TotalRequests+"{") {
		t.Errorf("Lambda registry keeps per-series counts")
	}

	for v, want := range map[string]bool{"off": false, "OFF": false, "on": true, "": true} {
		env[app.MetricsEnv] = v
		r, err := app.MetricsFromEnv(lookup, false, io.Discard)
		if err != nil || (r != nil) != want {
			t.Errorf("METRICS=%q: %v, %v", v, r, err)
		}
	}
	env[app.MetricsEnv] = "maybe"
	if _, err := app.MetricsFromEnv(lookup, false, io.Discard); err == nil {
		t.Errorf("METRICS=maybe accepted")
	}
}

// TestMetricsSSMError: a master key that SSM could not give counts as an
// SSM store error, and the build fails.
func TestMetricsSSMError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_ENDPOINT_URL_SSM", closed)
	reg := metrics.New(metrics.Options{Prometheus: true})
	s := app.Settings{Metrics: reg, ConfigYAML: []byte(metricsYAML("http://127.0.0.1:1", "")), Logger: gatewaytest.Quiet(),
		MasterKeyParameter: "sluice/master-key"}
	if err := s.ResolveAWS(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Build(context.Background(), s); err == nil {
		t.Fatal("build succeeded without the master key")
	}
	var b bytes.Buffer
	_ = reg.WritePrometheus(&b)
	if !strings.Contains(b.String(), metrics.StoreErrors+`{store="ssm"} 1`+"\n") {
		t.Errorf("ssm error not counted:\n%s", b.String())
	}
}
