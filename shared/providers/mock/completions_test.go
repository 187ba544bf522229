package mock

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/wire"
)

// A text completion is answered in OpenAI's text_completion shape, whole or
// as a stream of text chunks with the usage chunk when asked for.
func TestTextCompletion(t *testing.T) {
	d := &config.Deployment{ID: "d", Model: "m", MockResponse: ptr("hello there world")}
	body := read(t, Respond(context.Background(), d, wire.Call{Op: wire.OpCompletions, PromptTokens: 3}))
	var c struct {
		Object  string
		Choices []struct {
			Text         string
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			TotalTokens int64 `json:"total_tokens"`
		}
	}
	if err := json.Unmarshal(body, &c); err != nil || c.Object != "text_completion" || c.Choices[0].Text != "hello there world" ||
		c.Choices[0].FinishReason != "stop" || c.Usage.TotalTokens != 6 {
		t.Fatalf("%s (%v)", body, err)
	}
	resp := Respond(context.Background(), d, wire.Call{Op: wire.OpCompletions, Stream: true, Body: []byte(`{"stream_options":{"include_usage":true}}`)})
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("content type %q", resp.Header.Get("Content-Type"))
	}
	s := string(read(t, resp))
	var text strings.Builder
	usage := false
	for _, ev := range strings.Split(strings.TrimSpace(s), "\n\n") {
		data := strings.TrimPrefix(ev, "data: ")
		if data == "[DONE]" {
			continue
		}
		var ch struct {
			Object  string
			Choices []struct{ Text string }
			Usage   *struct{}
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil || ch.Object != "text_completion" {
			t.Fatalf("event %q (%v)", data, err)
		}
		for _, c := range ch.Choices {
			text.WriteString(c.Text)
		}
		usage = usage || ch.Usage != nil
	}
	if text.String() != "hello there world" || !usage || !strings.HasSuffix(s, "data: [DONE]\n\n") {
		t.Errorf("stream %q", s)
	}
}
