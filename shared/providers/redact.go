package providers

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/config"
)

// ErrorEvent is the SSE event that forwards a provider's in-band error
// (data: {"error":...} after content was sent) to the client: its message,
// type, param and code, each redacted (Redact), in OpenAI's shape. It is
// rebuilt from the decoded fields rather than searched as bytes, so that a
// key the provider's JSON escaped ("\/", "\u0073k-") is caught too; any
// other field is dropped.
func ErrorEvent(data []byte, d *config.Deployment) []byte {
	r := gjson.GetManyBytes(data, "error.message", "error.type", "error.param", "error.code", "error")
	type payload struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    any     `json:"code"`
	}
	p := payload{Message: r[0].String(), Type: Redact(r[1].String(), d)}
	if p.Message == "" && r[4].Type == gjson.String { // {"error":"..."} (Ollama, vLLM)
		p.Message = r[4].Str
	}
	p.Message = Redact(p.Message, d)
	if r[2].Type == gjson.String {
		s := Redact(r[2].Str, d)
		p.Param = &s
	}
	switch r[3].Type {
	case gjson.String:
		p.Code = Redact(r[3].Str, d)
	case gjson.Number:
		p.Code = r[3].Num
	}
	b, _ := json.Marshal(struct {
		Error payload `json:"error"`
	}{p})
	out := make([]byte, 0, len(b)+8)
	out = append(out, "data: "...)
	out = append(out, b...)
	return append(out, "\n\n"...)
}

var (
	keyLike = regexp.MustCompile(`\b(sk|pk|rk)-[A-Za-z0-9_\-*]{6,}`)
	// A Google OAuth access token (Vertex AI's), and any bearer
	// credential a provider quotes with its scheme.
	tokenLike  = regexp.MustCompile(`\bya29\.[A-Za-z0-9_\-.]{6,}`)
	bearerLike = regexp.MustCompile(`(?i)\b(bearer)(\s+|=)[A-Za-z0-9._~+/\-]{8,}=*`)
)

// Redact removes the deployment's credentials (its API key as loaded and as rotated, AWS secret key
// and session token) and anything that looks like an API key, a Google
// access token or a bearer credential from a provider message.
func Redact(msg string, d *config.Deployment) string {
	if d != nil {
		for _, s := range [...]string{d.APIKey, d.Key(), d.AWS.SecretAccessKey, d.AWS.SessionToken} {
			if len(s) >= 4 {
				msg = strings.ReplaceAll(msg, s, "[redacted]")
			}
		}
	}
	msg = bearerLike.ReplaceAllString(msg, "$1 [redacted]")
	msg = tokenLike.ReplaceAllString(msg, "[redacted]")
	return keyLike.ReplaceAllString(msg, "[redacted]")
}
