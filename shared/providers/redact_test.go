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
