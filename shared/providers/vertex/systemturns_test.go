package vertex_test

import (
	"context"
	"testing"

	"github.com/sluice-gw/sluice/shared/wire"
)

// A system message among a Messages call's turns (Claude Code's
// reminders) reaches Claude on Vertex AI in the top-level system, the
// user turns around it joined, as on Bedrock.
func TestMessagesMidConversationSystem(t *testing.T) {
	p, d, f, _ := setup(t, "global")
	body := `{"model":"claude-sonnet-4-5@20250929","max_tokens":100,"system":"top","messages":[{"role":"user","content":"hi"},{"role":"system","content":"be terse"},{"role":"user","content":"go on"}]}`
	read(t)(p.Messages(context.Background(), d, wire.Call{Op: wire.OpMessages, Body: []byte(body)}))
	got := f.last(t).body
	if s := got.Get("system").Raw; s != `[{"type":"text","text":"top"},{"type":"text","text":"be terse"}]` {
		t.Errorf("system %s", s)
	}
	if m := got.Get("messages").Raw; m != `[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"text","text":"go on"}]}]` {
		t.Errorf("messages %s", m)
	}
}
