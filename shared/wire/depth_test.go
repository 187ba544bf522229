package wire

import (
	"errors"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// nested is a request whose "x" member nests n arrays (balanced or not).
func nested(n int, balanced bool) []byte {
	s := `{"model":"gpt-4o-mini","x":` + strings.Repeat("[", n)
	if balanced {
		s += strings.Repeat("]", n) + "}"
	}
	return []byte(s)
}

// TestParseTooDeep: a body nested deeper than MaxDepth is refused before any
// recursive parse. The stack is capped well below the runtime's 1 GB so that
// a recursive parse of these bodies fails fast (fatally) instead of taking
// the machine's memory first.
func TestParseTooDeep(t *testing.T) {
	defer debug.SetMaxStack(debug.SetMaxStack(64 << 20))
	for _, tt := range []struct {
		name string
		body []byte
	}{
		{"unbalanced 5.8M", nested(5_800_000, false)},
		{"balanced 1M", nested(1_000_000, true)},
		{"one over the bound", nested(MaxDepth, true)}, // the request object is one level more
		{"objects", []byte(`{"model":"m","x":` + strings.Repeat(`{"a":`, MaxDepth) + "1" + strings.Repeat("}", MaxDepth) + "}")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse(tt.body)
			if err == nil || r != nil {
				t.Fatalf("Parse accepted a body %d levels deep", MaxDepth+1)
			}
			if !errors.Is(err, ErrTooDeep) || !strings.Contains(err.Error(), "deeper than") {
				t.Fatalf("error = %v, want ErrTooDeep", err)
			}
		})
	}
}

func TestParseDepthAtBound(t *testing.T) {
	r, err := Parse(nested(MaxDepth-1, true)) // MaxDepth levels with the request object
	if err != nil {
		t.Fatalf("a body exactly MaxDepth deep was refused: %v", err)
	}
	if r.Model != "gpt-4o-mini" {
		t.Fatalf("Model = %q", r.Model)
	}
}

func TestCheckDepthStrings(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth+1)
	for _, tt := range []struct {
		name string
		body string
		ok   bool
	}{
		{"brackets in a string", `{"a":"` + deep + `"}`, true},
		{"escaped quote keeps the string open", `{"a":"\"` + deep + `"}`, true},
		{"escaped backslash closes the string", `{"a":"\\",` + `"b":` + deep, false},
		{"three backslashes then a quote", `{"a":"\\\"` + deep + `"}`, true},
		{"brackets in a key", `{"` + deep + `":1}`, true},
		{"unterminated string", `{"a":"` + deep, true}, // invalid JSON, refused as such later
		{"closing brackets only", strings.Repeat("]", 5000), true},
		{"empty", ``, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckDepth([]byte(tt.body))
			if (err == nil) != tt.ok {
				t.Fatalf("CheckDepth = %v, want ok %v", err, tt.ok)
			}
		})
	}
}

// BenchmarkCheckDepth runs on every request: compare with the validation
// that follows it (BenchmarkValidBytes) on the same body.
func BenchmarkCheckDepth(b *testing.B) {
	body := benchBody()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if CheckDepth(body) != nil {
			b.Fatal("refused")
		}
	}
}

func BenchmarkParse(b *testing.B) {
	body := benchBody()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := Parse(body); err != nil {
			b.Fatal(err)
		}
	}
}

// benchBody is a chat request of about 20 KB: a few turns of prose, with
// quotes and escapes, and a tool with a JSON schema.
func benchBody() []byte {
	var sb strings.Builder
	sb.WriteString(`{"model":"gpt-4o-mini","stream":true,"max_tokens":512,"messages":[`)
	for i := range 20 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"role":"user","content":"`)
		sb.WriteString(strings.Repeat(`Some prose, with \"quotes\", a path C:\\dir\\file and {braces} [brackets]. `, 12))
		sb.WriteString(`"}`)
	}
	sb.WriteString(`],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"b":{"type":"string"}}}}}}}}]}`)
	return []byte(sb.String())
}

func BenchmarkValidBytes(b *testing.B) {
	body := benchBody()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if !gjson.ValidBytes(body) {
			b.Fatal("invalid")
		}
	}
}

// TestParseDuplicateKeys: a repeated top-level key is refused, naming the
// key, so that no reader of the body (the gateway reads the last value,
// gjson's Get and the translators the first) sees another value than the
// one routed and checked. Keys compare unescaped.
func TestParseDuplicateKeys(t *testing.T) {
	many := `{"model":"m"`
	for i := range 40 {
		many += `,"k` + strconv.Itoa(i) + `":1`
	}
	for _, tt := range []struct{ body, key string }{
		{`{"model":"claude-opus-4-20250514","model":"claude-cheap","messages":[]}`, "model"},
		{`{"model":"m","stream":true,"stream":false}`, "stream"},
		{`{"model":"m","tags":["a"],"tags":["b"]}`, "tags"},
		{`{"model":"m","mod\u0065l":"n"}`, "model"},
		{`{"model":"m","messages":[],"temperature":1,"messages":[]}`, "messages"},
		{many + `,"k39":2}`, "k39"},
		{many + `,"model":"n"}`, "model"},
	} {
		r, err := Parse([]byte(tt.body))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Param != tt.key || !strings.Contains(fe.Msg, `duplicate key "`+tt.key+`"`) {
			t.Errorf("Parse(%.80s) = %v, %v; want a FieldError naming %q", tt.body, r != nil, err, tt.key)
		}
	}
	// The same key below the top level is the upstream's to judge.
	if _, err := Parse([]byte(many + `,"x":{"a":1,"a":2},"y":[{"b":1},{"b":1}]}`)); err != nil {
		t.Fatalf("nested repeated keys refused: %v", err)
	}
}

func TestValid(t *testing.T) {
	defer debug.SetMaxStack(debug.SetMaxStack(64 << 20))
	for _, tt := range []struct {
		body string
		ok   bool
	}{
		{`{"id":"x","choices":[]}`, true},
		{`{"id":"x","choices":[`, false},
		{`{"id":"x"} {"id":"y"}`, false},
		{``, false},
		{strings.Repeat("[", 5_800_000), false},
		{strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), false},
	} {
		if got := Valid([]byte(tt.body)); got != tt.ok {
			t.Errorf("Valid(%.40s) = %v", tt.body, got)
		}
	}
}

// BenchmarkValid: the check of every non-streamed answer, on an embeddings
// answer (numbers, the worst case for its bytes) of about 100 KB.
func BenchmarkValid(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"object":"list","data":[`)
	for i := range 5 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"object":"embedding","index":` + strconv.Itoa(i) + `,"embedding":[`)
		for j := range 1536 {
			if j > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString("-0.0123456789")
		}
		sb.WriteString(`]}`)
	}
	sb.WriteString(`],"model":"text-embedding-3-small","usage":{"prompt_tokens":8,"total_tokens":8}}`)
	body := []byte(sb.String())
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if !Valid(body) {
			b.Fatal("invalid")
		}
	}
}
