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
	eachSealingStore(t, func(t *testing.T, gw *app.Gateway, c client, opens func(json.RawMessage) map[string]string) {
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
			got := opens(meta)
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

// eachSealingStore runs f on the suite's gateway on each store, with the
// master key sealing callback credentials; opens returns a metadata's
// callback credentials opened, by var name.
func eachSealingStore(t *testing.T, f func(t *testing.T, gw *app.Gateway, c client, opens func(json.RawMessage) map[string]string)) {
	sealer, _ := models.NewSealer("sk-master-test")
	for _, store := range []string{app.StoreMemory, app.StoreDynamoDB} {
		t.Run(store, func(t *testing.T) {
			gw := buildWith(t, suiteConfig, store, gatewaytest.Quiet())
			f(t, gw, client{t, gw.HTTP}, func(meta json.RawMessage) map[string]string {
				t.Helper()
				got := map[string]string{}
				for _, cb := range keys.LoggingCallbacks(meta) {
					vars, err := keys.OpenCallbackVars(cb.Vars, sealer.Open)
					if err != nil {
						t.Fatalf("%s: %v", meta, err)
					}
					for k, v := range vars {
						got[k] = v
					}
				}
				return got
			})
		})
	}
}

// TestMaskedCallbackVarsKept: a record's metadata is shown with its
// callback credentials masked; sending that metadata back (an edit in the
// console or LiteLLM's UI) keeps each stored credential instead of
// writing the mask over it, on keys, regenerated keys and teams, in the
// memory store and in DynamoDB. A mask with no stored credential behind
// it (a new key, or a var the record never had) is a 400 naming metadata.
func TestMaskedCallbackVarsKept(t *testing.T) {
	const secret, other = "sk-lf-kept-secret-0051", "hook-secret-0052"
	eachSealingStore(t, func(t *testing.T, gw *app.Gateway, c client, opens func(json.RawMessage) map[string]string) {
		const m = "sk-master-test"
		ctx := context.Background()
		// shown returns the metadata of a record as the admin API
		// shows it, which must be masked.
		shown := func(o map[string]any) string {
			t.Helper()
			b, _ := json.Marshal(o["metadata"])
			if !strings.Contains(string(b), keys.Redacted) || strings.Contains(string(b), secret) {
				t.Fatalf("shown metadata %s, want the credential masked", b)
			}
			return string(b)
		}

		_, gen, _ := c.call(m, "POST", "/key/generate", `{"metadata":{"logging":[{"callback_name":"langfuse","callback_vars":{"langfuse_secret_key":"`+secret+`","langfuse_host":"https://a"}}]}}`)
		sk := gen["key"].(string)
		info := c.must(m, "GET", "/key/info?key="+sk, "")["info"].(map[string]any)
		meta := strings.Replace(shown(info), "https://a", "https://b", 1)
		c.must(m, "POST", "/key/update", `{"key":"`+sk+`","metadata":`+meta+`}`)
		k, err := gw.Keys.GetKey(ctx, keys.HashSecret(sk))
		if err != nil {
			t.Fatal(err)
		}
		if got := opens(k.Metadata); got["langfuse_secret_key"] != secret || got["langfuse_host"] != "https://b" {
			t.Errorf("key after update with masked metadata: %v, want the secret kept and the host changed", got)
		}

		regen := c.must(m, "POST", "/key/regenerate", `{"key":"`+sk+`","metadata":`+meta+`}`)
		if k, err = gw.Keys.GetKey(ctx, keys.HashSecret(regen["key"].(string))); err != nil {
			t.Fatal(err)
		}
		if got := opens(k.Metadata)["langfuse_secret_key"]; got != secret {
			t.Errorf("regenerated key's secret = %q, want it kept", got)
		}

		c.must(m, "POST", "/team/new", `{"team_id":"tm"}`)
		c.must(m, "POST", "/team/tm/callback", `{"callback_name":"generic_api","callback_vars":{"generic_logger_headers":"`+other+`"}}`)
		tmeta := shown(c.must(m, "GET", "/team/info?team_id=tm", "")["team_info"].(map[string]any))
		c.must(m, "POST", "/team/update", `{"team_id":"tm","team_alias":"renamed","metadata":`+tmeta+`}`)
		team, err := gw.Keys.GetTeam(ctx, "tm")
		if err != nil {
			t.Fatal(err)
		}
		if got := opens(team.Metadata)["generic_logger_headers"]; got != other || team.Alias != "renamed" {
			t.Errorf("team after update with masked metadata: headers %q alias %q, want the credential kept", got, team.Alias)
		}

		c.errParam(m, "POST", "/key/generate", `{"metadata":`+meta+`}`, 400, "metadata")
		c.errParam(m, "POST", "/team/tm/callback", `{"callback_name":"langfuse","callback_vars":{"langfuse_secret_key":"`+keys.Redacted+`"}}`, 400, "metadata")
		c.errParam(m, "POST", "/team/update", `{"team_id":"tm","metadata":{"logging":[{"callback_name":"langfuse","callback_vars":{"langfuse_secret_key":"`+keys.Redacted+`"}}]}}`, 400, "metadata")
		if team, err = gw.Keys.GetTeam(ctx, "tm"); err != nil || opens(team.Metadata)["generic_logger_headers"] != other {
			t.Errorf("a refused update changed the team: %v %s", err, team.Metadata)
		}
	})
}
