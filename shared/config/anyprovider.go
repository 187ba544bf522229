package config

import (
	"strings"

	"github.com/sluice-gw/sluice/shared/catalog"
	"github.com/sluice-gw/sluice/shared/pricing"
)

// A deployment whose litellm_params.model is a bare "*" (no provider)
// serves any model, each through the provider LiteLLM infers from the
// model's name: the price table's litellm_provider for it ("claude-sonnet-4-5"
// is Anthropic's, "gpt-4o" OpenAI's), else its name ("claude-*" Anthropic,
// "gemini-*" Gemini, "gpt-*", "o1"... OpenAI), else a "provider/" prefix the
// request names; OpenAI when none says. Each provider it may reach is a
// variant of the deployment built at load: that provider's protocol and
// default api_base (the deployment's own api_base wins), and the
// deployment's api_key, else the provider's environment variable
// (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...), as LiteLLM reads it.

// anyProviders are the providers a "*" deployment may reach: the
// implemented ones that need no api_base of their own.
func anyProviders() []string {
	var out []string
	for _, p := range catalog.Prefixes() {
		if spec, _ := catalog.Lookup(p); spec.Implemented() && spec.DefaultBase != "" && spec.Protocol != catalog.Mock {
			out = append(out, p)
		}
	}
	return out
}

// providerKeyEnv is the environment variable LiteLLM reads a provider's
// key from.
func providerKeyEnv(p string) string {
	switch p {
	case "together_ai":
		return "TOGETHERAI_API_KEY"
	case "perplexity":
		return "PERPLEXITYAI_API_KEY"
	}
	return strings.ToUpper(strings.ReplaceAll(p, "-", "_")) + "_API_KEY"
}

// anyProvider builds the variants of a "*" deployment.
func (l *loader) anyProvider(d *Deployment) {
	if !d.AnyProvider || d.Unusable != "" {
		return
	}
	d.variants = map[string]*Deployment{}
	for _, p := range anyProviders() {
		spec, _ := catalog.Lookup(p)
		v := *d
		v.variants, v.AnyProvider = nil, false
		v.Provider, v.Protocol, v.Implemented = p, spec.Protocol, true
		if d.APIBase == "" {
			v.APIBase = spec.DefaultBase
		}
		if d.APIKey == "" && d.APIKeyEnv == "" {
			v.APIKeyEnv = providerKeyEnv(p)
			v.APIKey, _ = l.getenv(v.APIKeyEnv)
		}
		d.variants[p] = &v
	}
}

// nameProviders are the model name prefixes LiteLLM's names imply, for a
// model the price table does not know.
var nameProviders = []struct{ prefix, provider string }{
	{"claude", "anthropic"}, {"gemini", "gemini"}, {"gpt-", "openai"}, {"chatgpt", "openai"},
	{"o1", "openai"}, {"o3", "openai"}, {"o4", "openai"}, {"text-embedding", "openai"},
	{"dall-e", "openai"}, {"gpt-image", "openai"}, {"whisper", "openai"}, {"tts-", "openai"},
	{"omni-moderation", "openai"}, {"text-moderation", "openai"}, {"grok", "xai"}, {"deepseek", "deepseek"},
}

// ForModel is the deployment that calls model: d itself, or, for a "*"
// deployment, its variant for the provider model's name implies (t: the
// price table; nil reads none).
func (d *Deployment) ForModel(model string, t *pricing.Table) *Deployment {
	if d.variants == nil {
		return d
	}
	if p, _, ok := strings.Cut(model, "/"); ok {
		if v := d.variants[p]; v != nil {
			return v
		}
	}
	if v := d.variants[t.ProviderOf(model)]; v != nil {
		return v
	}
	for _, np := range nameProviders {
		if strings.HasPrefix(model, np.prefix) {
			if v := d.variants[np.provider]; v != nil {
				return v
			}
		}
	}
	if v := d.variants["openai"]; v != nil {
		return v
	}
	return d
}

// Variants are the providers a "*" deployment may reach, with a key; nil
// for any other deployment.
func (d *Deployment) Variants() []*Deployment {
	var out []*Deployment
	for _, p := range anyProviders() {
		if v := d.variants[p]; v != nil && v.Key() != "" {
			out = append(out, v)
		}
	}
	return out
}
