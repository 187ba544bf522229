package wire

import (
	"bytes"
	"strconv"

	"github.com/tidwall/gjson"
)

// Usage is token usage as providers report it, in OpenAI's convention:
// PromptTokens counts every input token, cached and cache-writing ones
// included; CachedTokens and CacheCreationTokens say how many of them were
// read from, or written to, the provider's prompt cache.
type Usage struct {
	PromptTokens        int64
	CompletionTokens    int64
	TotalTokens         int64
	CachedTokens        int64 // prompt_tokens_details.cached_tokens (cache_read_input_tokens, prompt_cache_hit_tokens)
	CacheCreationTokens int64 // cache_creation_input_tokens (Anthropic-style prompt caching)
}

// Add returns the sum of two usages.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		PromptTokens:        u.PromptTokens + v.PromptTokens,
		CompletionTokens:    u.CompletionTokens + v.CompletionTokens,
		TotalTokens:         u.TotalTokens + v.TotalTokens,
		CachedTokens:        u.CachedTokens + v.CachedTokens,
		CacheCreationTokens: u.CacheCreationTokens + v.CacheCreationTokens,
	}
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
	// One pass over the object. Cache reads go by three names: OpenAI's
	// prompt_tokens_details.cached_tokens wins, then Anthropic-style
	// cache_read_input_tokens (as LiteLLM also reports it), then DeepSeek's
	// prompt_cache_hit_tokens.
	hasPrompt := false
	var detailsCached, readTokens, hitTokens int64
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "prompt_tokens":
			u.PromptTokens, hasPrompt = f.Int(), true
		case "completion_tokens":
			u.CompletionTokens = f.Int()
		case "total_tokens":
			u.TotalTokens = f.Int()
		case "prompt_tokens_details":
			if f.IsObject() {
				detailsCached = f.Get("cached_tokens").Int()
			}
		case "cache_read_input_tokens":
			readTokens = f.Int()
		case "prompt_cache_hit_tokens":
			hitTokens = f.Int()
		case "cache_creation_input_tokens":
			u.CacheCreationTokens = f.Int()
		}
		return true
	})
	u.settle(detailsCached, readTokens, hitTokens)
	return u, hasPrompt || u.TotalTokens > 0
}

// settle completes a usage object's reading: the cached tokens are the
// first of its three names that is set (prompt_tokens_details.cached_tokens,
// cache_read_input_tokens, prompt_cache_hit_tokens), and a missing total is
// prompt plus completion.
func (u *Usage) settle(detailsCached, read, hit int64) {
	switch {
	case detailsCached > 0:
		u.CachedTokens = detailsCached
	case read > 0:
		u.CachedTokens = read
	default:
		u.CachedTokens = hit
	}
	if u.TotalTokens == 0 {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
}

// EstimateTokens is a cheap prompt-size estimate (about four bytes a token),
// good enough for context-window pre-checks and TPM admission, which is
// corrected with real usage after the call.
func EstimateTokens(body []byte) int {
	return len(body)/4 + 1
}

// TextTokens estimates output tokens from a byte count of generated text
// (about four bytes a token, as EstimateTokens), rounding up.
func TextTokens(n int) int64 {
	return (int64(n) + 3) / 4
}

// TextBytes counts the bytes of generated text in a response body or stream
// chunk: the string values of content, reasoning_content, refusal and tool
// call arguments, and the string deltas of Responses API events, as they
// stand in the JSON (escapes count as written). It
// decodes nothing and allocates nothing: it jumps from colon to colon, looks
// at the member name before each, and scans only the strings it counts. Used
// to estimate the output of a call whose usage never came.
func TextBytes(data []byte) int {
	n := 0
	for {
		i := bytes.IndexByte(data, ':')
		if i < 0 {
			return n
		}
		key := data[:i]
		data = data[i+1:]
		if !textKey(key) {
			continue
		}
		j := skipSpace(data, 0)
		if j >= len(data) || data[j] != '"' {
			continue // null, or an object or list (logprobs.content)
		}
		j++
		start := j
		for j < len(data) && data[j] != '"' {
			if data[j] == '\\' {
				j++
			}
			j++
		}
		j = min(j, len(data))
		n += j - start
		data = data[j:]
	}
}

// textKey reports whether b, the bytes before a colon, ends with the name of
// a member holding generated text. In valid JSON a quote inside a string is
// escaped, so an unescaped quote before a colon always closes a member name.
func textKey(b []byte) bool {
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	if len(b) < 3 || b[len(b)-1] != '"' {
		return false
	}
	switch b[len(b)-2] { // most names are rejected here
	case 't':
		return bytes.HasSuffix(b, keyContent)
	case 's':
		return bytes.HasSuffix(b, keyArguments)
	case 'l':
		return bytes.HasSuffix(b, keyRefusal)
	case 'a': // a chat chunk's delta is an object, not counted
		return bytes.HasSuffix(b, keyDelta)
	}
	return false
}

// Member names of generated text; "content\"" also ends reasoning_content.
var (
	keyContent   = []byte(`content"`)
	keyArguments = []byte(`arguments"`)
	keyRefusal   = []byte(`refusal"`)
	keyDelta     = []byte(`delta"`)
)

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// TextMeter estimates the generated text of a stream, event by event, at
// the cost of a length comparison for most events: chunks of one stream
// share their envelope (id, model, choice index...), so an event within a
// few bytes of the last measured one carries that one's text plus the
// difference in length. An event of another length (another shape: a tool
// call, a finish chunk, the usage chunk, long content) is measured with
// TextBytes and becomes the new anchor.
type TextMeter struct {
	anchorLen, anchorText int
	total                 int
}

// meterSlack is how far an event's length may stray from the anchor's and
// still be counted by difference.
const meterSlack = 8

// Add counts one event's data.
func (m *TextMeter) Add(data []byte) {
	if d := len(data) - m.anchorLen; m.anchorLen == 0 || d > meterSlack || d < -meterSlack {
		m.anchorLen, m.anchorText = len(data), TextBytes(data)
		m.total += m.anchorText
		return
	}
	if t := m.anchorText + len(data) - m.anchorLen; t > 0 {
		m.total += t
	}
}

// Bytes is the text counted so far.
func (m *TextMeter) Bytes() int { return m.total }

// AppendUsage appends an OpenAI usage object for a provider that counts
// cache reads and writes apart from its other input tokens (Anthropic,
// Bedrock): prompt_tokens include them, as OpenAI's do and the gateway's
// pricing expects, with the reads as cached_tokens.
func AppendUsage(out []byte, input, output, cacheRead, cacheWrite int64) []byte {
	prompt := input + cacheRead + cacheWrite
	out = append(out, `{"prompt_tokens":`...)
	out = strconv.AppendInt(out, prompt, 10)
	out = append(out, `,"completion_tokens":`...)
	out = strconv.AppendInt(out, output, 10)
	out = append(out, `,"total_tokens":`...)
	out = strconv.AppendInt(out, prompt+output, 10)
	out = append(out, `,"prompt_tokens_details":{"cached_tokens":`...)
	out = strconv.AppendInt(out, cacheRead, 10)
	out = append(out, `},"cache_read_input_tokens":`...)
	out = strconv.AppendInt(out, cacheRead, 10)
	out = append(out, `,"cache_creation_input_tokens":`...)
	out = strconv.AppendInt(out, cacheWrite, 10)
	return append(out, '}')
}
