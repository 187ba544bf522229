package wire

import (
	"math"
	"testing"
)

// max_tokens and n beyond int64 saturate instead of reading as
// math.MinInt64 (gjson's Int of 1e300); n above MaxN is refused, naming n.
func TestParseHostileNumbers(t *testing.T) {
	for _, tc := range []struct {
		body      string
		maxTokens int64
		n         int64
	}{
		{`{"max_tokens":100,"n":3}`, 100, 3},
		{`{"max_tokens":9223372036854775807}`, math.MaxInt64, 0},
		{`{"max_tokens":9223372036854775808}`, math.MaxInt64, 0},
		{`{"max_completion_tokens":1e300}`, math.MaxInt64, 0},
		{`{"max_tokens":-1e300,"n":-5}`, 0, -5},
		{`{"max_tokens":4611686018427387904,"n":128}`, 1 << 62, 128},
		{`{"n":"4"}`, 0, 0},
	} {
		r, err := Parse([]byte(tc.body))
		if err != nil {
			t.Errorf("%s: %v", tc.body, err)
			continue
		}
		if r.MaxTokens != tc.maxTokens || r.N != tc.n {
			t.Errorf("%s: max_tokens %d, n %d; want %d, %d", tc.body, r.MaxTokens, r.N, tc.maxTokens, tc.n)
		}
	}
	for _, body := range []string{`{"n":129}`, `{"n":1e300}`, `{"n":9223372036854775807}`} {
		_, err := Parse([]byte(body))
		fe, ok := err.(*FieldError)
		if !ok || fe.Param != "n" {
			t.Errorf("%s: error %v, want a FieldError naming n", body, err)
		}
	}
}
