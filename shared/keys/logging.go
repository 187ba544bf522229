package keys

import (
	"encoding/json"
	"fmt"
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
	return mapSecretVars(meta, func(_, name string, v any) (any, error) { return fn(name, v) })
}

// settingsVars is the callback mapSecretVars names for the vars of
// metadata.callback_settings (shared by its callbacks).
const settingsVars = "callback_settings"

// mapSecretVars is MapSecretVars with the callback each var belongs to:
// a logging entry's callback_name (as LoggingCallbacks reads it), or
// settingsVars.
func mapSecretVars(meta json.RawMessage, fn func(callback, name string, v any) (any, error)) (json.RawMessage, error) {
	if !strings.Contains(string(meta), "callback_vars") {
		return meta, nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(meta, &m) != nil {
		return meta, nil
	}
	var ferr error
	apply := func(callback string, vars map[string]any) {
		for k, v := range vars {
			if SecretVar(k) && ferr == nil {
				vars[k], ferr = fn(callback, k, v)
			}
		}
	}
	if raw, ok := m["logging"]; ok {
		var entries []map[string]any
		if json.Unmarshal(raw, &entries) == nil {
			for _, e := range entries {
				if v, ok := e["callback_vars"].(map[string]any); ok {
					name, _ := e["callback_name"].(string)
					apply(strings.ToLower(strings.TrimSpace(name)), v)
				}
			}
			m["logging"], _ = json.Marshal(entries)
		}
	}
	if raw, ok := m["callback_settings"]; ok {
		var s map[string]any
		if json.Unmarshal(raw, &s) == nil {
			if v, ok := s["callback_vars"].(map[string]any); ok {
				apply(settingsVars, v)
			}
			m["callback_settings"], _ = json.Marshal(s)
		}
	}
	if ferr != nil {
		return nil, ferr
	}
	return json.Marshal(m)
}

// HasMasked reports whether meta may hold a credential sent back masked
// (Redacted): what KeepMasked needs the stored metadata for.
func HasMasked(meta json.RawMessage) bool {
	return strings.Contains(string(meta), Redacted)
}

// KeepMasked returns meta with each credential that reads Redacted (a
// record's masked metadata sent back on an edit, as LiteLLM's UI and the
// console do) replaced by the value stored for the same callback and var
// in stored, so that an edit never writes the mask over the credential.
// A masked credential that stored does not hold is an error naming it.
func KeepMasked(meta, stored json.RawMessage) (json.RawMessage, error) {
	if !HasMasked(meta) {
		return meta, nil
	}
	old := map[[2]string]any{}
	if _, err := mapSecretVars(stored, func(cb, name string, v any) (any, error) {
		old[[2]string{cb, name}] = v
		return v, nil
	}); err != nil {
		return nil, err
	}
	return mapSecretVars(meta, func(cb, name string, v any) (any, error) {
		if v != Redacted {
			return v, nil
		}
		if o, ok := old[[2]string{cb, name}]; ok && o != Redacted {
			return o, nil
		}
		return nil, fmt.Errorf("callback_vars.%s is %s, the masked value, and no credential is stored for it: send the credential", name, Redacted)
	})
}
