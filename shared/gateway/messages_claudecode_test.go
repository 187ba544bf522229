package gateway

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestClaudeCode runs the real Claude Code client (`claude -p`) against the
// gateway in front of the fake Anthropic API, when it is installed
// (CLAUDE_CODE_BIN, or claude on PATH; test/run.sh installs it pinned):
// its requests (/v1/messages?beta=true, its betas, tools and model names)
// pass through, and it prints the fake's answer.
func TestClaudeCode(t *testing.T) {
	bin := os.Getenv("CLAUDE_CODE_BIN")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("claude"); err != nil {
			const msg = "Claude Code is not installed (npm i @anthropic-ai/claude-code; or set CLAUDE_CODE_BIN)"
			if os.Getenv("CI") != "" {
				t.Fatal(msg + " (CI is set: test/run.sh installs it, so the agent test must run)")
			}
			t.Skip(msg)
		}
	}
	f := newMessagesFixture(t, `  - model_name: "*"
    litellm_params: {model: anthropic/*, api_base: CLAUDE_URL, api_key: sk-ant-fake}`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a bound on a hang
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", "hi")
	home := t.TempDir()
	cmd.Dir = home
	cmd.Env = []string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"),
		"ANTHROPIC_BASE_URL=" + f.srv.URL,
		"ANTHROPIC_AUTH_TOKEN=sk-master",
		// Nothing but the gateway: no telemetry, updates or error reports.
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("claude -p: %v\n%s", err, out)
	}
	// The fake greets, or, asked to think (as Claude Code asks some
	// models), answers after a signed thinking block.
	if !strings.Contains(string(out), "Hello from Claude.") && !strings.Contains(string(out), "Thought it through.") {
		t.Errorf("claude -p printed %q", out)
	}
	var paths []string
	for _, r := range f.claude.requests() {
		paths = append(paths, r.path+" "+r.header.Get("Anthropic-Beta"))
	}
	if len(paths) == 0 {
		t.Fatal("nothing reached Anthropic")
	}
	t.Logf("requests that reached the fake Anthropic API: %q", paths)
}
