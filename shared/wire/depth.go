package wire

import (
	"bytes"
	"errors"
	"strconv"

	"github.com/tidwall/gjson"
)

// MaxDepth is how deep a request body may nest arrays and objects, the
// request object itself counting as one level.
//
// The JSON parser (gjson) recurses once per level with no limit of its own:
// a 6 MB body of '[' overflows the 1 GB goroutine stack, which kills the
// process, and each level costs about 170 bytes of stack until then. 1000
// keeps that under 200 KB per request, while no real chat request comes
// near it (OpenAI limits structured-output schemas to a few levels), and
// LiteLLM's own parser, Python's json, fails at about this depth already
// (its recursion limit is 1000). encoding/json's 10000 would let a few
// hundred concurrent requests hold hundreds of MB of stack.
const MaxDepth = 1000

// ErrTooDeep is the error of a body nested deeper than MaxDepth.
var ErrTooDeep = errors.New("request body nests arrays and objects deeper than " + strconv.Itoa(MaxDepth) + " levels")

// CheckDepth returns ErrTooDeep when b nests arrays and objects deeper than
// MaxDepth. It must run before anything parses b recursively.
//
// It is one pass with no recursion and no allocation: brackets inside
// strings are skipped with bytes.IndexByte (vectorised), which is most of a
// chat request's bytes. It does not validate: malformed JSON is left to the
// parser that follows, and an unbalanced closing bracket only lowers the
// count.
func CheckDepth(b []byte) error {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			end := stringEnd(b, i+1)
			if end < 0 {
				return nil // unterminated string: invalid JSON, refused as such
			}
			i = end
		case '[', '{':
			if depth++; depth > MaxDepth {
				return ErrTooDeep
			}
		case ']', '}':
			depth--
		}
	}
	return nil
}

// stringEnd returns the index of the quote that closes the string whose
// content starts at b[i], or -1. A quote is escaped when an odd number of
// backslashes precede it; each backslash is looked at once at most.
func stringEnd(b []byte, i int) int {
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return -1
		}
		q := i + j
		k := q
		for k > i && b[k-1] == '\\' {
			k--
		}
		if (q-k)%2 == 0 {
			return q
		}
		i = q + 1
	}
}

// Valid reports whether b is one JSON value nested no deeper than MaxDepth:
// gjson's validation, which recurses, behind CheckDepth's bound. The
// gateway checks a provider's non-streamed answer with it before passing it
// on and billing it.
func Valid(b []byte) bool {
	return CheckDepth(b) == nil && gjson.ValidBytes(b)
}
