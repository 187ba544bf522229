package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-gw/sluice/shared/catalog"
)

// endpoint reports a deployment whose provider is not implemented, and
// gives the others their provider's default api_base. An Azure deployment
// without api_base, api_key or api_version reads AZURE_API_BASE,
// AZURE_API_KEY and AZURE_API_VERSION (through getenv, at load), as LiteLLM
// reads them when it calls; with no base at all its calls fail (the azure
// provider says why). Another provider that needs an api_base and has none
// is left out of routing: LiteLLM loads such a config and fails its calls.
func (l *loader) endpoint(e *entry, d *Deployment) {
	if d.Unusable != "" {
		return
	}
	spec, _ := catalog.Lookup(d.Provider)
	if d.Provider == "azure" && d.MockResponse == nil {
		l.azureEnv(e, d)
		return
	}
	if d.Protocol == ProtocolVertex && d.MockResponse == nil {
		l.vertexEnv(e, d) // vertex.go
		return
	}
	switch {
	case !d.Implemented:
		if d.Unusable == "" {
			l.warn(e.paramsPath+".model", e.model, "provider %q is not implemented yet: deployment %q is left out of routing", d.Provider, d.ModelName)
		}
	case d.APIBase == "" && spec.NeedsBase && d.MockResponse == nil:
		l.leaveOut(e.paramsPath+".api_base", e.params, d, fmt.Sprintf("api_base is required for provider %q", d.Provider))
	case d.APIBase == "":
		d.APIBase = spec.DefaultBase
	}
	if d.Provider == "gemini" && d.APIKey == "" && d.MockResponse == nil {
		if v, ok := l.getenv(GeminiKeyEnv); ok {
			d.APIKey, d.APIKeyEnv = v, GeminiKeyEnv
		}
	}
}

// GeminiKeyEnv is read for a gemini/ deployment without api_key (LiteLLM's
// name).
const GeminiKeyEnv = "GEMINI_API_KEY"

// Azure's environment variables, read when a deployment leaves the value
// out (LiteLLM's names).
const (
	AzureBaseEnv    = "AZURE_API_BASE"
	AzureKeyEnv     = "AZURE_API_KEY"
	AzureVersionEnv = "AZURE_API_VERSION"
)

func (l *loader) azureEnv(e *entry, d *Deployment) {
	if d.APIBase == "" {
		if v, ok := l.getenv(AzureBaseEnv); ok && strings.TrimSpace(v) != "" {
			v = strings.TrimRight(strings.TrimSpace(v), "/")
			if !strings.HasPrefix(v, "http://") && !strings.HasPrefix(v, "https://") {
				l.warn(e.paramsPath, e.params, "no api_base, and %s is not an http:// or https:// URL: calls to this deployment fail", AzureBaseEnv)
			} else {
				d.APIBase = v
			}
		} else {
			l.warn(e.paramsPath, e.params, "no api_base, and %s is not set: calls to deployment %q fail", AzureBaseEnv, d.ModelName)
		}
	}
	if d.APIKey == "" {
		d.APIKey, _ = l.getenv(AzureKeyEnv)
		d.APIKeyEnv = AzureKeyEnv
	}
	if d.APIVersion == "" {
		d.APIVersion, _ = l.getenv(AzureVersionEnv)
	}
}

// leaveOut reports an entry LiteLLM would load but the gateway cannot call,
// and leaves it out of routing; requests to its group get reason.
func (l *loader) leaveOut(path string, n *yaml.Node, d *Deployment, reason string) {
	d.Implemented, d.Unusable, d.Protocol = false, reason, ProtocolNone
	l.warn(path, n, "%s: deployment %q is left out of routing", reason, d.ModelName)
}

// parseModel reads litellm_params.model: provider/model, the provider
// known to the catalog. An unknown provider or a missing model name leaves
// the deployment out of routing (a warning): LiteLLM loads such a config
// and fails the calls.
func (l *loader) parseModel(path string, n *yaml.Node, s string, d *Deployment) error {
	s = strings.TrimSpace(s)
	if s == "" {
		return errAt(path, n, "must not be empty")
	}
	provider, model, ok := strings.Cut(s, "/")
	if !ok { // LiteLLM infers OpenAI for bare model names
		provider, model = "openai", s
		d.AnyProvider = s == "*" // the provider from each request's model (anyprovider.go)
	}
	spec, known := catalog.Lookup(provider)
	d.Provider, d.Model = provider, model
	if !known {
		l.leaveOut(path, n, d, fmt.Sprintf("unknown provider %q%s", provider, didYouMean(provider, catalog.Prefixes())))
		return nil
	}
	if model == "" {
		l.leaveOut(path, n, d, fmt.Sprintf("missing model name after %q", provider+"/"))
		return nil
	}
	d.Protocol = spec.Protocol
	d.Implemented = spec.Implemented()
	return nil
}

// stableID derives a deployment id that every gateway instance computes the
// same way from the same config, so that shared cooldowns and counters agree.
func stableID(d *Deployment) string {
	h := sha256.New()
	for _, s := range []string{d.ModelName, d.Provider, d.Model, d.APIBase, d.APIVersion} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	if v := d.Vertex; v.Project != "" || v.Location != "" { // two regions of one model are two deployments
		h.Write([]byte(v.Project + "\x00" + v.Location + "\x00"))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
