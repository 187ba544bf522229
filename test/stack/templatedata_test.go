package stack_test

import (
	"crypto/rand"
	"encoding/hex"
	"sort"
)

// --- template data helpers

func at(data any, keys ...string) any {
	for _, k := range keys {
		m, ok := data.(map[string]any)
		if !ok {
			return nil
		}
		data = m[k]
	}
	return data
}

func mapAt(data any, keys ...string) map[string]any {
	m, _ := at(data, keys...).(map[string]any)
	return m
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = deepCopy(e)
		}
		return l
	default:
		return v
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// resourcesOfType returns the deployed template's resources of a type, in
// name order.
func (s *stack) resourcesOfType(typ string) []string {
	var out []string
	for id, r := range mapAt(s.deployed, "Resources") {
		if str(at(r, "Type")) == typ {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}
