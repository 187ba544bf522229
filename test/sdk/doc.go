// Package sdk tests the gateway as a user meets it: the real local server,
// built from ./functions/gateway and started as a subprocess, called through
// the official OpenAI Go SDK (github.com/openai/openai-go/v3).
package sdk
