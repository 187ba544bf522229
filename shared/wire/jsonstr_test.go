package wire

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\s`, "line\nret\rtab\t", "\x00\x01\x1f", "héllo ✓ 😀", "bad \xff\xfe utf8", "end\xc3"} {
		out := AppendString([]byte("x"), s)
		if out[0] != 'x' {
			t.Fatalf("%q: prefix lost", s)
		}
		var got string
		if err := json.Unmarshal(out[1:], &got); err != nil {
			t.Fatalf("%q: %s is not a JSON string: %v", s, out[1:], err)
		}
		var want strings.Builder
		for _, r := range s { // U+FFFD for each invalid byte
			want.WriteRune(r)
		}
		if got != want.String() {
			t.Errorf("%q read back as %q, want %q", s, got, want.String())
		}
	}
}
