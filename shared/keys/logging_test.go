package keys_test

import (
	"encoding/json"
	"testing"

	"github.com/sluice-gw/sluice/shared/keys"
)

// KeepMasked takes each masked credential from the same callback's var in
// the stored metadata (two callbacks may share a var name), for both
// shapes (metadata.logging and the older callback_settings); a credential
// sent in clear replaces the stored one, and what is not a credential is
// left as sent.
func TestKeepMasked(t *testing.T) {
	r := keys.Redacted
	stored := `{"logging":[{"callback_name":"langfuse","callback_vars":{"langfuse_secret_key":"s-lf","langfuse_host":"h1"}},` +
		`{"callback_name":"Hook ","callback_vars":{"langfuse_secret_key":"s-hook"}}],` +
		`"callback_settings":{"success_callback":["langfuse"],"callback_vars":{"langfuse_secret_key":"s-set"}}}`
	sent := `{"logging":[{"callback_name":"hook","callback_vars":{"langfuse_secret_key":"` + r + `"}},` +
		`{"callback_name":"langfuse","callback_vars":{"langfuse_secret_key":"` + r + `","langfuse_host":"h2"}}],` +
		`"callback_settings":{"success_callback":["langfuse"],"callback_vars":{"langfuse_secret_key":"new"}}}`
	got, err := keys.KeepMasked(json.RawMessage(sent), json.RawMessage(stored))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Logging  []keys.Callback           `json:"logging"`
		Settings keys.TeamCallbackSettings `json:"callback_settings"`
	}
	if err := json.Unmarshal(got, &m); err != nil || len(m.Logging) != 2 {
		t.Fatalf("KeepMasked = %s, %v", got, err)
	}
	if m.Logging[0].Vars["langfuse_secret_key"] != "s-hook" || m.Logging[1].Vars["langfuse_secret_key"] != "s-lf" ||
		m.Logging[1].Vars["langfuse_host"] != "h2" || m.Settings.Vars["langfuse_secret_key"] != "new" {
		t.Errorf("KeepMasked = %s", got)
	}
	if _, err := keys.KeepMasked(json.RawMessage(`{"callback_settings":{"callback_vars":{"langfuse_secret_key":"`+r+`"}}}`),
		json.RawMessage(`{"logging":[{"callback_name":"langfuse","callback_vars":{"langfuse_secret_key":"s"}}]}`)); err == nil {
		t.Error("a mask with no stored credential of its own callback was kept")
	}
}
