package wire

import (
	"bytes"
	"encoding/json"

	"github.com/tidwall/gjson"
)

// Anthropic's Messages API inbound (POST /v1/messages): the body is
// Anthropic's, and Parse reads the same fields of it (model, stream,
// max_tokens, metadata.tags); everything else passes through untouched.

// AnthropicHeaders are the client's Anthropic headers, forwarded as they came.
type AnthropicHeaders struct {
	Version string // anthropic-version
	Beta    string // anthropic-beta (comma-separated features)
}

// MessagesBody returns the Messages body with only the model replaced (by
// byte offsets: every other byte is the client's) and the gateway's own
// routing fields, if the client sent any, removed.
func (r *Request) MessagesBody(model string) []byte {
	if (model == r.Model || r.modelEnd == 0) && !r.routeFields {
		return r.Body
	}
	out := r.Body
	if r.modelEnd > 0 && model != r.Model {
		q, _ := json.Marshal(model)
		out = make([]byte, 0, len(r.Body)+len(q))
		out = append(out, r.Body[:r.modelStart]...)
		out = append(out, q...)
		out = append(out, r.Body[r.modelEnd:]...)
	}
	if r.routeFields {
		out = deleteFields(bytes.Clone(out), routeOnly)
	}
	return out
}

// MessagesUsage reads an Anthropic usage object (the "usage" of a Messages
// response, of message_start's message or of message_delta) as a Usage in
// OpenAI's convention: PromptTokens count cache reads and writes too.
func MessagesUsage(v gjson.Result) (u Usage, ok bool) {
	if !v.IsObject() {
		return u, false
	}
	var input int64
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "input_tokens":
			input, ok = f.Int(), true
		case "output_tokens":
			u.CompletionTokens, ok = f.Int(), true
		case "cache_read_input_tokens":
			u.CachedTokens = f.Int()
		case "cache_creation_input_tokens":
			u.CacheCreationTokens = f.Int()
		}
		return true
	})
	u.PromptTokens = input + u.CachedTokens + u.CacheCreationTokens
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u, ok
}

// MessagesStreamUsage folds one Messages stream event's usage into u (typ
// is the event's type): message_start carries the input (and cache)
// tokens, each message_delta the output so far (and, from some providers,
// the input again). ok says the event carried usage.
func MessagesStreamUsage(u Usage, typ string, data []byte) (Usage, bool) {
	var v gjson.Result
	switch typ {
	case "message_start":
		v = gjson.GetBytes(data, "message.usage")
	case "message_delta":
		v = gjson.GetBytes(data, "usage")
	default:
		return u, false
	}
	n, ok := MessagesUsage(v)
	if !ok {
		return u, false
	}
	// A later report wins for what it carries; message_delta's usage often
	// holds output_tokens alone.
	if v.Get("input_tokens").Exists() {
		u.PromptTokens, u.CachedTokens, u.CacheCreationTokens = n.PromptTokens, n.CachedTokens, n.CacheCreationTokens
	}
	if v.Get("output_tokens").Exists() {
		u.CompletionTokens = n.CompletionTokens
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u, true
}

// MessagesEventType is a Messages stream event's "type" (its first member,
// as Anthropic writes it: found without reading further).
func MessagesEventType(data []byte) string {
	return gjson.GetBytes(data, "type").Str
}
