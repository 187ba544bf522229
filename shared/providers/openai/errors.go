package openai

import "github.com/sluice-gw/sluice/shared/catalog"

// Errors are the words of OpenAI and of the servers that copy its API
// (vLLM, Ollama, hosted providers) for what a 400 or a 404 does not say.
var Errors = catalog.ErrorWords{
	ContextWindow: catalog.Signal{
		Codes:   []string{"context_length_exceeded"},
		Phrases: []string{"maximum context length", "context_length_exceeded", "context window", "too many tokens"},
	},
	ContentPolicy: catalog.Signal{
		Codes:   []string{"content_policy_violation"},
		Phrases: []string{"content policy"},
	},
	// "The model `x` does not exist or you do not have access to it."
	// (OpenAI, vLLM); "model 'x' not found, try pulling it first" (Ollama).
	ModelMissing: catalog.Signal{
		Codes:   []string{"model_not_found"},
		Phrases: []string{"does not exist", "not found, try pulling it"},
	},
}
