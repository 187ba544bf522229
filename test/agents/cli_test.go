package agents

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The real clients' rows: each CLI run once per turn, its output the text
// checked (a CLI streams every turn).

func prompt(tn turn) string {
	if tn == toolLoop {
		return "Print the word sluice-tool-ran with the shell: use the tool."
	}
	return "hi"
}

func runCLI(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	cmd.Stdin = bytes.NewReader(nil)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", filepath.Base(cmd.Path), err, out)
	}
	return string(out)
}

func claudeCode(t *testing.T, e *env, group string, tn turn) string {
	bin := cli(t, "CLAUDE_CODE_BIN")
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second) // a bound on a hang
	defer cancel()
	home := t.TempDir()
	cmd := exec.CommandContext(ctx, bin, "-p", prompt(tn), "--allowedTools", "Bash")
	cmd.Dir = home
	cmd.Env = []string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"),
		"ANTHROPIC_BASE_URL=" + e.url, "ANTHROPIC_AUTH_TOKEN=" + master,
		"ANTHROPIC_MODEL=" + group, "ANTHROPIC_DEFAULT_HAIKU_MODEL=" + group, "ANTHROPIC_DEFAULT_SONNET_MODEL=" + group,
		"ANTHROPIC_DEFAULT_OPUS_MODEL=" + group, "ANTHROPIC_SMALL_FAST_MODEL=" + group,
		// Nothing but the gateway: no telemetry, updates or error reports.
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1",
	}
	return runCLI(t, cmd)
}

func codex(t *testing.T, e *env, group string, tn turn) string {
	bin := cli(t, "SLUICE_CODEX")
	home := t.TempDir()
	codexHome := filepath.Join(home, ".codex")
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	conf := `model = "` + group + `"
model_provider = "sluice"

[model_providers.sluice]
name = "Sluice"
base_url = "` + e.url + `/v1"
env_key = "SLUICE_API_KEY"
wire_api = "responses"
`
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a bound on a hang
	defer cancel()
	args := []string{"exec", "--skip-git-repo-check"}
	if tn == toolLoop {
		args = append(args, "--dangerously-bypass-approvals-and-sandbox")
	}
	cmd := exec.CommandContext(ctx, bin, append(args, prompt(tn))...)
	cmd.Dir = home
	cmd.Env = append(os.Environ(), "HOME="+home, "CODEX_HOME="+codexHome, "SLUICE_API_KEY="+master)
	return runCLI(t, cmd)
}
