// Package catalog is the table of providers a config may name: for each
// prefix of litellm_params.model ("openai/gpt-4o", "groq/llama-3.1-8b"), the
// protocol that serves it and what it needs from the config.
//
// It sits below config and the vendor packages and imports neither: the
// vendor packages import config (for *config.Deployment), so config cannot
// reach them, and a table filled in by the vendors at init would make a
// config's validity depend on which packages a program links (the router's
// tests and infra/bootstrap load configs without any vendor). config
// validates a model against it; package providers finds a deployment's
// vendor by the Protocol it names (Bifrost keeps its provider names in
// schemas for the same reason).
package catalog

import (
	"maps"
	"slices"
)

// Protocol is the wire protocol a deployment speaks: the vendor package
// under providers/ that serves it.
type Protocol uint8

const (
	None      Protocol = iota // a LiteLLM provider not implemented yet
	OpenAI                    // OpenAI's REST API (and compatible servers)
	Azure                     // Azure OpenAI: deployment URLs, api-version, api-key header
	Mock                      // in-process canned replies (no network)
	Anthropic                 // Anthropic's Messages API, translated from and to OpenAI chat
	Bedrock                   // Amazon Bedrock's Converse API (AWS SDK, SigV4)
	Gemini                    // Google's Gemini API (generateContent), translated from and to OpenAI chat
	Vertex                    // Vertex AI (Claude through rawPredict, Gemini), service-account OAuth

	// Protocols counts the protocols: a table indexed by Protocol has this
	// many entries.
	Protocols = iota
)

// Entry says how the gateway reaches the provider of one prefix.
type Entry struct {
	Protocol    Protocol
	DefaultBase string // api_base when the config sets none
	NeedsBase   bool   // api_base is required (self-hosted servers)
}

// Implemented reports whether the gateway can call the provider.
func (e Entry) Implemented() bool { return e.Protocol != None }

// Lookup returns the entry of a provider prefix; ok is false for a prefix
// LiteLLM does not know (a typo: the load fails).
func Lookup(prefix string) (e Entry, ok bool) {
	e, ok = entries[prefix]
	return e, ok
}

// Prefixes returns every known prefix, sorted.
func Prefixes() []string { return prefixes }

var prefixes = slices.Sorted(maps.Keys(entries))
