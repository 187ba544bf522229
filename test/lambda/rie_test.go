package lambda_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/infra/tables"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

// exampleMasterKey is the master key the sample events in events/ carry.
const exampleMasterKey = "sk-sluice-example-master-key"

// rie is one aws-lambda-rie process running one bootstrap.
type rie struct {
	url  string // invocation endpoint
	logs *syncBuffer
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// startRIE runs bootstrap under the Runtime Interface Emulator, as
// `sam local invoke` does inside its container, with env added to the
// environment. The emulator starts the bootstrap at the first invocation.
func startRIE(t *testing.T, bootstrap string, env ...string) *rie {
	t.Helper()
	bin := rieBinary(t)
	apiAddr, runtimeAddr := freeAddr(t), freeAddr(t)
	cmd := exec.Command(bin,
		"--runtime-interface-emulator-address", apiAddr,
		"--runtime-api-address", runtimeAddr,
		bootstrap)
	cmd.Dir = filepath.Dir(bootstrap)
	cmd.Env = append(os.Environ(), env...)
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	// Its own process group, so that the bootstrap it starts ends with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start aws-lambda-rie: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		if t.Failed() {
			t.Logf("aws-lambda-rie output:\n%s", logs.String())
		}
	})
	deadline := time.Now().Add(guard)
	for {
		c, err := net.Dial("tcp", apiAddr)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			t.Fatalf("aws-lambda-rie exited at start:\n%s", logs.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("aws-lambda-rie did not listen on %s:\n%s", apiAddr, logs.String())
		}
	}
	return &rie{url: "http://" + apiAddr + "/2015-03-31/functions/function/invocations", logs: logs}
}

// invoke sends one event and returns what the function answered. The
// emulator cannot take concurrent invocations: callers invoke one at a time.
func (r *rie) invoke(t *testing.T, event []byte) []byte {
	t.Helper()
	client := &http.Client{Timeout: guard}
	resp, err := client.Post(r.url, "application/json", bytes.NewReader(event))
	if err != nil {
		t.Fatalf("invoke: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read invocation result: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("emulator answered %d: %s", resp.StatusCode, truncate(b))
	}
	return b
}

// openAIError is OpenAI's error body.
type openAIError struct {
	Error *struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    string  `json:"code"`
	} `json:"error"`
}

func decodeError(t *testing.T, body []byte) openAIError {
	t.Helper()
	var e openAIError
	if err := json.Unmarshal(body, &e); err != nil || e.Error == nil {
		t.Fatalf("not an OpenAI error body (%v): %s", err, truncate(body))
	}
	if e.Error.Message == "" || e.Error.Type == "" {
		t.Errorf("error without message or type: %s", body)
	}
	return e
}

// eventCheck asserts what a function answers to one file of events/.
type eventCheck struct {
	function string // functions/<name>
	check    func(t *testing.T, out []byte)
}

// eventChecks covers every file in events/: TestEventFilesCovered fails on a
// file without a check, so that no sample event rots.
var eventChecks = map[string]eventCheck{
	"gateway-chat.json": {"gateway", func(t *testing.T, out []byte) {
		r := streamed(t, out, 200, "application/json")
		var c struct {
			Object  string `json:"object"`
			Model   string `json:"model"`
			Choices []struct {
				Message struct {
					Role    string `json:"role"`
					Content string `json:"content"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Usage struct {
				TotalTokens int `json:"total_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(r.Body, &c); err != nil {
			t.Fatalf("body: %v: %s", err, truncate(r.Body))
		}
		if c.Object != "chat.completion" || len(c.Choices) == 0 || c.Choices[0].Message.Content == "" ||
			c.Choices[0].Message.Role != "assistant" || c.Usage.TotalTokens == 0 {
			t.Errorf("not a chat.completion: %s", truncate(r.Body))
		}
	}},
	"gateway-completions.json": {"gateway", func(t *testing.T, out []byte) {
		r := streamed(t, out, 200, "application/json")
		var c struct {
			Object  string `json:"object"`
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
			Usage struct {
				TotalTokens int `json:"total_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(r.Body, &c); err != nil || c.Object != "text_completion" || len(c.Choices) == 0 || c.Choices[0].Text == "" || c.Usage.TotalTokens == 0 {
			t.Errorf("not a text_completion (%v): %s", err, truncate(r.Body))
		}
		if r.header("X-Litellm-Model-Group") != "gpt-4o-mini" {
			t.Errorf("x-litellm-model-group = %q", r.header("X-Litellm-Model-Group"))
		}
	}},
	"gateway-azure-chat.json": {"gateway", func(t *testing.T, out []byte) {
		r := streamed(t, out, 200, "application/json")
		if !strings.Contains(string(r.Body), `"object":"chat.completion"`) || r.header("X-Litellm-Model-Group") != "gpt-4o-mini" {
			t.Errorf("not a chat.completion of gpt-4o-mini: %s", truncate(r.Body))
		}
	}},
	"gateway-model-group-info.json": {"gateway", func(t *testing.T, out []byte) {
		r := streamed(t, out, 200, "application/json")
		var info struct {
			Data []struct {
				ModelGroup string   `json:"model_group"`
				Providers  []string `json:"providers"`
			} `json:"data"`
		}
		if err := json.Unmarshal(r.Body, &info); err != nil || len(info.Data) == 0 || info.Data[0].ModelGroup == "" || len(info.Data[0].Providers) == 0 {
			t.Errorf("not model group info (%v): %s", err, truncate(r.Body))
		}
	}},
	"gateway-chat-stream.json": {"gateway", func(t *testing.T, out []byte) {
		r := streamed(t, out, 200, "text/event-stream")
		data := sseData(r.Body)
		if len(data) < 2 || data[len(data)-1] != "[DONE]" {
			t.Fatalf("stream does not end with data: [DONE]: %q", truncate(r.Body))
		}
		var content strings.Builder
		usage := false
		for _, d := range data[:len(data)-1] {
			var c struct {
				Object  string `json:"object"`
				Choices []struct {
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
				} `json:"choices"`
				Usage *struct {
					TotalTokens int `json:"total_tokens"`
				} `json:"usage"`
			}
			if err := json.Unmarshal([]byte(d), &c); err != nil || c.Object != "chat.completion.chunk" {
				t.Fatalf("event %q is not a chat.completion.chunk (%v)", d, err)
			}
			for _, ch := range c.Choices {
				content.WriteString(ch.Delta.Content)
			}
			usage = usage || (c.Usage != nil && c.Usage.TotalTokens > 0)
		}
		if content.Len() == 0 {
			t.Error("the stream carries no content")
		}
		if !usage {
			t.Error("stream_options.include_usage: no usage chunk")
		}
	}},
	"gateway-models.json": {"gateway", func(t *testing.T, out []byte) {
		r := streamed(t, out, 200, "application/json")
		var l struct {
			Object string `json:"object"`
			Data   []struct {
				ID     string `json:"id"`
				Object string `json:"object"`
			} `json:"data"`
		}
		if err := json.Unmarshal(r.Body, &l); err != nil {
			t.Fatalf("body: %v", err)
		}
		var ids []string
		for _, m := range l.Data {
			ids = append(ids, m.ID)
		}
		if l.Object != "list" || !slices.Contains(ids, "gpt-4o-mini") {
			t.Errorf("models = %s", truncate(r.Body))
		}
	}},
	"gateway-bad-key.json": {"gateway", func(t *testing.T, out []byte) {
		r := streamed(t, out, 401, "application/json")
		decodeError(t, r.Body)
	}},
	"gateway-unknown-model.json": {"gateway", func(t *testing.T, out []byte) {
		r := streamed(t, out, 404, "application/json")
		e := decodeError(t, r.Body)
		if !strings.Contains(e.Error.Message, "gpt-9-ultra") {
			t.Errorf("error does not name the model: %q", e.Error.Message)
		}
	}},
	"admin-health.json": {"admin", func(t *testing.T, out []byte) {
		r := buffered(t, out, 200)
		if r.Body != `{"status":"healthy"}` {
			t.Errorf("body = %q", r.Body)
		}
	}},
	"admin-key-generate.json": {"admin", func(t *testing.T, out []byte) {
		r := buffered(t, out, 200)
		var k struct {
			Key     string   `json:"key"`
			Token   string   `json:"token"`
			KeyName string   `json:"key_name"`
			Models  []string `json:"models"`
			Expires *string  `json:"expires"`
		}
		if err := json.Unmarshal([]byte(r.Body), &k); err != nil || !strings.HasPrefix(k.Key, "sk-") || len(k.Token) != 64 ||
			k.KeyName != "sk-..."+k.Key[len(k.Key)-4:] || !slices.Equal(k.Models, []string{"gpt-4o-mini"}) || k.Expires == nil {
			t.Errorf("not a generated key (%v): %s", err, r.Body)
		}
	}},
	"admin-team-new.json": {"admin", func(t *testing.T, out []byte) {
		r := buffered(t, out, 200)
		var tm struct {
			TeamID    string  `json:"team_id"`
			MaxBudget float64 `json:"max_budget"`
		}
		if err := json.Unmarshal([]byte(r.Body), &tm); err != nil || tm.TeamID != "research" || tm.MaxBudget != 100 {
			t.Errorf("not the new team (%v): %s", err, r.Body)
		}
	}},
	"admin-key-list.json": {"admin", func(t *testing.T, out []byte) {
		r := buffered(t, out, 200)
		var l struct {
			Keys       []map[string]any `json:"keys"`
			TotalCount int              `json:"total_count"`
		}
		// Invoked after admin-key-generate.json, on the same instance.
		if err := json.Unmarshal([]byte(r.Body), &l); err != nil || l.TotalCount != 1 || len(l.Keys) != 1 || l.Keys[0]["token"] == nil {
			t.Errorf("key list (%v): %s", err, r.Body)
		}
		if strings.Contains(r.Body, `"key":"sk-`) {
			t.Errorf("the list shows a secret: %s", r.Body)
		}
	}},
	"admin-console.json": {"admin", func(t *testing.T, out []byte) {
		var r bufferedResponse
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("not a function URL response: %v: %s", err, truncate(out))
		}
		if r.StatusCode != 200 || r.Headers["Content-Type"] != "text/html; charset=utf-8" || !strings.Contains(r.Body, `src="/ui/app.js"`) ||
			!strings.HasPrefix(r.Headers["Content-Security-Policy"], "default-src 'none'") {
			t.Errorf("the console's page: %d %v %s", r.StatusCode, r.Headers, truncate([]byte(r.Body)))
		}
	}},
	"gateway-console.json": {"gateway", func(t *testing.T, out []byte) {
		r := streamed(t, out, 404, "application/json") // the gateway's Lambda build serves no console
		decodeError(t, r.Body)
	}},
	"admin-key-generate-no-key.json": {"admin", func(t *testing.T, out []byte) {
		r := buffered(t, out, 401)
		decodeError(t, []byte(r.Body))
	}},
	"spend-batch.json": {"spend", func(t *testing.T, out []byte) {
		var resp struct {
			BatchItemFailures []struct {
				ItemIdentifier string `json:"itemIdentifier"`
			} `json:"batchItemFailures"`
		}
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatalf("not an SQSEventResponse: %v: %s", err, truncate(out))
		}
		want := []string{"5f1d2c3b-0000-4000-8000-000000000002"}
		var got []string
		for _, f := range resp.BatchItemFailures {
			got = append(got, f.ItemIdentifier)
		}
		if !slices.Equal(got, want) {
			t.Errorf("batchItemFailures = %v, want %v", got, want)
		}
	}},
}

// streamed parses a streaming function URL response and checks its status
// and content type.
func streamed(t *testing.T, out []byte, status int, contentType string) *streamedResponse {
	t.Helper()
	r, err := parseStreamed(out)
	if err != nil {
		t.Fatalf("streaming response: %v", err)
	}
	if r.StatusCode != status {
		t.Errorf("status = %d, want %d (body %s)", r.StatusCode, status, truncate(r.Body))
	}
	if ct := r.header("Content-Type"); !strings.HasPrefix(ct, contentType) {
		t.Errorf("Content-Type = %q, want %s", ct, contentType)
	}
	return r
}

type bufferedResponse struct {
	StatusCode      int               `json:"statusCode"`
	Headers         map[string]string `json:"headers"`
	Body            string            `json:"body"`
	IsBase64Encoded bool              `json:"isBase64Encoded"`
}

// buffered parses a buffered function URL (payload 2.0) response.
func buffered(t *testing.T, out []byte, status int) *bufferedResponse {
	t.Helper()
	var r bufferedResponse
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("not a function URL response: %v: %s", err, truncate(out))
	}
	if r.StatusCode != status {
		t.Errorf("status = %d, want %d (body %s)", r.StatusCode, status, r.Body)
	}
	if r.IsBase64Encoded {
		t.Errorf("unexpected base64 body")
	}
	if ct := r.Headers["Content-Type"]; ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	return &r
}

func eventFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot(t), "events", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no sample events: %v", err)
	}
	return files
}

func TestEventFilesCovered(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range eventFiles(t) {
		name := filepath.Base(f)
		seen[name] = true
		if _, ok := eventChecks[name]; !ok {
			t.Errorf("events/%s has no check in eventChecks", name)
		}
		var v map[string]any
		if b, err := os.ReadFile(f); err != nil || json.Unmarshal(b, &v) != nil {
			t.Errorf("events/%s is not a JSON object", name)
		}
	}
	for name := range eventChecks {
		if !seen[name] {
			t.Errorf("eventChecks names events/%s, which does not exist", name)
		}
	}
}

// TestBootstrapsUnderRIE builds every function's bootstrap and invokes it,
// under the Runtime Interface Emulator, with each of its sample events.
func TestBootstrapsUnderRIE(t *testing.T) {
	root := repoRoot(t)
	byFunction := map[string][]string{}
	for _, f := range eventFiles(t) {
		if c, ok := eventChecks[filepath.Base(f)]; ok {
			byFunction[c.function] = append(byFunction[c.function], f)
		}
	}
	// The gateway runs the embedded default config plus the master key the
	// events carry.
	gwConfig := filepath.Join(t.TempDir(), "config.yaml")
	cfg := bytes.Replace(config.DefaultYAML(), []byte("\ngeneral_settings:\n"), []byte("\ngeneral_settings:\n  master_key: os.environ/SLUICE_TEST_MASTER_KEY\n"), 1)
	if err := os.WriteFile(gwConfig, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string][]string{
		"gateway": {"GATEWAY_CONFIG=" + gwConfig, "SLUICE_TEST_MASTER_KEY=" + exampleMasterKey, "GATEWAY_STORE=memory"},
		"admin":   {"GATEWAY_MASTER_KEY=" + exampleMasterKey, "GATEWAY_STORE=memory"}, // one instance: its memory store lives across the invocations
	}
	for _, fn := range []string{"gateway", "admin", "spend"} {
		t.Run(fn, func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(root, "functions", fn)); err != nil {
				t.Fatalf("functions/%s: %v", fn, err)
			}
			fnEnv := env[fn]
			if fn == "spend" {
				fnEnv = spendEnv(t)
			}
			r := startRIE(t, bootstrap(t, fn), append(fnEnv, "AWS_LAMBDA_FUNCTION_TIMEOUT=60", "AWS_REGION=us-east-1")...)
			for _, f := range byFunction[fn] {
				name := filepath.Base(f)
				t.Run(name, func(t *testing.T) {
					ev, err := os.ReadFile(f)
					if err != nil {
						t.Fatal(err)
					}
					out := r.invoke(t, ev)
					eventChecks[name].check(t, out)
					if t.Failed() {
						t.Logf("function output: %s", truncate(out))
					}
				})
			}
			if strings.Contains(r.logs.String(), "panic") {
				t.Errorf("the function logged a panic:\n%s", r.logs.String())
			}
		})
	}
}

// spendEnv points the spend function at its own tables in DynamoDB Local
// (DYNAMODB_ENDPOINT, as ./test/run.sh sets it): it records the valid
// events of spend-batch.json there.
func spendEnv(t *testing.T) []string {
	ep := os.Getenv("DYNAMODB_ENDPOINT")
	if ep == "" {
		ep = os.Getenv(ddblocal.EndpointEnv)
	}
	if ep == "" {
		if testing.Short() {
			t.Skip("the spend function needs DynamoDB Local (DYNAMODB_ENDPOINT); skipped in -short mode")
		}
		t.Fatalf("the spend function needs DynamoDB Local: set DYNAMODB_ENDPOINT (./test/run.sh does)\n%s", ddblocal.Install)
	}
	os.Setenv(ddblocal.EndpointEnv, ep)
	names := ddblocal.Tables(t)
	return []string{ddblocal.EndpointEnv + "=" + ep, "AWS_ACCESS_KEY_ID=dummy", "AWS_SECRET_ACCESS_KEY=dummy",
		tables.Keys.EnvVar + "=" + names.Keys, tables.Spend.EnvVar + "=" + names.Spend}
}
