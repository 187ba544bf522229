package console

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/sluice-gw/sluice/shared/config"
)

// TestConsoleStoredModels drives the Models page's stored deployments
// (store_model_in_db), on each store: a proxy admin adds a deployment
// through the form, pointing at a fake OpenAI upstream with key
// sk-upstream-one; the gateway serves it through /v1/chat/completions and
// the upstream receives exactly that key. The edit form does not show the
// key (nor does any page or /model/info); a key typed there is what the
// upstream receives next. Test runs its health check; Delete removes it
// and the gateway refuses the group. A config deployment offers no Edit
// or Delete.
func TestConsoleStoredModels(t *testing.T) {
	ctx := browser(t)
	yaml := append(append([]byte{}, config.DefaultYAML()...), "\ngeneral_settings:\n  store_model_in_db: true\n"...)
	for _, store := range stores() {
		t.Run(store, func(t *testing.T) {
			up := newFakeOpenAI(t)
			storedModelsFlow(t, ctx, startConfig(t, store, yaml), up, store == "memory")
		})
	}
}

// fakeOpenAI answers /v1/chat/completions as OpenAI does and keeps the
// Authorization headers it was sent.
type fakeOpenAI struct {
	url  string
	mu   sync.Mutex
	auth []string
}

func newFakeOpenAI(t *testing.T) *fakeOpenAI {
	f := &fakeOpenAI{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		f.mu.Lock()
		f.auth = append(f.auth, r.Header.Get("Authorization"))
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"chatcmpl-fake","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL + "/v1"
	return f
}

// last is the Authorization header of the upstream's last request.
func (f *fakeOpenAI) last() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.auth) == 0 {
		return ""
	}
	return f.auth[len(f.auth)-1]
}

// chatUntil calls the gateway with group until ok(status) holds (a stored
// change is served once the instance reloads its models), failing t at
// stepTimeout; it returns the last status.
func (s *stack) chatUntil(t *testing.T, group string, ok func(int) bool) int {
	t.Helper()
	body := map[string]any{"model": group, "messages": []map[string]string{{"role": "user", "content": "hi"}}}
	deadline := time.Now().Add(stepTimeout)
	for {
		code := s.call(t, http.MethodPost, "/v1/chat/completions", master, body, nil)
		if ok(code) {
			return code
		}
		if time.Now().After(deadline) {
			t.Fatalf("chat with %s: %d until the step's deadline", group, code)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// rowHas reports whether the models table row of deployment id holds a
// control (a button or link) labelled label.
func rowHas(t *testing.T, ctx context.Context, id, label string) bool {
	t.Helper()
	return get(t, ctx, "controls of "+id, chromedp.Evaluate[bool](fmt.Sprintf(`(() => {
  const tr = [...document.querySelectorAll('.page-models [data-test="model-groups"] tbody tr')].find((r) => r.cells[0].textContent.trim() === %q);
  if (!tr) throw new Error('no row for ' + %q);
  return [...tr.querySelectorAll('button, a')].some((b) => b.textContent === %q);
})()`, id, id, label)))
}

func storedModelsFlow(t *testing.T, ctx context.Context, s *stack, up *fakeOpenAI, shots bool) {
	const id, group, key1, key2 = "console-db-1", "console-stored", "sk-upstream-one", "sk-upstream-two"
	signIn(t, ctx, s.base, master)
	open(t, ctx, s.base, "#/models")
	const add = `form[data-test="new-model"]`
	submitForm(t, ctx, add, map[string]string{
		"model_info.id": id, "model_name": group, "litellm_params.model": "openai/gpt-4o-mini",
		"litellm_params.api_key": key1, "litellm_params.api_base": up.url, "litellm_params.rpm": "600",
	})
	waitText(t, ctx, `.page-models [data-test="model-groups"]`, id)
	if got := text(t, ctx, ".page-models"); strings.Contains(got, key1) {
		t.Errorf("the models page shows the stored key: %q", got)
	}
	s.chatUntil(t, group, func(c int) bool { return c == http.StatusOK })
	if got := up.last(); got != "Bearer "+key1 {
		t.Errorf("upstream got Authorization %q, want the key typed in the form", got)
	}
	var info struct {
		Data []map[string]any `json:"data"`
	}
	s.mustCall(t, http.MethodGet, "/model/info", master, nil, &info)
	if b := fmt.Sprint(info.Data); strings.Contains(b, key1) || !strings.Contains(b, id) {
		t.Errorf("/model/info: %s, want %s listed without its key", b, id)
	}

	// A config deployment is read-only; the stored one is not.
	if rowHas(t, ctx, "mock-gpt-4o", "Edit") || rowHas(t, ctx, "mock-gpt-4o", "Delete") {
		t.Error("a config deployment offers Edit or Delete")
	}
	if !rowHas(t, ctx, id, "Edit") || !rowHas(t, ctx, id, "Delete") {
		t.Error("the stored deployment offers no Edit or Delete")
	}
	// Test: one health call; the fake upstream answers, so it is healthy.
	clickButton(t, ctx, id, "Test")
	get(t, ctx, "the stored deployment tested healthy", chromedp.Poll[bool](fmt.Sprintf(`(() => {
  const tr = [...document.querySelectorAll('.page-models [data-test="model-groups"] tbody tr')].find((r) => r.cells[0].textContent.trim() === %q);
  return !!tr && !!tr.querySelector('[data-health="healthy"]'); })()`, id), chromedp.WithPollingTimeout(stepTimeout)))
	if shots {
		screenshot(t, ctx, "models-stored")
	}

	// Edit: the key is not shown; a new one typed is what the upstream gets.
	open(t, ctx, s.base, "#/models?edit="+id)
	const edit = `form[data-test="edit-model"]`
	if v := get(t, ctx, "the key field", chromedp.Value(chromedp.CSS(edit+` [name="litellm_params.api_key"]`))); v != "" {
		t.Errorf("the edit form shows the stored key: %q", v)
	}
	if v := get(t, ctx, "the model field", chromedp.Value(chromedp.CSS(edit+` [name="litellm_params.model"]`))); v != "openai/gpt-4o-mini" {
		t.Errorf("the edit form's model: %q", v)
	}
	submitForm(t, ctx, edit, map[string]string{"litellm_params.api_key": key2})
	run(t, ctx, "back to the list", visible(`#main[data-rendered="#/models"]`))
	deadline := time.Now().Add(stepTimeout)
	for s.chatUntil(t, group, func(c int) bool { return c == http.StatusOK }); up.last() != "Bearer "+key2; s.chatUntil(t, group, func(c int) bool { return c == http.StatusOK }) {
		if time.Now().After(deadline) {
			t.Fatalf("upstream got %q after the edit, want the new key", up.last())
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Delete: gone from the page, and the gateway no longer serves it.
	run(t, ctx, "confirm", js(`window.confirm = () => true`))
	clickButton(t, ctx, id, "Delete")
	get(t, ctx, "the row is gone", chromedp.Poll[bool](fmt.Sprintf(`(() => { const b = document.querySelector('.page-models [data-test="model-groups"]'); return !!b && !b.textContent.includes(%q); })()`, id), chromedp.WithPollingTimeout(stepTimeout)))
	s.chatUntil(t, group, func(c int) bool { return c != http.StatusOK })
}
