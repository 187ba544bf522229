package wire

import (
	"bytes"

	"github.com/tidwall/gjson"
)

// Usage is token usage as providers report it.
type Usage struct {
	PromptTokens     int64
	CompletionTokens int64
	TotalTokens      int64
}

// UsageOf reads "usage" from a JSON response body or stream event; ok is false
// when there is none.
func UsageOf(data []byte) (u Usage, ok bool) {
	// Chunks often carry "usage":null; only an object is worth parsing, and
	// only that object is parsed: usage comes last in OpenAI's bodies.
	key := []byte(`"usage"`)
	i := bytes.Index(data, key) // forward search is vectorised; LastIndex is not
	if i < 0 {
		return u, false
	}
	for { // the last occurrence
		j := bytes.Index(data[i+len(key):], key)
		if j < 0 {
			break
		}
		i += len(key) + j
	}
	var v gjson.Result
	rest := bytes.TrimLeft(data[i+len(`"usage"`):], " \t\r\n")
	if len(rest) > 0 && rest[0] == ':' {
		if rest = bytes.TrimLeft(rest[1:], " \t\r\n"); len(rest) > 0 && rest[0] == '{' {
			v = gjson.ParseBytes(rest)
		} else {
			return u, false // "usage":null
		}
	} else { // the last "usage" was text, not the key: parse the top level
		v = gjson.GetBytes(data, "usage")
	}
	if !v.IsObject() {
		return u, false
	}
	r := v.Get("prompt_tokens")
	u.PromptTokens = r.Int()
	u.CompletionTokens = v.Get("completion_tokens").Int()
	u.TotalTokens = v.Get("total_tokens").Int()
	if u.TotalTokens == 0 {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	return u, r.Exists() || u.TotalTokens > 0
}

// EstimateTokens is a cheap prompt-size estimate (about four bytes a token),
// good enough for context-window pre-checks and TPM admission, which is
// corrected with real usage after the call.
func EstimateTokens(body []byte) int {
	return len(body)/4 + 1
}
