package wire

import (
	"testing"

	"github.com/tidwall/gjson"
)

func TestMessagesBody(t *testing.T) {
	body := `{"model": "alias" ,"metadata":{"user_id":"u","tags":["t"]},"messages":[{"role":"user","content":"model"}]}`
	r, err := Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(r.MessagesBody("claude-x")); got != `{"model": "claude-x" ,"metadata":{"user_id":"u","tags":["t"]},"messages":[{"role":"user","content":"model"}]}` {
		t.Errorf("model replaced: %s", got)
	}
	if got := r.MessagesBody("alias"); &got[0] != &r.Body[0] {
		t.Error("an unchanged body was copied")
	}
	r, err = Parse([]byte(`{"model":"a","fallbacks":["b"],"num_retries":1,"metadata":{"user_id":"u"},"max_tokens":5}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(r.MessagesBody("a")); got != `{"model":"a","metadata":{"user_id":"u"},"max_tokens":5}` {
		t.Errorf("the gateway's own fields: %s", got)
	}
}

func TestMessagesUsage(t *testing.T) {
	u, ok := MessagesUsage(gjson.Parse(`{"input_tokens":20,"cache_read_input_tokens":8,"cache_creation_input_tokens":4,"output_tokens":6}`))
	if want := (Usage{PromptTokens: 32, CompletionTokens: 6, TotalTokens: 38, CachedTokens: 8, CacheCreationTokens: 4}); !ok || u != want {
		t.Errorf("usage %+v %v, want %+v", u, ok, want)
	}
	if _, ok := MessagesUsage(gjson.Parse(`null`)); ok {
		t.Error("null usage read as usage")
	}
	// A stream: message_start's input, message_delta's output.
	var s Usage
	s, _ = MessagesStreamUsage(s, "message_start", []byte(`{"type":"message_start","message":{"usage":{"input_tokens":20,"cache_read_input_tokens":8,"output_tokens":1}}}`))
	s, ok = MessagesStreamUsage(s, "message_delta", []byte(`{"type":"message_delta","delta":{},"usage":{"output_tokens":9}}`))
	if want := (Usage{PromptTokens: 28, CompletionTokens: 9, TotalTokens: 37, CachedTokens: 8}); !ok || s != want {
		t.Errorf("stream usage %+v, want %+v", s, want)
	}
	if _, ok := MessagesStreamUsage(s, "content_block_delta", []byte(`{"type":"content_block_delta","usage":{"output_tokens":1}}`)); ok {
		t.Error("a delta's text read as usage")
	}
}
