package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
)

// TestConfiguredFallbacksAccess: a configured fallback (router_settings
// fallbacks and default_fallbacks) outside the models of the request's
// key, team or user is skipped: never called, logged with the reason, and
// named in X-Sluice-Fallbacks-Skipped when no fallback was tried; the
// client gets the first group's error. A principal allowed the fallback
// (or unrestricted) still falls back.
func TestConfiguredFallbacksAccess(t *testing.T) {
	limited, ok := downAndUp(t)
	for _, settings := range []string{
		`{num_retries: 0, fallbacks: [{limited: [ok]}]}`,
		`{num_retries: 0, default_fallbacks: [ok]}`,
	} {
		t.Run(settings, func(t *testing.T) {
			cfg := loadConfig(t, fmt.Sprintf(`model_list:
  - model_name: limited
    litellm_params: {model: openai/gpt-4o-mini, api_base: %q, api_key: sk-up}
  - model_name: ok
    litellm_params: {model: openai/gpt-4o, api_base: %q, api_key: sk-up}
router_settings: %s
general_settings: {master_key: sk-master}
`, limited.URL+"/v1", ok.URL+"/v1", settings))
			store := keys.NewMemory()
			ctx := context.Background()
			if err := store.Teams().Create(ctx, keys.Team{ID: "t", Settings: keys.Settings{Models: []string{"limited"}}}); err != nil {
				t.Fatal(err)
			}
			if err := store.Users().Create(ctx, keys.User{ID: "u", Role: keys.RoleInternalUser, Settings: keys.Settings{Models: []string{"limited"}}}); err != nil {
				t.Fatal(err)
			}
			for _, k := range []keys.Key{
				{Hash: keys.HashSecret("sk-limited"), Settings: keys.Settings{Models: []string{"limited"}}},
				{Hash: keys.HashSecret("sk-team"), TeamID: "t"},
				{Hash: keys.HashSecret("sk-user"), UserID: "u"},
				{Hash: keys.HashSecret("sk-both"), Settings: keys.Settings{Models: []string{"limited", "ok"}}},
			} {
				if err := store.CreateKey(ctx, k); err != nil {
					t.Fatal(err)
				}
			}
			for _, tt := range []struct {
				key, scope string
				fallback   bool
			}{
				{"sk-limited", "key", false},
				{"sk-team", "team", false},
				{"sk-user", "user", false},
				{"sk-both", "", true},
				{"sk-master", "", true},
			} {
				t.Run(tt.key, func(t *testing.T) {
					// A handler of its own: no cooldown from an earlier case.
					lg := &gatewaytest.Logs{}
					f := serve(t, testHandler(Options{Config: cfg, Keys: store, Logger: slog.New(slog.NewJSONHandler(lg, nil))}))
					okBefore, limBefore := ok.Calls.Load(), limited.Calls.Load()
					resp := f.post(t, "/v1/chat/completions", tt.key, `{"model":"limited","messages":[{"role":"user","content":"hi"}]}`)
					out := gatewaytest.ReadAll(t, resp.Body)
					if n := limited.Calls.Load() - limBefore; n != 1 {
						t.Fatalf("%d calls to limited, want 1", n)
					}
					skipped := resp.Header.Get("X-Sluice-Fallbacks-Skipped")
					if tt.fallback {
						if resp.StatusCode != 200 || ok.Calls.Load()-okBefore != 1 || skipped != "" {
							t.Fatalf("status %d, %d calls to ok, skipped %q: %s; want the fallback's answer", resp.StatusCode, ok.Calls.Load()-okBefore, skipped, out)
						}
						return
					}
					if n := ok.Calls.Load() - okBefore; n != 0 {
						t.Fatalf("the fallback ok outside the %s's models was called %d times", tt.scope, n)
					}
					if resp.StatusCode != 502 || !strings.Contains(out, "down") || strings.Contains(out, "fallbacks tried") {
						t.Fatalf("status %d: %s; want limited's 502", resp.StatusCode, out)
					}
					if want := fmt.Sprintf(`ok: %s not allowed to access model. This %s can only access models=['limited']. Tried to access ok`, tt.scope, tt.scope); !strings.HasPrefix(skipped, want) {
						t.Fatalf("X-Sluice-Fallbacks-Skipped %q, want it to start with %q", skipped, want)
					}
					if !strings.Contains(lg.String(), `"msg":"fallback skipped: model not allowed"`) {
						t.Fatalf("no log line for the skipped fallback:\n%s", lg)
					}
				})
			}
		})
	}
}
