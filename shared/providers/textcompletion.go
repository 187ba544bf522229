package providers

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/sse"
	"github.com/sluice-gw/sluice/shared/wire"
)

// A chat request to a text-completion-openai deployment is sent, as
// LiteLLM sends it, as a text completion: the messages become the prompt
// (one message: its text; several: a list of their texts, OpenAI answering
// one choice per prompt), and the answer, whole or event by event, is
// presented as a chat completion.

// textCompletionOpenAI is LiteLLM's provider of OpenAI's legacy
// completions endpoint.
const textCompletionOpenAI = "text-completion-openai"

// chatOnly are chat fields a text completion does not take.
var chatOnly = []string{"messages", "tools", "tool_choice", "parallel_tool_calls", "response_format",
	"functions", "function_call", "reasoning_effort", "modalities", "audio", "prediction", "store", "web_search_options"}

// chatAsCompletion sends a chat call to d's /completions and answers it as
// chat.
func chatAsCompletion(ctx context.Context, v Vendor, d *config.Deployment, call wire.Call) (*http.Response, error) {
	body, err := completionBody(call.Body)
	if err != nil {
		return nil, err
	}
	call.Op, call.Body = wire.OpCompletions, body
	resp, err := v.Do(ctx, d, call)
	if resp, err = check(ctx, d, resp, err); err != nil {
		return nil, err
	}
	if call.Stream {
		resp.Body = &chatEvents{r: sse.NewReader(resp.Body), body: resp.Body}
		return resp, nil
	}
	out, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, TransportError(ctx, d, err)
	}
	out = chatFromCompletion(out, "chat.completion", "message")
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(out)), int64(len(out))
	resp.Header.Del("Content-Length")
	return resp, nil
}

// completionBody is a chat body as a text completion's.
func completionBody(chat []byte) ([]byte, error) {
	msgs := gjson.GetBytes(chat, "messages")
	var prompts []string
	msgs.ForEach(func(_, m gjson.Result) bool {
		prompts = append(prompts, contentText(m.Get("content")))
		return true
	})
	var prompt any = prompts
	if len(prompts) == 1 {
		prompt = prompts[0]
	}
	out, err := sjson.SetBytes(chat, "prompt", prompt)
	if mct := gjson.GetBytes(chat, "max_completion_tokens"); err == nil && mct.Exists() && !gjson.GetBytes(chat, "max_tokens").Exists() {
		out, err = sjson.SetRawBytes(out, "max_tokens", []byte(mct.Raw))
	}
	for _, k := range append(chatOnly, "max_completion_tokens") {
		if err == nil {
			out, err = sjson.DeleteBytes(out, k)
		}
	}
	if err != nil {
		return nil, apierr.New(apierr.InvalidRequest, "cannot send the chat request as a text completion: %v", err)
	}
	return out, nil
}

// contentText is a message's content as text: a string, or its text parts.
func contentText(c gjson.Result) string {
	if !c.IsArray() {
		return c.String()
	}
	var b []byte
	c.ForEach(func(_, p gjson.Result) bool {
		if p.Get("type").Str == "text" {
			b = append(b, p.Get("text").Str...)
		}
		return true
	})
	return string(b)
}

// chatFromCompletion is a text completion (or one of its stream's events)
// as a chat completion (object, and each choice's text under field:
// "message" whole, "delta" streamed).
func chatFromCompletion(b []byte, object, field string) []byte {
	c := gjson.ParseBytes(b)
	if !c.IsObject() || c.Get("error").Exists() {
		return b
	}
	out := []byte(`{}`)
	for _, k := range []string{"id", "created", "model", "system_fingerprint"} {
		if v := c.Get(k); v.Exists() {
			out, _ = sjson.SetRawBytes(out, k, []byte(v.Raw))
		}
	}
	out, _ = sjson.SetBytes(out, "object", object)
	out, _ = sjson.SetRawBytes(out, "choices", []byte(`[]`))
	i := 0
	c.Get("choices").ForEach(func(_, ch gjson.Result) bool {
		p := "choices." + strconv.Itoa(i)
		out, _ = sjson.SetRawBytes(out, p, []byte(`{}`))
		if idx := ch.Get("index"); idx.Exists() {
			out, _ = sjson.SetRawBytes(out, p+".index", []byte(idx.Raw))
		} else {
			out, _ = sjson.SetBytes(out, p+".index", i)
		}
		msg := map[string]any{"content": ch.Get("text").Str}
		if field == "message" {
			msg["role"] = "assistant"
		}
		out, _ = sjson.SetBytes(out, p+"."+field, msg)
		if fr := ch.Get("finish_reason"); fr.Exists() {
			out, _ = sjson.SetRawBytes(out, p+".finish_reason", []byte(fr.Raw))
		}
		i++
		return true
	})
	if u := c.Get("usage"); u.Exists() {
		out, _ = sjson.SetRawBytes(out, "usage", []byte(u.Raw))
	}
	return out
}

// chatEvents reads a text completion's event stream as chat completion
// chunks, event by event.
type chatEvents struct {
	r    *sse.Reader
	body io.ReadCloser
	buf  []byte // translated bytes not yet read
	err  error
}

func (e *chatEvents) Read(p []byte) (int, error) {
	for len(e.buf) == 0 {
		if e.err != nil {
			return 0, e.err
		}
		ev, err := e.r.Next()
		if err != nil {
			e.err = err
			continue
		}
		e.buf = append(e.buf[:0], translateEvent(ev)...)
	}
	n := copy(p, e.buf)
	e.buf = e.buf[n:]
	return n, nil
}

func (e *chatEvents) Close() error {
	err := e.body.Close()
	if e.r != nil {
		e.r.Release()
		e.r = nil
	}
	return err
}

// translateEvent rewrites an event's data line (a completion chunk) as a
// chat completion chunk; other lines, and [DONE], pass as they are.
func translateEvent(ev []byte) []byte {
	var out []byte
	for _, line := range bytes.SplitAfter(ev, []byte("\n")) {
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok || bytes.Equal(bytes.TrimSpace(data), []byte("[DONE]")) {
			out = append(out, line...)
			continue
		}
		out = append(out, "data: "...)
		out = append(out, chatFromCompletion(bytes.TrimSpace(data), "chat.completion.chunk", "delta")...)
		out = append(out, '\n')
	}
	return out
}
