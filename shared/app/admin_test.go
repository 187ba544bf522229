package app_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

const adminYAML = `model_list:
  - model_name: m1
    litellm_params: {model: mock/m1, mock_response: "one"}
  - model_name: m2
    litellm_params: {model: mock/m2, mock_response: "two"}
general_settings:
  master_key: sk-admin-master
`

// TestRevocationAcrossInstances: a change made through one instance's admin
// API (a blocked, deleted, regenerated or expired key, a blocked team, a
// changed models list) takes effect on another instance, with its own key
// cache, once its key cache TTL has passed, and not before.
func TestRevocationAcrossInstances(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2030, 5, 6, 7, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	names := ddblocal.Tables(t)
	settings := app.Settings{Tables: names, Now: clock, KeyCacheTTL: time.Second}
	a := instance(t, adminYAML, settings) // serves the admin calls
	b := instance(t, adminYAML, settings) // serves the chats

	admin := func(path, body string) map[string]any {
		t.Helper()
		r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer sk-admin-master")
		w := httptest.NewRecorder()
		a.HTTP.ServeHTTP(w, r)
		if w.Code != 200 {
			t.Fatalf("%s %s: %d %s", path, body, w.Code, w.Body)
		}
		var m map[string]any
		_ = json.Unmarshal(w.Body.Bytes(), &m)
		return m
	}
	chat := func(key, model string) int {
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(`{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`))
		r.Header.Set("Authorization", "Bearer "+key)
		w := httptest.NewRecorder()
		b.HTTP.ServeHTTP(w, r)
		return w.Code
	}
	// takesEffect checks b still answers before (cached) and after the TTL.
	takesEffect := func(name, key, model string, change func(), want int) {
		t.Helper()
		if code := chat(key, model); code != 200 {
			t.Fatalf("%s: before the change: %d", name, code)
		}
		change()
		if code := chat(key, model); code != 200 {
			t.Fatalf("%s: within the cache TTL the other instance still answers from its cache: got %d", name, code)
		}
		advance(time.Second)
		if code := chat(key, model); code != want {
			t.Fatalf("%s: after the key cache TTL: %d, want %d", name, code, want)
		}
	}
	newKey := func(body string) string {
		return admin("/key/generate", body)["key"].(string)
	}

	k := newKey(`{}`)
	takesEffect("blocked key", k, "m1", func() { admin("/key/block", `{"key":"`+k+`"}`) }, 401)

	k = newKey(`{}`)
	takesEffect("deleted key", k, "m1", func() { admin("/key/delete", `{"keys":["`+k+`"]}`) }, 401)

	k = newKey(`{}`)
	var regenerated string
	takesEffect("regenerated key (old secret)", k, "m1", func() {
		regenerated = admin("/key/regenerate", `{"key":"`+k+`"}`)["key"].(string)
	}, 401)
	if code := chat(regenerated, "m1"); code != 200 {
		t.Fatalf("the regenerated secret: %d", code)
	}

	k = newKey(`{"duration":"2s"}`)
	takesEffect("expired key", k, "m1", func() { advance(time.Second) }, 401)

	admin("/team/new", `{"team_id":"tb"}`)
	k = newKey(`{"team_id":"tb"}`)
	takesEffect("blocked team", k, "m1", func() { admin("/team/block", `{"team_id":"tb"}`) }, 401)

	k = newKey(`{"models":["m1"]}`)
	takesEffect("changed models", k, "m1", func() { admin("/key/update", `{"key":"`+k+`","models":["m2"]}`) }, 403)
	if code := chat(k, "m2"); code != 200 {
		t.Fatalf("the newly allowed model: %d", code)
	}
}
