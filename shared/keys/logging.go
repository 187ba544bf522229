package keys

import (
	"encoding/json"
	"sort"
	"strings"
)

// Callback is a team's or a key's own logging callback, LiteLLM's shape
// (AddTeamCallback, and each entry of a key's metadata.logging):
// {"callback_name": "langfuse", "callback_type": "success",
// "callback_vars": {"langfuse_public_key": ..., ...}}. Its vars may hold
// credentials: MaskCallbackVars hides them wherever a record is shown.
type Callback struct {
	Name string            `json:"callback_name"`
	Type string            `json:"callback_type,omitempty"` // success, failure, success_and_failure
	Vars map[string]string `json:"callback_vars,omitempty"`
}

// CallbackTypes are the callback_type values.
var CallbackTypes = []string{"success", "failure", "success_and_failure"}

// TeamCallbackSettings is the older shape of a team's callbacks,
// metadata.callback_settings, still read (LiteLLM's
// TeamCallbackMetadata).
type TeamCallbackSettings struct {
	Success []string          `json:"success_callback"`
	Failure []string          `json:"failure_callback"`
	Vars    map[string]string `json:"callback_vars"`
}

// LoggingCallbacks returns the callbacks a record's metadata names, with
// LiteLLM's precedence: metadata.logging when it is there (a list; what
// POST /team/{id}/callback writes, and a key's own), else a team's
// metadata.callback_settings. Entries that are not callbacks are skipped.
func LoggingCallbacks(meta json.RawMessage) []Callback {
	if len(meta) == 0 {
		return nil
	}
	var m struct {
		Logging  json.RawMessage      `json:"logging"`
		Settings TeamCallbackSettings `json:"callback_settings"`
	}
	if json.Unmarshal(meta, &m) != nil {
		return nil
	}
	if len(m.Logging) > 0 && string(m.Logging) != "null" {
		var entries []json.RawMessage
		if json.Unmarshal(m.Logging, &entries) != nil {
			return nil
		}
		out := make([]Callback, 0, len(entries))
		for _, e := range entries {
			var c Callback
			if json.Unmarshal(e, &c) != nil {
				continue
			}
			if c.Name = strings.ToLower(strings.TrimSpace(c.Name)); c.Name != "" {
				out = append(out, c)
			}
		}
		return out
	}
	s := m.Settings
	types := map[string]string{}
	for _, n := range s.Success {
		types[strings.ToLower(n)] = "success"
	}
	for _, n := range s.Failure {
		if types[strings.ToLower(n)] == "success" {
			types[strings.ToLower(n)] = "success_and_failure"
		} else {
			types[strings.ToLower(n)] = "failure"
		}
	}
	out := make([]Callback, 0, len(types))
	for n, t := range types {
		out = append(out, Callback{Name: n, Type: t, Vars: s.Vars})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Redacted is what a masked callback var reads as (LiteLLM's marker).
const Redacted = "***REDACTED***"

// SecretVar reports whether a callback var's name marks a credential: its
// value is never shown nor logged (keys, secrets, tokens, passwords,
// credentials, headers, service accounts).
func SecretVar(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"key", "secret", "token", "password", "credential", "header", "service_account", "auth"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// MaskCallbackVars returns meta with the credential values of its
// callbacks' vars (metadata.logging[].callback_vars and
// metadata.callback_settings.callback_vars) replaced by Redacted; meta
// itself when it holds none.
func MaskCallbackVars(meta json.RawMessage) json.RawMessage {
	out, err := MapSecretVars(meta, func(string, any) (any, error) { return Redacted, nil })
	if err != nil {
		return json.RawMessage("{}")
	}
	return out
}

// MapSecretVars returns meta with each credential (SecretVar) of its
// callbacks' vars (metadata.logging[].callback_vars and
// metadata.callback_settings.callback_vars) replaced by what fn returns
// for it; meta itself when it holds none or is not an object.
func MapSecretVars(meta json.RawMessage, fn func(name string, v any) (any, error)) (json.RawMessage, error) {
	if !strings.Contains(string(meta), "callback_vars") {
		return meta, nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(meta, &m) != nil {
		return meta, nil
	}
	var ferr error
	apply := func(vars map[string]any) {
		for k, v := range vars {
			if SecretVar(k) && ferr == nil {
				vars[k], ferr = fn(k, v)
			}
		}
	}
	if raw, ok := m["logging"]; ok {
		var entries []map[string]any
		if json.Unmarshal(raw, &entries) == nil {
			for _, e := range entries {
				if v, ok := e["callback_vars"].(map[string]any); ok {
					apply(v)
				}
			}
			m["logging"], _ = json.Marshal(entries)
		}
	}
	if raw, ok := m["callback_settings"]; ok {
		var s map[string]any
		if json.Unmarshal(raw, &s) == nil {
			if v, ok := s["callback_vars"].(map[string]any); ok {
				apply(v)
			}
			m["callback_settings"], _ = json.Marshal(s)
		}
	}
	if ferr != nil {
		return nil, ferr
	}
	return json.Marshal(m)
}
