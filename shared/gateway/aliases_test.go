package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keyauth"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/wire"
)

// TestModelAliases: a key's aliases, its user's and its team's
// model_aliases rename the request's model before model access, routing
// and the spend event, in LiteLLM's order (team, then user, then key, each
// once); the upstream gets the deployment's model, never the alias.
func TestModelAliases(t *testing.T) {
	var mu sync.Mutex
	var sent []string // the model each upstream call's body named, as "upstream:model"
	upstream := func(name string) *gatewaytest.Counter {
		u := &gatewaytest.Counter{}
		u.Server = gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
			var body struct{ Model string }
			b, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(b, &body)
			mu.Lock()
			sent = append(sent, name+":"+body.Model)
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, completion)
		})
		return u
	}
	big, small := upstream("big"), upstream("small")
	cfg := loadConfig(t, fmt.Sprintf(`model_list:
  - model_name: gpt-4o
    litellm_params: {model: openai/gpt-4o, api_base: %q, api_key: sk-up}
  - model_name: gpt-4o-mini
    litellm_params: {model: openai/gpt-4o-mini, api_base: %q, api_key: sk-up}
general_settings: {master_key: sk-master}
`, big.URL+"/v1", small.URL+"/v1"))
	store, ctx := keys.NewMemory(), context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(store.Teams().Create(ctx, keys.Team{ID: "t1", Settings: keys.Settings{Aliases: map[string]string{"fast": "gpt-4o-mini", "team-big": "big-alias"}}}))
	must(store.Users().Create(ctx, keys.User{ID: "u1", Settings: keys.Settings{Aliases: map[string]string{"mine": "gpt-4o-mini"}}}))
	for _, k := range []keys.Key{
		// Models names the alias my-mini, not its group: access is checked on the group.
		{Hash: keys.HashSecret("sk-alias"), Settings: keys.Settings{Models: []string{"gpt-4o", "my-mini"},
			Aliases: map[string]string{"my-gpt": "gpt-4o", "my-mini": "gpt-4o-mini"}}},
		// The team's fast wins over the key's; the key's big-alias maps the team's target.
		{Hash: keys.HashSecret("sk-team"), TeamID: "t1", UserID: "u1",
			Settings: keys.Settings{Aliases: map[string]string{"fast": "gpt-4o", "big-alias": "gpt-4o"}}},
		{Hash: keys.HashSecret("sk-plain")},
	} {
		must(store.CreateKey(ctx, k))
	}
	groups := make(chan string, 16) // each request's spend event model group
	f := serve(t, testHandler(Options{Config: cfg, Keys: store, OnComplete: func(_ context.Context, c *Completion) {
		groups <- c.SpendEvent().ModelGroup
	}}))

	for _, tt := range []struct {
		name, key, model string
		status           int
		sent, group      string
	}{
		{"key alias", "sk-alias", "my-gpt", 200, "big:gpt-4o", "gpt-4o"},
		{"the group itself", "sk-alias", "gpt-4o", 200, "big:gpt-4o", "gpt-4o"},
		{"access checked on the group", "sk-alias", "my-mini", 403, "", "gpt-4o-mini"},
		{"team alias first", "sk-team", "fast", 200, "small:gpt-4o-mini", "gpt-4o-mini"},
		{"key alias of the team's target", "sk-team", "team-big", 200, "big:gpt-4o", "gpt-4o"},
		{"user alias", "sk-team", "mine", 200, "small:gpt-4o-mini", "gpt-4o-mini"},
		{"another key's alias", "sk-plain", "my-gpt", 404, "", "my-gpt"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			sent = nil
			mu.Unlock()
			resp, out := f.postWant(t, "/v1/chat/completions", tt.key, `{"model":"`+tt.model+`","messages":[{"role":"user","content":"hi"}]}`, tt.status)
			if tt.status == 403 {
				if _, _, code := openAIError(t, out); code != "model_not_allowed" {
					t.Fatalf("code %s, want model_not_allowed: %s", code, out)
				}
			}
			if tt.status == 200 && resp.Header.Get("X-Litellm-Model-Group") != tt.group {
				t.Errorf("x-litellm-model-group %q, want %q", resp.Header.Get("X-Litellm-Model-Group"), tt.group)
			}
			// OnComplete runs once the answer is written: wait for it.
			if g := <-groups; g != tt.group {
				t.Errorf("spend event model group %q, want %q", g, tt.group)
			}
			mu.Lock()
			defer mu.Unlock()
			if want := []string{tt.sent}; tt.sent != "" && (len(sent) != 1 || sent[0] != tt.sent) {
				t.Errorf("upstream calls %q, want %q", sent, want)
			} else if tt.sent == "" && len(sent) != 0 {
				t.Errorf("upstream calls %q, want none", sent)
			}
		})
	}
}

// TestAliasesNoAllocation: a principal without aliases resolves a model
// with no allocation.
func TestAliasesNoAllocation(t *testing.T) {
	p := &Principal{Records: keyauth.Records{Key: &keys.Key{}, Team: &keys.Team{}, User: &keys.User{}}}
	req := &wire.Request{Model: "gpt-4o"}
	if n := testing.AllocsPerRun(100, func() { applyAliases(p, req) }); n != 0 {
		t.Fatalf("%v allocations per request without aliases", n)
	}
}
