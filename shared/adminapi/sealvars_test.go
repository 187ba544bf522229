package adminapi_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/models"
)

// TestCallbackVarsSealedAtRest: the credentials of a team's callback
// (POST /team/{id}/callback) and of a key's (metadata.logging on
// /key/generate and /key/update) are stored sealed with the salt key
// (here the master key, as LiteLLM does without LITELLM_SALT_KEY), in the
// memory store and in DynamoDB; they open to what was sent, a later write
// of the same metadata does not seal them twice, and what is not a
// credential stays readable.
func TestCallbackVarsSealedAtRest(t *testing.T) {
	const secret, other = "sk-lf-sealed-secret-0042", "hook-secret-0043"
	sealer, _ := models.NewSealer("sk-master-test")
	for _, store := range []string{app.StoreMemory, app.StoreDynamoDB} {
		t.Run(store, func(t *testing.T) {
			gw := buildWith(t, suiteConfig, store, gatewaytest.Quiet())
			c := client{t, gw.HTTP}
			const m = "sk-master-test"
			ctx := context.Background()
			// stored checks meta holds no credential in clear and its
			// callbacks' credentials open to want (by var name).
			stored := func(what string, meta json.RawMessage, want map[string]string) {
				t.Helper()
				for _, s := range []string{secret, other} {
					if strings.Contains(string(meta), s) {
						t.Errorf("%s: stored in clear: %s", what, meta)
					}
				}
				got := map[string]string{}
				for _, cb := range keys.LoggingCallbacks(meta) {
					vars, err := keys.OpenCallbackVars(cb.Vars, sealer.Open)
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					for k, v := range vars {
						got[k] = v
					}
				}
				for k, v := range want {
					if got[k] != v {
						t.Errorf("%s: %s opens to %q, want %q", what, k, got[k], v)
					}
				}
			}
			c.must(m, "POST", "/team/new", `{"team_id":"tc"}`)
			c.must(m, "POST", "/team/tc/callback", `{"callback_name":"langfuse","callback_type":"success","callback_vars":{"langfuse_public_key":"pk-lf-1","langfuse_secret_key":"`+secret+`","langfuse_host":"https://lf.example"}}`)
			c.must(m, "POST", "/team/tc/callback", `{"callback_name":"generic_api","callback_vars":{"generic_logger_headers":"Authorization=`+other+`"}}`)
			team, err := gw.Keys.GetTeam(ctx, "tc")
			if err != nil {
				t.Fatal(err)
			}
			stored("team", team.Metadata, map[string]string{"langfuse_secret_key": secret, "langfuse_public_key": "pk-lf-1",
				"langfuse_host": "https://lf.example", "generic_logger_headers": "Authorization=" + other})

			_, key, _ := c.call(m, "POST", "/key/generate", `{"metadata":{"logging":[{"callback_name":"langfuse","callback_vars":{"langfuse_secret_key":"`+secret+`"}}]}}`)
			hash := keys.HashSecret(key["key"].(string))
			k, err := gw.Keys.GetKey(ctx, hash)
			if err != nil {
				t.Fatal(err)
			}
			stored("key/generate", k.Metadata, map[string]string{"langfuse_secret_key": secret})
			c.must(m, "POST", "/key/update", `{"key":"`+key["key"].(string)+`","metadata":{"logging":[{"callback_name":"generic_api","callback_vars":{"generic_logger_headers":"`+other+`"}}]}}`)
			if k, err = gw.Keys.GetKey(ctx, hash); err != nil {
				t.Fatal(err)
			}
			stored("key/update", k.Metadata, map[string]string{"generic_logger_headers": other})
		})
	}
}
