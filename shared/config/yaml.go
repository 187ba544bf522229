package config

import "go.yaml.in/yaml/v3"

// deref follows an alias (*name) to the node it names.
func deref(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

func isMerge(k *yaml.Node) bool { return k.Kind == yaml.ScalarNode && k.Tag == "!!merge" }

func joinPath(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// maxMerged bounds the mappings that merge keys bring into one mapping
// (nested merges of merges could otherwise grow exponentially).
const maxMerged = 1000

// pairs iterates a mapping node's keys and values. It follows aliases and
// YAML merge keys (<<: *defaults), as LiteLLM's YAML loader does: merged
// keys come first, and a key the mapping sets itself wins over a merged one.
func pairs(path string, n *yaml.Node, fn func(key string, v *yaml.Node, kpath string) error) error {
	n = deref(n)
	if n == nil || n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return errAt(path, n, "must be a mapping")
	}
	var seen map[string]bool // with merge keys: the keys already given to fn, or set explicitly
	for i := 0; i+1 < len(n.Content); i += 2 {
		if isMerge(n.Content[i]) {
			seen = map[string]bool{}
			break
		}
	}
	if seen != nil {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if !isMerge(n.Content[i]) {
				seen[n.Content[i].Value] = true
			}
		}
		budget := maxMerged
		if err := mergedPairs(path, n, seen, &budget, fn); err != nil {
			return err
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if seen != nil && isMerge(k) {
			continue
		}
		if err := fn(k.Value, n.Content[i+1], joinPath(path, k.Value)); err != nil {
			return err
		}
	}
	return nil
}

// mergedPairs calls fn for the keys that n's merge keys bring and seen
// lacks (an earlier source wins over a later one, a source's own keys over
// those it merges itself), and adds them to seen.
func mergedPairs(path string, n *yaml.Node, seen map[string]bool, budget *int, fn func(key string, v *yaml.Node, kpath string) error) error {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !isMerge(n.Content[i]) {
			continue
		}
		v := deref(n.Content[i+1])
		srcs := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			srcs = v.Content
		}
		for _, src := range srcs {
			src = deref(src)
			if src.Kind != yaml.MappingNode {
				return errAt(joinPath(path, "<<"), src, "must be a mapping or a list of mappings")
			}
			if *budget--; *budget < 0 {
				return errAt(joinPath(path, "<<"), src, "more than %d merged mappings", maxMerged)
			}
			for j := 0; j+1 < len(src.Content); j += 2 {
				k := src.Content[j]
				if isMerge(k) || seen[k.Value] {
					continue
				}
				seen[k.Value] = true
				if err := fn(k.Value, src.Content[j+1], joinPath(path, k.Value)); err != nil {
					return err
				}
			}
			if err := mergedPairs(path, src, seen, budget, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// anyValue decodes a node into plain Go values (for pass-through params).
func anyValue(path string, n *yaml.Node) (any, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, errAt(path, n, "%v", err)
	}
	return v, nil
}

func hasKey(m *yaml.Node, section, key string) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == section {
			s := m.Content[i+1]
			for j := 0; j+1 < len(s.Content); j += 2 {
				if s.Content[j].Value == key {
					return true
				}
			}
		}
	}
	return false
}
