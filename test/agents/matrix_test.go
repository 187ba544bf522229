// Package agents runs the agents' clients against the gateway in front of
// each kind of deployment they meet, table-driven: the real clients pinned
// in test/package.json (Claude Code, Codex) and the official Go SDKs
// (openai-go: chat completions and the Responses API; anthropic-sdk-go:
// the Messages API), each against an OpenAI-compatible server that serves
// only /v1/chat/completions, a native Anthropic deployment and Claude on
// Bedrock, for a plain turn, a streamed one and a tool loop.
//
// The CLIs are installed by test/run.sh (CLAUDE_CODE_BIN, SLUICE_CODEX);
// run alone, their rows are skipped unless those name them (CI=1 fails
// instead). Nothing leaves the machine: the upstreams are fakes
// (gatewaytest.ChatOnly, gatewaytest.Claude, bedrocktest).
package agents

import (
	"context"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/providers/bedrock/bedrocktest"
)

const master = "sk-agents-master"

// upstreams are the deployments' model groups, by kind.
var upstreams = []struct{ name, group, hello string }{
	{"chat-only", "chat-only", "Hello from chat."},
	{"anthropic", "claude-native", "Hello from Claude."},
	{"bedrock", "claude-bedrock", "Hello from Bedrock."},
}

// turn is what a client is asked: plain, streamed, or a tool loop (the
// fakes call the client's tool when asked to "use the tool", and answer
// its result with "The tool said <result>. SLUICE-DONE").
type turn int

const (
	plain turn = iota
	streamed
	toolLoop
	// structured output (response_format json_schema; text.format in the
	// Responses API), whole and streamed: Anthropic and Bedrock answer it
	// as the forced json_tool_call tool, whose input must come back as
	// the content.
	structured
	structuredStream
)

func (tn turn) String() string {
	return [...]string{"plain", "streamed", "tool loop", "structured", "structured streamed"}[tn]
}

func (tn turn) stream() bool { return tn == streamed || tn == toolLoop || tn == structuredStream }

// want is what the client must end with for the turn.
func (tn turn) want(hello string) string {
	switch tn {
	case toolLoop:
		return "SLUICE-DONE"
	case structured, structuredStream:
		return gatewaytest.StructuredAnswer
	}
	return hello
}

// env is the gateway in front of the three fakes.
type env struct {
	url     string
	chat    *gatewaytest.ChatOnly
	claude  *gatewaytest.Claude
	bedrock *bedrocktest.Server
}

func start(t *testing.T) *env {
	t.Helper()
	e := &env{chat: gatewaytest.NewChatOnly(t), claude: gatewaytest.NewClaude(t), bedrock: bedrocktest.New("Bedrock")}
	t.Cleanup(e.bedrock.Close)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	gw, err := app.Build(context.Background(), app.Settings{ConfigYAML: []byte(`
model_list:
  - model_name: chat-only
    litellm_params: {model: openai/llama-3.1-8b, api_base: ` + e.chat.URL + `/v1, api_key: none}
  - model_name: claude-native
    litellm_params: {model: anthropic/claude-sonnet-4-5, api_base: ` + e.claude.URL + `, api_key: sk-ant-fake}
  - model_name: claude-bedrock
    litellm_params: {model: bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0, api_base: "` + e.bedrock.URL + `", aws_region_name: us-west-2, aws_access_key_id: AKIDFAKE, aws_secret_access_key: fake}
general_settings:
  master_key: ` + master + `
`)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close(context.Background()) })
	srv := httptest.NewServer(gw.HTTP)
	t.Cleanup(srv.Close)
	e.url = srv.URL
	return e
}

// client is one row of the matrix: run asks group for the turn and returns
// the text the client ended with.
type client struct {
	name  string
	turns []turn // the turns it can be asked for (a CLI streams always)
	run   func(t *testing.T, e *env, group string, tn turn) string
}

// TestMatrix runs every client against every upstream for each of its
// turns.
func TestMatrix(t *testing.T) {
	e := start(t)
	for _, c := range clients() {
		t.Run(c.name, func(t *testing.T) {
			for _, u := range upstreams {
				for _, tn := range c.turns {
					t.Run(u.name+"/"+tn.String(), func(t *testing.T) {
						got := c.run(t, e, u.group, tn)
						// Bedrock's fake answers a request with thinking on (as
						// Claude Code asks of some models) after a thinking block.
						if want := tn.want(u.hello); !strings.Contains(got, want) && (u.name != "bedrock" || !strings.Contains(got, "Thought it through.")) {
							t.Errorf("%s via %s, %s: got %q, want it to hold %q", c.name, u.name, tn, got, want)
						}
						// The fakes quote the tool's result: the tool ran.
						if _, said, _ := strings.Cut(got, "The tool said"); tn == toolLoop && !strings.Contains(said, "sluice-tool-ran") {
							t.Errorf("%s via %s: the tool's output did not come back: %q", c.name, u.name, got)
						}
					})
				}
			}
		})
	}
}

func clients() []client {
	all := []turn{plain, streamed, toolLoop}
	withJSON := []turn{plain, streamed, toolLoop, structured, structuredStream}
	return []client{
		{"openai-go chat", withJSON, openAIChat},
		{"openai-go responses", withJSON, openAIResponses},
		{"anthropic-sdk-go", all, anthropicMessages},
		{"claude code", []turn{plain, toolLoop}, claudeCode},
		{"codex", []turn{plain, toolLoop}, codex},
	}
}

// cli is the binary named by the variable, or a skip (a failure under CI).
func cli(t *testing.T, variable string) string {
	bin := os.Getenv(variable)
	if bin == "" {
		msg := variable + " does not name the client's binary (test/run.sh installs it)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg + " (CI is set: the agent test must run)")
		}
		t.Skip(msg)
	}
	return bin
}
