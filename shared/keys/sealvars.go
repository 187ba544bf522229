package keys

import (
	"encoding/json"
	"fmt"
)

// VarSealer seals and opens credentials (models.Sealer: LiteLLM's salt
// key scheme, the one stored deployments' credentials are sealed with).
type VarSealer interface {
	Seal(plain string) (string, error)
	Open(sealed string) (string, error)
}

// SealCallbackVars returns meta with each credential of its callbacks'
// vars (SecretVar) sealed with s, for storing: a value that already opens
// with s (read back from the store and written again) stays as it is; a
// credential that is not a string is sealed as its JSON text.
func SealCallbackVars(meta json.RawMessage, s VarSealer) (json.RawMessage, error) {
	return MapSecretVars(meta, func(name string, v any) (any, error) {
		str, ok := v.(string)
		if !ok {
			if v == nil {
				return nil, nil
			}
			text, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("callback_vars.%s: %w", name, err)
			}
			str = string(text)
		}
		if str == "" {
			return str, nil
		}
		if _, err := s.Open(str); err == nil {
			return str, nil
		}
		return s.Seal(str)
	})
}

// OpenCallbackVars returns a copy of a callback's vars with each
// credential opened with open. An error names the var, never its value.
func OpenCallbackVars(vars map[string]string, open func(sealed string) (string, error)) (map[string]string, error) {
	out := make(map[string]string, len(vars))
	for k, v := range vars {
		if v != "" && SecretVar(k) {
			plain, err := open(v)
			if err != nil {
				return nil, fmt.Errorf("callback_vars.%s: %w", k, err)
			}
			v = plain
		}
		out[k] = v
	}
	return out, nil
}
