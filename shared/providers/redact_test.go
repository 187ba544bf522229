package providers

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
)

func TestRedactAWSCredentials(t *testing.T) {
	d := &config.Deployment{ID: "b", AWS: config.AWSParams{SecretAccessKey: "wJalr/Secret+Key", SessionToken: "IQoJSessionToken=="}}
	got := Redact("token IQoJSessionToken== secret wJalr/Secret+Key", d)
	if strings.Contains(got, "IQoJSessionToken") || strings.Contains(got, "wJalr") {
		t.Fatalf("not redacted: %q", got)
	}
}

// Vertex AI's access tokens (ya29.) and any bearer credential a provider
// quotes are redacted, whoever the deployment.
func TestRedactBearerTokens(t *testing.T) {
	for _, msg := range []string{
		"Request had invalid authentication credentials: Authorization=Bearer ya29.c.b0AXv0zTMp-secret_token.part",
		"token ya29.a0AfB_byOpaqueTokenValue was refused",
		"header was bearer Zm9vYmFyYmF6cXV4c2VjcmV0== ok",
	} {
		got := Redact(msg, &config.Deployment{ID: "v"})
		if strings.Contains(got, "ya29.") || strings.Contains(got, "secret") || strings.Contains(got, "Zm9v") || !strings.Contains(got, "[redacted]") {
			t.Errorf("not redacted: %q -> %q", msg, got)
		}
	}
}

// A provider's own *apierr.Error (Bedrock's) is redacted on its way out,
// as a copy: the original is left alone.
func TestTransportErrorRedactsProviderErrors(t *testing.T) {
	d := &config.Deployment{ID: "b", AWS: config.AWSParams{SessionToken: "IQoJSessionToken=="}}
	orig := &apierr.Error{Kind: apierr.UpstreamAuth, Message: "bad token IQoJSessionToken=="}
	e := TransportError(context.Background(), d, orig)
	if strings.Contains(e.Message, "IQoJ") || e.Kind != apierr.UpstreamAuth {
		t.Fatalf("got %v", e)
	}
	if orig.Message != "bad token IQoJSessionToken==" {
		t.Fatalf("the original was changed: %q", orig.Message)
	}
	clean := &apierr.Error{Kind: apierr.UpstreamServer, Message: "boom"}
	if e := TransportError(context.Background(), d, clean); e != clean {
		t.Fatalf("a clean error was copied")
	}
	if e := TransportError(context.Background(), d, errors.New("dial tcp: refused")); e.Kind != apierr.UpstreamConnection {
		t.Fatalf("transport failure: %v", e)
	}
}

func TestErrorEvent(t *testing.T) {
	d := &config.Deployment{ID: "d", APIKey: "az0123456789abcdef"}
	for _, tc := range []struct{ name, data, msg, typ, code string }{
		{"openai", `{"error":{"message":"bad key sk-proj-abcdefgh1234","type":"api_error","param":null,"code":"invalid_api_key","extra":"az0123456789abcdef"}}`,
			"bad key [redacted]", "api_error", "invalid_api_key"},
		{"escaped key", `{"error":{"message":"key \u0061z0123456789abcdef and sk\/x","type":"overloaded_error","code":"overloaded_error"}}`,
			"key [redacted] and sk/x", "overloaded_error", "overloaded_error"},
		{"key in param and code", `{"error":{"message":"m","type":"t","param":"az0123456789abcdef","code":"az0123456789abcdef"}}`,
			"m", "t", "[redacted]"},
		{"string error", `{"error":"upstream said az0123456789abcdef"}`, "upstream said [redacted]", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := ErrorEvent([]byte(tc.data), d)
			s := string(ev)
			if !strings.HasPrefix(s, "data: ") || !strings.HasSuffix(s, "\n\n") || strings.Contains(s, "az0123456789abcdef") || strings.Contains(s, "abcdefgh1234") {
				t.Fatalf("event %q", s)
			}
			j := strings.TrimSuffix(strings.TrimPrefix(s, "data: "), "\n\n")
			r := gjson.GetMany(j, "error.message", "error.type", "error.code")
			if r[0].String() != tc.msg || r[1].String() != tc.typ || r[2].String() != tc.code {
				t.Fatalf("got %s", j)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	tests := []struct {
		name string
		key  string
		msg  string
		want string
	}{
		{"nothing to redact", "", "plain message", "plain message"},
		{"openai key", "", "key sk-abcdef123 is bad", "key [redacted] is bad"},
		{"project key with stars", "", "Incorrect API key provided: sk-proj-Ab_C-d****1234.", "Incorrect API key provided: [redacted]."},
		{"pk and rk prefixes", "", "pk-ABCDEF1 and rk-123456", "[redacted] and [redacted]"},
		{"key at start and end", "", "sk-aaaaaa sk-bbbbbb", "[redacted] [redacted]"},
		{"too short to be a key", "", "sk-abcde", "sk-abcde"},
		{"not at a word boundary", "", "task-manager disk-abcdefgh", "task-manager disk-abcdefgh"},
		{"deployment key without prefix", azureKey, "bad key " + azureKey + ", again " + azureKey, "bad key [redacted], again [redacted]"},
		{"short deployment key left alone", "abc", "abc abcdef", "abc abcdef"},
		{"four-character deployment key", "wxyz", "got wxyz", "got [redacted]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Redact(tt.msg, &config.Deployment{APIKey: tt.key}); got != tt.want {
				t.Errorf("Redact(%q) = %q, want %q", tt.msg, got, tt.want)
			}
		})
	}
	t.Run("nil deployment", func(t *testing.T) {
		if got, want := Redact("x sk-abcdefgh y", nil), "x [redacted] y"; got != want {
			t.Errorf("Redact = %q, want %q", got, want)
		}
	})
}

// A key cut in half by the message limit must not survive in part.
func TestRedactBeforeCut(t *testing.T) {
	d := &config.Deployment{ID: "d1", APIKey: "0123456789abcdef0123456789abcdef"}
	body := []byte(strings.Repeat("x", 270) + d.APIKey + " trailing")
	e := Classify(d, 500, nil, body)
	if strings.Contains(e.Message, "0123456789abcdef0123") {
		t.Fatalf("part of the key leaked: %q", e.Message)
	}
}
