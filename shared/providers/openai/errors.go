package openai

import "github.com/sluice-gw/sluice/shared/catalog"

// Errors are the words of OpenAI and of the servers that copy its API
// (vLLM, Ollama, hosted providers) for what a 400 does not say.
var Errors = catalog.ErrorWords{
	ContextWindow: catalog.Signal{
		Codes:   []string{"context_length_exceeded"},
		Phrases: []string{"maximum context length", "context_length_exceeded", "context window", "too many tokens"},
	},
	ContentPolicy: catalog.Signal{
		Codes:   []string{"content_policy_violation"},
		Phrases: []string{"content policy"},
	},
}
