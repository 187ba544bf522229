// Package callbackstest holds fakes of the sinks' destinations for tests:
// Langfuse's ingestion API and a generic webhook (httptest servers), which
// check what they receive and keep it as the real service would (Langfuse
// upserts by id: a redelivered event replaces, it does not add).
package callbackstest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Langfuse is a fake of Langfuse's public ingestion API.
type Langfuse struct {
	*httptest.Server
	Public, Secret string

	outage
	Requests    int                                   // ingestion requests received (accepted or not)
	Traces      map[string]map[string]json.RawMessage // by id: the last body
	Generations map[string]map[string]json.RawMessage
	Events      int // events accepted, duplicates included
	Problems    []string
}

// NewLangfuse starts a fake with the given keys.
func NewLangfuse(t testing.TB, public, secret string) *Langfuse {
	f := &Langfuse{Public: public, Secret: secret, Traces: map[string]map[string]json.RawMessage{}, Generations: map[string]map[string]json.RawMessage{}}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *Langfuse) problem(s string) { f.Problems = append(f.Problems, s) }

func (f *Langfuse) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Requests++
	if f.refused(w) {
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/api/public/ingestion" {
		f.problem(r.Method + " " + r.URL.Path)
		w.WriteHeader(http.StatusNotFound)
		return
	}
	if u, p, ok := r.BasicAuth(); !ok || u != f.Public || p != f.Secret {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var b struct {
		Batch []struct {
			ID        string                     `json:"id"`
			Type      string                     `json:"type"`
			Timestamp string                     `json:"timestamp"`
			Body      map[string]json.RawMessage `json:"body"`
		} `json:"batch"`
	}
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &b); err != nil || len(b.Batch) == 0 {
		f.problem("bad batch: " + string(body))
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	type ok struct {
		ID     string `json:"id"`
		Status int    `json:"status"`
	}
	var res struct {
		Successes []ok  `json:"successes"`
		Errors    []any `json:"errors"`
	}
	for _, e := range b.Batch {
		var id string
		_ = json.Unmarshal(e.Body["id"], &id)
		if e.ID == "" || e.Timestamp == "" || id == "" {
			f.problem("event without id, timestamp or body id: " + e.Type)
			continue
		}
		switch e.Type {
		case "trace-create":
			f.Traces[id] = e.Body
		case "generation-create":
			f.Generations[id] = e.Body
		default:
			f.problem("unexpected event type " + e.Type)
			continue
		}
		f.Events++
		res.Successes = append(res.Successes, ok{ID: e.ID, Status: 201})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusMultiStatus)
	_ = json.NewEncoder(w).Encode(res)
}

// Generation returns the generation of id (nil when none), decoded.
func (f *Langfuse) Generation(id string) map[string]any { return decode(f, f.Generations, id) }

// Trace returns the trace of id (nil when none), decoded.
func (f *Langfuse) Trace(id string) map[string]any { return decode(f, f.Traces, id) }

func decode(f *Langfuse, m map[string]map[string]json.RawMessage, id string) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := m[id]
	if !ok {
		return nil
	}
	out := map[string]any{}
	for k, v := range b {
		var x any
		_ = json.Unmarshal(v, &x)
		out[k] = x
	}
	return out
}

// Counts returns the traces and generations held, and the problems seen.
func (f *Langfuse) Counts() (traces, generations int, problems []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.Traces), len(f.Generations), append([]string(nil), f.Problems...)
}

// RequestCount returns the ingestion requests received so far.
func (f *Langfuse) RequestCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.Requests
}
