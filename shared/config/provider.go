package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-gw/sluice/shared/providers/catalog"
)

// endpoint reports a deployment whose provider is not implemented, and
// gives the others their provider's default api_base (or refuses the
// deployment when its provider has none).
func (l *loader) endpoint(e *entry, d *Deployment) error {
	spec, _ := catalog.Lookup(d.Provider)
	switch {
	case !d.Implemented:
		l.warn(e.paramsPath+".model", e.model, "provider %q is not implemented yet: deployment %q is left out of routing", d.Provider, d.ModelName)
	case d.APIBase == "" && spec.NeedsBase && d.MockResponse == nil:
		return errAt(e.paramsPath+".api_base", e.params, "is required for provider %q", d.Provider)
	case d.APIBase == "":
		d.APIBase = spec.DefaultBase
	}
	return nil
}

// parseModel reads litellm_params.model: provider/model, the provider
// known to the catalog.
func (l *loader) parseModel(path string, n *yaml.Node, s string, d *Deployment) error {
	s = strings.TrimSpace(s)
	if s == "" {
		return errAt(path, n, "must not be empty")
	}
	provider, model, ok := strings.Cut(s, "/")
	if !ok { // LiteLLM infers OpenAI for bare model names
		provider, model = "openai", s
	}
	spec, known := catalog.Lookup(provider)
	if !known {
		return errAt(path, n, "unknown provider %q%s", provider, suggest(provider))
	}
	if model == "" {
		return errAt(path, n, "missing model name after %q", provider+"/")
	}
	d.Provider, d.Model, d.Protocol = provider, model, spec.Protocol
	d.Implemented = spec.Implemented()
	return nil
}

// suggest names the closest known provider, for typos like "opnai".
func suggest(p string) string {
	best, bestD := "", 3
	for _, name := range catalog.Prefixes() {
		if d := editDistance(p, name); d < bestD {
			best, bestD = name, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// stableID derives a deployment id that every gateway instance computes the
// same way from the same config, so that shared cooldowns and counters agree.
func stableID(d *Deployment) string {
	h := sha256.New()
	for _, s := range []string{d.ModelName, d.Provider, d.Model, d.APIBase, d.APIVersion} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
