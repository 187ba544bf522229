package gemini

import (
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/wire"
)

// FinishReason maps a Gemini finishReason to OpenAI's finish_reason (as
// LiteLLM does): MAX_TOKENS -> length, the safety and recitation stops ->
// content_filter, anything else -> stop. A candidate that calls functions
// finishes with tool_calls (decided by the caller).
func FinishReason(reason string) string {
	switch reason {
	case "MAX_TOKENS":
		return "length"
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "LANGUAGE":
		return "content_filter"
	}
	return "stop"
}

var errNotResponse = errors.New("gemini: the response is not a GenerateContentResponse")

// TranslateResponse turns a generateContent response into an OpenAI chat
// completion: one choice per candidate (text, thoughts as
// reasoning_content, function calls as tool calls), usage from
// usageMetadata.
func TranslateResponse(raw []byte, o Options, created int64) ([]byte, error) {
	if !gjson.ValidBytes(raw) {
		return nil, errNotResponse
	}
	r := gjson.ParseBytes(raw)
	if !r.IsObject() {
		return nil, errNotResponse
	}
	model := r.Get("modelVersion").String()
	if model == "" {
		model = o.Model
	}
	out := make([]byte, 0, len(raw)+256)
	out = append(out, `{"id":`...)
	out = wire.AppendString(out, responseID(r))
	out = append(out, `,"object":"chat.completion","created":`...)
	out = strconv.AppendInt(out, created, 10)
	out = append(out, `,"model":`...)
	out = wire.AppendString(out, model)
	out = append(out, `,"choices":[`...)
	n := 0
	r.Get("candidates").ForEach(func(_, c gjson.Result) bool {
		if n > 0 {
			out = append(out, ',')
		}
		idx := c.Get("index").Int()
		if !c.Get("index").Exists() {
			idx = int64(n)
		}
		n++
		var text, reasoning, calls []byte
		nCalls := 0
		c.Get("content.parts").ForEach(func(_, p gjson.Result) bool {
			switch {
			case p.Get("functionCall").IsObject():
				id, name, args := callOf(p)
				calls = wire.AppendToolCall(calls, nCalls, id, name, args)
				nCalls++
			case p.Get("thought").Bool():
				reasoning = append(reasoning, p.Get("text").String()...)
			default:
				text = append(text, p.Get("text").String()...)
			}
			return true
		})
		finish := FinishReason(c.Get("finishReason").String())
		if nCalls > 0 && finish == "stop" {
			finish = "tool_calls"
		}
		out = append(out, `{"index":`...)
		out = strconv.AppendInt(out, idx, 10)
		out = append(out, `,"message":{"role":"assistant","content":`...)
		out = wire.AppendChoiceEnd(out, text, reasoning, nil, calls, nCalls, finish)
		return true
	})
	out = append(out, `],"usage":`...)
	out = appendUsage(out, r.Get("usageMetadata"))
	return append(out, '}'), nil
}

// responseID is the completion's id: Gemini's responseId, else a new one.
func responseID(r gjson.Result) string {
	if id := r.Get("responseId").String(); id != "" {
		return "chatcmpl-" + id
	}
	return "chatcmpl-" + randomHex()
}

// callOf is a functionCall part as an OpenAI tool call: a new id (with the
// part's thought signature), the function's name and its arguments.
func callOf(p gjson.Result) (id, name, args string) {
	fc := p.Get("functionCall")
	args = fc.Get("args").Raw
	if args == "" {
		args = "{}"
	}
	return callID(p.Get("thoughtSignature").String()), fc.Get("name").String(), args
}

// callID is a new tool call id, with the function call's thought signature
// (ThoughtSeparator) when it has one.
func callID(signature string) string {
	id := "call_" + randomHex()
	if signature != "" {
		id += ThoughtSeparator + signature
	}
	return id
}

func randomHex() string {
	var b []byte
	b = strconv.AppendUint(b, rand.Uint64(), 16)
	return string(strconv.AppendUint(b, rand.Uint64(), 16))
}

// Usage are the token counts of usageMetadata in the gateway's terms:
// input excludes the cached tokens (promptTokenCount includes them), and
// output includes the thinking tokens (billed as output).
type Usage struct {
	Input, Output, Cached, Thoughts int64
}

// ReadUsage reads a usageMetadata object.
func ReadUsage(u gjson.Result) Usage {
	prompt := max(u.Get("promptTokenCount").Int(), 0) + max(u.Get("toolUsePromptTokenCount").Int(), 0)
	cached := min(max(u.Get("cachedContentTokenCount").Int(), 0), prompt)
	thoughts := max(u.Get("thoughtsTokenCount").Int(), 0)
	return Usage{Input: prompt - cached, Output: max(u.Get("candidatesTokenCount").Int(), 0) + thoughts, Cached: cached, Thoughts: thoughts}
}

// appendUsage appends an OpenAI usage object for a usageMetadata object,
// with the thinking tokens as completion_tokens_details.reasoning_tokens.
func appendUsage(out []byte, meta gjson.Result) []byte {
	u := ReadUsage(meta)
	out = wire.AppendUsage(out, u.Input, u.Output, u.Cached, 0)
	out = out[:len(out)-1] // '}'
	out = append(out, `,"completion_tokens_details":{"reasoning_tokens":`...)
	out = strconv.AppendInt(out, u.Thoughts, 10)
	return append(out, "}}"...)
}

// Blocked reports a generateContent answer that Gemini's safety filters
// blocked before any content (promptFeedback.blockReason with no
// candidate, or a sole candidate stopped for safety with no parts): the
// status and OpenAI-shaped error body it is answered with, a 400 classified
// as a content policy violation (content-policy fallbacks apply).
func Blocked(raw []byte) (int, []byte, bool) {
	r := gjson.GetManyBytes(raw, "promptFeedback.blockReason", "candidates", "candidates.0.finishReason", "candidates.0.content.parts.#", "candidates.#")
	reason := r[0].String()
	switch {
	case reason != "" && (!r[1].Exists() || r[4].Int() == 0):
	case r[4].Int() == 1 && r[3].Int() == 0 && FinishReason(r[2].String()) == "content_filter":
		reason = r[2].String()
	default:
		return 0, nil, false
	}
	out := append([]byte(nil), `{"error":{"message":`...)
	out = wire.AppendString(out, "Gemini blocked the request (blockReason: "+reason+")")
	out = append(out, `,"type":"invalid_request_error","param":null,"code":"content_policy_violation"}}`...)
	return http.StatusBadRequest, out, true
}
