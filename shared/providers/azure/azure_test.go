package azure

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/wire"
)

type ctxKey struct{}

func TestNewRequest(t *testing.T) {
	const base = "https://my-resource.openai.azure.com"
	body := []byte(`{"model":"gpt-4o","messages":[]}`)
	tests := []struct {
		name    string
		d       config.Deployment
		call    wire.Call
		url     string
		version string // the api-version a server decodes
		header  http.Header
	}{
		{
			name:    "chat, default api-version",
			d:       config.Deployment{APIBase: base, Model: "gpt-4o", APIKey: "azkey"},
			call:    wire.Call{Op: wire.OpChat, Body: body},
			url:     base + "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21",
			version: "2024-10-21",
			header:  http.Header{"Content-Type": {"application/json"}, "Api-Key": {"azkey"}},
		},
		{
			name:    "chat stream, explicit api-version",
			d:       config.Deployment{APIBase: base, Model: "gpt-4o", APIKey: "azkey", APIVersion: "2024-02-01"},
			call:    wire.Call{Op: wire.OpChat, Body: body, Stream: true},
			url:     base + "/openai/deployments/gpt-4o/chat/completions?api-version=2024-02-01",
			version: "2024-02-01",
			header:  http.Header{"Content-Type": {"application/json"}, "Accept": {"text/event-stream"}, "Api-Key": {"azkey"}},
		},
		{
			name:    "embeddings, preview version",
			d:       config.Deployment{APIBase: base, Model: "embed-small", APIKey: "azkey", APIVersion: "2025-04-01-preview"},
			call:    wire.Call{Op: wire.OpEmbeddings, Body: body},
			url:     base + "/openai/deployments/embed-small/embeddings?api-version=2025-04-01-preview",
			version: "2025-04-01-preview",
			header:  http.Header{"Content-Type": {"application/json"}, "Api-Key": {"azkey"}},
		},
		{
			name:    "deployment name and version escaped",
			d:       config.Deployment{APIBase: base, Model: "my dep/1?x", APIKey: "azkey", APIVersion: "v&x=1"},
			call:    wire.Call{Op: wire.OpChat, Body: body},
			url:     base + "/openai/deployments/my%20dep%2F1%3Fx/chat/completions?api-version=v%26x%3D1",
			version: "v&x=1",
			header:  http.Header{"Content-Type": {"application/json"}, "Api-Key": {"azkey"}},
		},
		{
			name:    "no key, no api-key header",
			d:       config.Deployment{APIBase: "http://127.0.0.1:9", Model: "m"},
			call:    wire.Call{Op: wire.OpChat, Body: body},
			url:     "http://127.0.0.1:9/openai/deployments/m/chat/completions?api-version=2024-10-21",
			version: "2024-10-21",
			header:  http.Header{"Content-Type": {"application/json"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.WithValue(context.Background(), ctxKey{}, tt.name)
			req, err := NewRequest(ctx, &tt.d, tt.call)
			if err != nil {
				t.Fatalf("NewRequest: %v", err)
			}
			if req.Method != http.MethodPost {
				t.Errorf("Method = %s, want POST", req.Method)
			}
			if got := req.URL.String(); got != tt.url {
				t.Errorf("URL = %s\n      want %s", got, tt.url)
			}
			if q := req.URL.Query(); len(q) != 1 || q.Get("api-version") != tt.version {
				t.Errorf("query = %v, want only api-version=%q", q, tt.version)
			}
			if !reflect.DeepEqual(req.Header, tt.header) {
				t.Errorf("Header = %v, want %v", req.Header, tt.header)
			}
			if _, ok := req.Header["Authorization"]; ok {
				t.Error("Azure request carries Authorization")
			}
			if req.Context().Value(ctxKey{}) != tt.name {
				t.Error("the request does not carry the call's context")
			}
			got, _ := io.ReadAll(req.Body)
			if string(got) != string(tt.call.Body) || req.ContentLength != int64(len(tt.call.Body)) {
				t.Errorf("Body = %s (ContentLength %d), want %s", got, req.ContentLength, tt.call.Body)
			}
		})
	}
}

func TestNewRequestBadBase(t *testing.T) {
	if req, err := NewRequest(context.Background(), &config.Deployment{APIBase: "http://bad host", Model: "m"}, wire.Call{}); err == nil {
		t.Errorf("NewRequest = %s, want an error", req.URL)
	}
}

// TestNewRequestOnTheWire checks what a server receives, including the
// escaped deployment name.
func TestNewRequestOnTheWire(t *testing.T) {
	type seen struct {
		method, rawPath, path, version, apiKey, auth, accept, body string
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.EscapedPath(), r.URL.Path, r.URL.Query().Get("api-version"),
			r.Header.Get("api-key"), r.Header.Get("Authorization"), r.Header.Get("Accept"), string(b)}
	}))
	defer srv.Close()
	d := &config.Deployment{APIBase: srv.URL, Model: "gpt 4o/eu", APIKey: "azkey"}
	req, err := NewRequest(context.Background(), d, wire.Call{Op: wire.OpChat, Body: []byte(`{}`), Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := seen{"POST", "/openai/deployments/gpt%204o%2Feu/chat/completions", "/openai/deployments/gpt 4o/eu/chat/completions",
		"2024-10-21", "azkey", "", "text/event-stream", `{}`}
	if s := <-got; s != want {
		t.Errorf("server saw %+v\n           want %+v", s, want)
	}
}

func TestSupportsStreamUsage(t *testing.T) {
	tests := []struct {
		version string
		want    bool
	}{
		{"", true}, // DefaultAPIVersion
		{DefaultAPIVersion, true},
		{"2024-10-21", true},
		{"2024-09-01-preview", true},
		{"2024-09-01", true},
		{"2025-04-01-preview", true},
		{"2024-08-01-preview", false},
		{"2024-06-01", false},
		{"2024-02-01", false},
		{"2023-05-15", false},
	}
	for _, tt := range tests {
		if got := SupportsStreamUsage(tt.version); got != tt.want {
			t.Errorf("SupportsStreamUsage(%q) = %v, want %v", tt.version, got, tt.want)
		}
	}
}
