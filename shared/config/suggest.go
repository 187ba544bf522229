package config

import (
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"
)

// closest is the candidate nearest to name (at most two edits; one for a
// name of four letters or fewer), for "did you mean" in warnings and
// errors; "" when none is close. Ties go to the first candidate.
func closest(name string, candidates []string) string {
	limit := 3
	if len(name) <= 4 {
		limit = 2
	}
	best, bestD := "", limit
	if len(name) > maxSuggested {
		return ""
	}
	for _, c := range candidates {
		if c == name || len(c)-len(name) >= limit || len(name)-len(c) >= limit {
			continue // the same, or more edits apart than the lengths allow
		}
		if d := editDistance(name, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// maxSuggested is the longest name closest compares: no key is longer, and
// a long one would cost its length times each candidate's.
const maxSuggested = 64

// didYouMean is closest's suggestion as a warning's tail: ` (did you mean
// "x"?)`, or "".
func didYouMean(name string, candidates []string) string {
	if best := closest(name, candidates); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

// editDistance is the Levenshtein distance, with an adjacent transposition
// counted as one edit ("model_lsit" is one from "model_list").
func editDistance(a, b string) int {
	rows := make([][]int, len(a)+1)
	for i := range rows {
		rows[i] = make([]int, len(b)+1)
		rows[i][0] = i
	}
	for j := range rows[0] {
		rows[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			rows[i][j] = min(rows[i-1][j]+1, rows[i][j-1]+1, rows[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				rows[i][j] = min(rows[i][j], rows[i-2][j-2]+1)
			}
		}
	}
	return rows[len(a)][len(b)]
}

// keysOf lists a set's keys, sorted (a deterministic suggestion).
func keysOf[V any](m map[string]V, extra ...string) []string {
	out := append([]string(nil), extra...)
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// invalidEntry is a model_list entry LiteLLM's proxy would skip (no
// model_name, no litellm_params, no model): warned and left out.
type invalidEntry struct{ e *Error }

func (i *invalidEntry) Error() string { return i.e.Error() }

// Unwrap lets errors.As find the *Error (the admin API reads its path).
func (i *invalidEntry) Unwrap() error { return i.e }

// unknownKey warns about a key of a model_list entry or its
// litellm_params that the gateway does not read, naming the known key it
// resembles; one that resembles a required key is kept in e.typos, so
// that the missing key is reported as the typo.
func (l *loader) unknownKey(e *entry, known []string, key, path string, n *yaml.Node) {
	best := closest(key, known)
	if best == "" {
		l.warn(path, n, "not supported yet; ignored")
		return
	}
	if best == "model_name" || best == "litellm_params" || best == "model" {
		e.typos[best] = &yaml.Node{Kind: yaml.ScalarNode, Value: key, Line: n.Line, Column: n.Column}
	}
	l.warn(path, n, "unknown key %s (did you mean %s?); ignored", key, best)
}

// keyNode is the key node of key in mapping m (its line is the key's,
// where a block value's is the line after), else v.
func keyNode(m *yaml.Node, key string, v *yaml.Node) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key && m.Content[i+1] == v {
			return m.Content[i]
		}
	}
	return v
}

// knownParams are the litellm_params keys the gateway reads.
func knownParams() []string {
	out := append(keysOf(passParams), implementedParams...)
	out = append(out, keysOf(awsParams)...)
	return append(out, "input_cost_per_token", "output_cost_per_token", "cache_read_input_token_cost",
		"input_cost_per_token_cache_hit", "cache_creation_input_token_cost")
}
