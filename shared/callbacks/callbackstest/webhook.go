package callbackstest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Webhook is a fake generic_api endpoint: it keeps every payload posted,
// by id, and how many times each came.
type Webhook struct {
	*httptest.Server
	outage
	Posts    int
	Payloads map[string]map[string]any
	Times    map[string]int
	Headers  []http.Header
}

// NewWebhook starts a fake endpoint.
func NewWebhook(t testing.TB) *Webhook {
	f := &Webhook{Payloads: map[string]map[string]any{}, Times: map[string]int{}}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.refused(w) {
			return
		}
		var ps []map[string]any
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(b, &ps) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		f.Posts++
		f.Headers = append(f.Headers, r.Header.Clone())
		for _, p := range ps {
			id, _ := p["id"].(string)
			f.Payloads[id] = p
			f.Times[id]++
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(f.Close)
	return f
}

// Payload returns the payload of id, nil when none came.
func (f *Webhook) Payload(id string) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.Payloads[id]
}

// Count returns how many distinct calls were posted.
func (f *Webhook) Count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.Payloads)
}
