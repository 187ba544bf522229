package bedrock_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/wire"
)

// A system message among a Messages call's turns (Claude Code's reminders,
// mid-conversation) reaches Claude on Bedrock, which takes only user and
// assistant turns, in the top-level system after what it holds; the user
// turns around it are joined. Plain and streamed.
func TestMessagesInvokeMidConversationSystem(t *testing.T) {
	srv, p, d := setup(t)
	d.Model = modelID // InvokeModel, not Converse
	body := `{"model":"claude","max_tokens":10,"system":"top","messages":[
 {"role":"user","content":"hi"},
 {"role":"assistant","content":[{"type":"text","text":"hello"}]},
 {"role":"user","content":[{"type":"text","text":"go on"}]},
 {"role":"system","content":[{"type":"text","text":"<system-reminder>a</system-reminder>","cache_control":{"type":"ephemeral"}}]},
 {"role":"user","content":"and then"},
 {"role":"system","content":"be terse"}
]}`
	for _, stream := range []bool{false, true} {
		resp, err := p.Do(context.Background(), d, wire.Call{Op: wire.OpMessages, Body: []byte(body), Stream: stream})
		if err != nil {
			t.Fatalf("stream %v: %v", stream, err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(out), "b1.") {
			t.Fatalf("stream %v: %d %s", stream, resp.StatusCode, out)
		}
		calls := srv.Calls()
		sent := gjson.Parse(calls[len(calls)-1].Body)
		if got := sent.Get("system").Raw; got != `[{"type":"text","text":"top"},{"type":"text","text":"<system-reminder>a</system-reminder>","cache_control":{"type":"ephemeral"}},{"type":"text","text":"be terse"}]` {
			t.Errorf("stream %v: system %s", stream, got)
		}
		if got := sent.Get("messages.#.role").Raw; got != `["user","assistant","user"]` {
			t.Errorf("stream %v: roles %s", stream, got)
		}
		if got := sent.Get("messages.2.content.#.text").Raw; got != `["go on","and then"]` {
			t.Errorf("stream %v: joined user turn %s", stream, got)
		}
		if got := sent.Get("messages.0.content").Raw; got != `"hi"` {
			t.Errorf("stream %v: a turn left alone changed: %s", stream, got)
		}
	}
}
