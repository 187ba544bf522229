package providers

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/providers/azure"
	"github.com/sluice-gw/sluice/shared/providers/openai"
	"github.com/sluice-gw/sluice/shared/wire"
)

// newRequest is a vendor's request builder (the vendors that pass OpenAI's
// bodies through untranslated).
type newRequest func(context.Context, *config.Deployment, wire.Call) (*http.Request, error)

type ctxKey struct{}

// TestNewRequest checks the request each OpenAI-shaped vendor builds: its
// URL, headers (the key in the vendor's own header), body and context.
func TestNewRequest(t *testing.T) {
	body := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	const az = "https://my-resource.openai.azure.com"
	json := http.Header{"Content-Type": {"application/json"}}
	sse := http.Header{"Content-Type": {"application/json"}, "Accept": {"text/event-stream"}}
	with := func(h http.Header, k, v string) http.Header { h = h.Clone(); h[k] = []string{v}; return h }
	tests := []struct {
		name   string
		build  newRequest
		d      config.Deployment
		call   wire.Call
		url    string
		header http.Header
	}{
		{"openai chat", openai.NewRequest, config.Deployment{APIBase: "https://api.openai.com/v1", APIKey: "sk-test"},
			wire.Call{Op: wire.OpChat, Body: body}, "https://api.openai.com/v1/chat/completions", with(json, "Authorization", "Bearer sk-test")},
		{"openai chat stream", openai.NewRequest, config.Deployment{APIBase: "https://api.openai.com/v1", APIKey: "sk-test"},
			wire.Call{Op: wire.OpChat, Body: body, Stream: true}, "https://api.openai.com/v1/chat/completions", with(sse, "Authorization", "Bearer sk-test")},
		{"openai embeddings", openai.NewRequest, config.Deployment{APIBase: "http://127.0.0.1:8000/v1", APIKey: "k"},
			wire.Call{Op: wire.OpEmbeddings, Body: body}, "http://127.0.0.1:8000/v1/embeddings", with(json, "Authorization", "Bearer k")},
		{"openai no key, no Authorization", openai.NewRequest, config.Deployment{APIBase: "http://localhost:11434/v1"},
			wire.Call{Op: wire.OpChat, Body: body, Stream: true}, "http://localhost:11434/v1/chat/completions", sse},
		{"openai base with a path prefix", openai.NewRequest, config.Deployment{APIBase: "https://gw.example.com/openai/v1", APIKey: "k"},
			wire.Call{Op: wire.OpChat, Body: body}, "https://gw.example.com/openai/v1/chat/completions", with(json, "Authorization", "Bearer k")},
		{"azure chat, default api-version", azure.NewRequest, config.Deployment{APIBase: az, Model: "gpt-4o", APIKey: "azkey"},
			wire.Call{Op: wire.OpChat, Body: body}, az + "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21", with(json, "Api-Key", "azkey")},
		{"azure chat stream, explicit api-version", azure.NewRequest, config.Deployment{APIBase: az, Model: "gpt-4o", APIKey: "azkey", APIVersion: "2024-02-01"},
			wire.Call{Op: wire.OpChat, Body: body, Stream: true}, az + "/openai/deployments/gpt-4o/chat/completions?api-version=2024-02-01", with(sse, "Api-Key", "azkey")},
		{"azure embeddings, preview version", azure.NewRequest, config.Deployment{APIBase: az, Model: "embed-small", APIKey: "azkey", APIVersion: "2025-04-01-preview"},
			wire.Call{Op: wire.OpEmbeddings, Body: body}, az + "/openai/deployments/embed-small/embeddings?api-version=2025-04-01-preview", with(json, "Api-Key", "azkey")},
		{"azure deployment name and version escaped", azure.NewRequest, config.Deployment{APIBase: az, Model: "my dep/1?x", APIKey: "azkey", APIVersion: "v&x=1"},
			wire.Call{Op: wire.OpChat, Body: body}, az + "/openai/deployments/my%20dep%2F1%3Fx/chat/completions?api-version=v%26x%3D1", with(json, "Api-Key", "azkey")},
		{"azure no key, no api-key header", azure.NewRequest, config.Deployment{APIBase: "http://127.0.0.1:9", Model: "m"},
			wire.Call{Op: wire.OpChat, Body: body}, "http://127.0.0.1:9/openai/deployments/m/chat/completions?api-version=2024-10-21", json},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.WithValue(context.Background(), ctxKey{}, tt.name)
			req, err := tt.build(ctx, &tt.d, tt.call)
			if err != nil {
				t.Fatalf("NewRequest: %v", err)
			}
			if req.Method != http.MethodPost {
				t.Errorf("Method = %s, want POST", req.Method)
			}
			if got := req.URL.String(); got != tt.url {
				t.Errorf("URL = %s\n      want %s", got, tt.url)
			}
			if !reflect.DeepEqual(req.Header, tt.header) {
				t.Errorf("Header = %v, want %v", req.Header, tt.header)
			}
			if req.Context().Value(ctxKey{}) != tt.name {
				t.Error("the request does not carry the call's context")
			}
			if req.ContentLength != int64(len(tt.call.Body)) {
				t.Errorf("ContentLength = %d, want %d", req.ContentLength, len(tt.call.Body))
			}
			got, _ := io.ReadAll(req.Body)
			if string(got) != string(tt.call.Body) {
				t.Errorf("Body = %s, want %s", got, tt.call.Body)
			}
			// GetBody lets the transport replay the body on a fresh connection.
			if req.GetBody == nil {
				t.Fatal("GetBody is nil")
			}
			rc, err := req.GetBody()
			if err != nil {
				t.Fatal(err)
			}
			if again, _ := io.ReadAll(rc); string(again) != string(tt.call.Body) {
				t.Errorf("GetBody = %s, want %s", again, tt.call.Body)
			}
		})
	}
}

func TestNewRequestBadBase(t *testing.T) {
	for _, build := range []newRequest{openai.NewRequest, azure.NewRequest} {
		for _, base := range []string{"http://bad host", "http://[::1", "http://x\x7f"} {
			if req, err := build(context.Background(), &config.Deployment{APIBase: base, Model: "m"}, wire.Call{}); err == nil {
				t.Errorf("NewRequest(base %q) = %s, want an error", base, req.URL)
			}
		}
	}
}

// TestNewRequestOnTheWire checks what a server receives, including Azure's
// escaped deployment name.
func TestNewRequestOnTheWire(t *testing.T) {
	type seen struct {
		method, rawPath, path, version, apiKey, auth, accept, ctype, body string
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.EscapedPath(), r.URL.Path, r.URL.Query().Get("api-version"),
			r.Header.Get("api-key"), r.Header.Get("Authorization"), r.Header.Get("Accept"), r.Header.Get("Content-Type"), string(b)}
	}))
	defer srv.Close()
	tests := []struct {
		build newRequest
		d     config.Deployment
		want  seen
	}{
		{openai.NewRequest, config.Deployment{APIBase: srv.URL + "/v1", APIKey: "sk-wire"},
			seen{"POST", "/v1/chat/completions", "/v1/chat/completions", "", "", "Bearer sk-wire", "text/event-stream", "application/json", `{"stream":true}`}},
		{azure.NewRequest, config.Deployment{APIBase: srv.URL, Model: "gpt 4o/eu", APIKey: "azkey"},
			seen{"POST", "/openai/deployments/gpt%204o%2Feu/chat/completions", "/openai/deployments/gpt 4o/eu/chat/completions",
				"2024-10-21", "azkey", "", "text/event-stream", "application/json", `{"stream":true}`}},
	}
	for _, tt := range tests {
		req, err := tt.build(context.Background(), &tt.d, wire.Call{Op: wire.OpChat, Body: []byte(`{"stream":true}`), Stream: true})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if s := <-got; s != tt.want {
			t.Errorf("server saw %+v\n           want %+v", s, tt.want)
		}
	}
}

func TestStreamUsage(t *testing.T) {
	tests := []struct {
		d    config.Deployment
		want bool
	}{
		{config.Deployment{Protocol: config.ProtocolOpenAI}, true},
		{config.Deployment{Protocol: config.ProtocolMock}, true},
		{config.Deployment{Protocol: config.ProtocolAnthropic}, true},
		{config.Deployment{Protocol: config.ProtocolBedrock}, true},
		{config.Deployment{Protocol: config.ProtocolNone}, false},
		{config.Deployment{Protocol: config.ProtocolAzure}, true}, // azure.DefaultAPIVersion
		{config.Deployment{Protocol: config.ProtocolAzure, APIVersion: azure.DefaultAPIVersion}, true},
		{config.Deployment{Protocol: config.ProtocolAzure, APIVersion: "2024-10-21"}, true},
		{config.Deployment{Protocol: config.ProtocolAzure, APIVersion: "2024-09-01-preview"}, true},
		{config.Deployment{Protocol: config.ProtocolAzure, APIVersion: "2024-09-01"}, true},
		{config.Deployment{Protocol: config.ProtocolAzure, APIVersion: "2025-04-01-preview"}, true},
		{config.Deployment{Protocol: config.ProtocolAzure, APIVersion: "2024-08-01-preview"}, false},
		{config.Deployment{Protocol: config.ProtocolAzure, APIVersion: "2024-06-01"}, false},
		{config.Deployment{Protocol: config.ProtocolAzure, APIVersion: "2024-02-01"}, false},
		{config.Deployment{Protocol: config.ProtocolAzure, APIVersion: "2023-05-15"}, false},
	}
	for _, tt := range tests {
		if got := StreamUsage(&tt.d); got != tt.want {
			t.Errorf("StreamUsage(protocol %d, api-version %q) = %v, want %v", tt.d.Protocol, tt.d.APIVersion, got, tt.want)
		}
	}
}
