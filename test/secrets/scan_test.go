package secrets

import (
	"encoding/base64"
	"net/url"
	"strings"
	"testing"
)

// The search finds a secret whole, cut to any 12 characters, base64- or
// URL-encoded; not in its origin; and not LiteLLM's "sk-..." + last 4.
func TestScanFinds(t *testing.T) {
	const s = "sk-test-Q2w3E4r5T6y7U8i9O0/p+Z"
	cases := []struct {
		name, data string
		leak       bool
	}{
		{"whole", "key=" + s, true},
		{"first 12", "key " + s[:12] + "...", true},
		{"last 12", "..." + s[len(s)-12:], true},
		{"middle 12", s[5:17], true},
		{"base64", base64.StdEncoding.EncodeToString([]byte(s)), true},
		{"base64url", base64.RawURLEncoding.EncodeToString([]byte(s)), true},
		{"url-encoded", url.QueryEscape(s), true},
		{"display form", `"key_name":"sk-...` + s[len(s)-4:] + `"`, false},
		{"11 characters", s[3:14], false},
		{"origin", s, false},
	}
	for _, c := range cases {
		r := &Recorder{}
		origin := ""
		if c.name == "origin" {
			origin = "it"
		}
		r.Secret("test", s, origin)
		r.Record("it", []byte(c.data))
		leaks := r.Scan()
		if (len(leaks) > 0) != c.leak {
			t.Errorf("%s: leaks %v, want leak %v", c.name, leaks, c.leak)
		}
		for _, l := range leaks {
			if strings.Contains(l.Context, s[:12]) {
				t.Errorf("%s: the report prints the secret: %s", c.name, l.Context)
			}
		}
	}
}
