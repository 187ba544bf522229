package vertex

import "github.com/sluice-gw/sluice/shared/catalog"

// Errors are Vertex AI's words for what its statuses do not say (Google's
// error shape: {"error":{"code":400,"message":...,"status":"INVALID_ARGUMENT"}}):
// a prompt over the context window is a 400 INVALID_ARGUMENT whose message
// counts the tokens; a refusal by the safety filters says it was blocked. A
// 429 RESOURCE_EXHAUSTED is a rate limit by its status, and Claude's own
// errors (passed through by rawPredict) are Anthropic's words.
var Errors = catalog.ErrorWords{
	ContextWindow: catalog.Signal{Phrases: []string{
		"exceeds the maximum number of tokens allowed", // Gemini: "The input token count (N) exceeds the maximum number of tokens allowed (M)."
		"input is too long",
	}},
	ContentPolicy: catalog.Signal{Phrases: []string{
		"blocked by the safety filters",
		"violates google's responsible ai practices",
	}},
	ModelMissing: catalog.Signal{Phrases: []string{"publisher model"}}, // "Publisher Model `projects/.../models/x` not found."
}
