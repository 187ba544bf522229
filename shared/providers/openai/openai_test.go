package openai

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
	body := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	tests := []struct {
		name   string
		d      config.Deployment
		call   wire.Call
		url    string
		header http.Header
	}{
		{
			name: "chat",
			d:    config.Deployment{APIBase: "https://api.openai.com/v1", APIKey: "sk-test"},
			call: wire.Call{Op: wire.OpChat, Body: body},
			url:  "https://api.openai.com/v1/chat/completions",
			header: http.Header{
				"Content-Type":  {"application/json"},
				"Authorization": {"Bearer sk-test"},
			},
		},
		{
			name: "chat stream",
			d:    config.Deployment{APIBase: "https://api.openai.com/v1", APIKey: "sk-test"},
			call: wire.Call{Op: wire.OpChat, Body: body, Stream: true},
			url:  "https://api.openai.com/v1/chat/completions",
			header: http.Header{
				"Content-Type":  {"application/json"},
				"Accept":        {"text/event-stream"},
				"Authorization": {"Bearer sk-test"},
			},
		},
		{
			name:   "embeddings",
			d:      config.Deployment{APIBase: "http://127.0.0.1:8000/v1", APIKey: "k"},
			call:   wire.Call{Op: wire.OpEmbeddings, Body: body},
			url:    "http://127.0.0.1:8000/v1/embeddings",
			header: http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer k"}},
		},
		{
			name:   "no key, no Authorization",
			d:      config.Deployment{APIBase: "http://localhost:11434/v1"},
			call:   wire.Call{Op: wire.OpChat, Body: body, Stream: true},
			url:    "http://localhost:11434/v1/chat/completions",
			header: http.Header{"Content-Type": {"application/json"}, "Accept": {"text/event-stream"}},
		},
		{
			name:   "base with a path prefix",
			d:      config.Deployment{APIBase: "https://gw.example.com/openai/v1", APIKey: "k"},
			call:   wire.Call{Op: wire.OpChat, Body: body},
			url:    "https://gw.example.com/openai/v1/chat/completions",
			header: http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer k"}},
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
				t.Errorf("URL = %s, want %s", got, tt.url)
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
			again, _ := io.ReadAll(rc)
			if string(again) != string(tt.call.Body) {
				t.Errorf("GetBody = %s, want %s", again, tt.call.Body)
			}
		})
	}
}

func TestNewRequestBadBase(t *testing.T) {
	for _, base := range []string{"http://bad host", "http://[::1", "http://x\x7f"} {
		if req, err := NewRequest(context.Background(), &config.Deployment{APIBase: base}, wire.Call{}); err == nil {
			t.Errorf("NewRequest(base %q) = %s, want an error", base, req.URL)
		}
	}
}

// TestNewRequestOnTheWire checks what a server receives.
func TestNewRequestOnTheWire(t *testing.T) {
	type seen struct {
		method, path, auth, apiKey, accept, ctype, body string
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.RequestURI(), r.Header.Get("Authorization"), r.Header.Get("api-key"), r.Header.Get("Accept"), r.Header.Get("Content-Type"), string(b)}
	}))
	defer srv.Close()
	d := &config.Deployment{APIBase: srv.URL + "/v1", APIKey: "sk-wire"}
	req, err := NewRequest(context.Background(), d, wire.Call{Op: wire.OpChat, Body: []byte(`{"stream":true}`), Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := seen{"POST", "/v1/chat/completions", "Bearer sk-wire", "", "text/event-stream", "application/json", `{"stream":true}`}
	if s := <-got; s != want {
		t.Errorf("server saw %+v, want %+v", s, want)
	}
}
