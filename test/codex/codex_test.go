// Package codex runs the real Codex CLI (`codex exec`) against the gateway
// in local mode, served by a fake Anthropic upstream: Codex's Responses
// requests (store: false, encrypted reasoning asked for, namespaced,
// custom and hosted tools) are translated to chat and back, a tool call
// round trip included.
//
// The CLI (about 400 MB installed) is pinned in test/package.json, and
// test/run.sh installs it and sets SLUICE_CODEX to its binary; run alone,
// the test is skipped unless SLUICE_CODEX names one. It needs no network: Codex talks only to the gateway.
package codex

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/app"
)

// fakeAnthropic answers the first turn with a tool call of Codex's shell
// tool, and a turn carrying its result with a text quoting the result.
type fakeAnthropic struct {
	mu     sync.Mutex
	bodies []string
}

func (f *fakeAnthropic) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.bodies = append(f.bodies, string(b))
	f.mu.Unlock()
	body := gjson.ParseBytes(b)
	var result string
	body.Get("messages").ForEach(func(_, m gjson.Result) bool {
		m.Get("content").ForEach(func(_, c gjson.Result) bool {
			if c.Get("type").Str == "tool_result" {
				result = c.Get("content").Raw
			}
			return true
		})
		return true
	})
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(typ, data string) { _, _ = io.WriteString(w, "event: "+typ+"\ndata: "+data+"\n\n") }
	send("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[],"stop_reason":null,"usage":{"input_tokens":100,"output_tokens":1}}}`)
	if result == "" {
		send("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"exec_command","input":{}}}`)
		send("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"cmd\":\"echo sluice-tool-ran\"}"}}`)
		send("content_block_stop", `{"type":"content_block_stop","index":0}`)
		send("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":20}}`)
	} else {
		send("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		send("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"The tool said its piece. SLUICE-DONE"}}`)
		send("content_block_stop", `{"type":"content_block_stop","index":0}`)
		send("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}`)
	}
	send("message_stop", `{"type":"message_stop"}`)
}

func TestCodexExec(t *testing.T) {
	bin := os.Getenv("SLUICE_CODEX")
	if bin == "" {
		const msg = "SLUICE_CODEX does not name a Codex CLI binary (npm i @openai/codex@0.171.0)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg + " (CI is set: test/run.sh installs it, so the agent test must run)")
		}
		t.Skip(msg)
	}
	fake := &fakeAnthropic{}
	up := httptest.NewServer(fake)
	defer up.Close()
	const master = "sk-codex-test-master"
	gw, err := app.Build(context.Background(), app.Settings{ConfigYAML: []byte(`
model_list:
  - model_name: gpt-5-codex
    litellm_params: {model: anthropic/claude-sonnet-4-5, api_base: ` + up.URL + `, api_key: sk-ant-test}
general_settings:
  master_key: ` + master + `
`)})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close(context.Background())
	srv := httptest.NewServer(gw.HTTP)
	defer srv.Close()

	home := t.TempDir()
	codexHome := filepath.Join(home, ".codex")
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	conf := `model = "gpt-5-codex"
model_provider = "sluice"

[model_providers.sluice]
name = "Sluice"
base_url = "` + srv.URL + `/v1"
env_key = "SLUICE_API_KEY"
wire_api = "responses"
`
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "exec", "--skip-git-repo-check", "run the tool")
	cmd.Dir = home
	cmd.Env = append(os.Environ(), "HOME="+home, "CODEX_HOME="+codexHome, "SLUICE_API_KEY="+master)
	cmd.Stdin = bytes.NewReader(nil)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("codex exec: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "SLUICE-DONE") {
		t.Fatalf("codex did not print the model's answer:\n%s", out)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if len(fake.bodies) < 2 {
		t.Fatalf("Anthropic got %d requests, want the tool call's round trip", len(fake.bodies))
	}
	first := gjson.Parse(fake.bodies[0])
	var names []string
	first.Get("tools").ForEach(func(_, tl gjson.Result) bool { names = append(names, tl.Get("name").Str); return true })
	if !strings.Contains(strings.Join(names, ","), "exec_command") {
		t.Errorf("Anthropic's tools %v lack Codex's exec_command", names)
	}
	if !strings.Contains(fake.bodies[len(fake.bodies)-1], `"tool_use_id":"toolu_1"`) {
		t.Errorf("the last request carries no result of toolu_1:\n%s", fake.bodies[len(fake.bodies)-1])
	}
}
