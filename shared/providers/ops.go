package providers

import (
	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/catalog"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/providers/bedrock"
	"github.com/sluice-gw/sluice/shared/wire"
)

// unsupported refuses an operation d's protocol does not serve. Chat and
// embeddings go to every vendor (each refuses what it cannot translate);
// text completions, images, moderations and audio pass through untranslated
// to OpenAI-compatible and Azure deployments only (and the mock answers text
// completions); Bedrock's image models translate images (bedrock/images.go). LiteLLM translates a text completion into a chat call for
// other providers; the gateway does not (docs/endpoints.md).
func unsupported(d *config.Deployment, op wire.Op) error {
	switch {
	case d.Provider == textCompletionOpenAI && op != wire.OpCompletions && op != wire.OpChat && d.MockResponse == nil:
		return apierr.New(apierr.InvalidRequest, "deployment %s (%s/%s) serves text completions and chat (sent as a text completion) only, not %s", d.ID, d.Provider, d.Model, op.Path())
	case op == wire.OpChat || op == wire.OpEmbeddings:
		return nil
	case d.Protocol == catalog.Mock || d.MockResponse != nil: // the mock answers in place of any provider
		if op == wire.OpCompletions {
			return nil
		}
		return apierr.New(apierr.InvalidRequest, "deployment %s answers with mock_response, which serves chat, text completions and embeddings only, not %s", d.ID, op.Path())
	case d.Protocol == catalog.OpenAI || d.Protocol == catalog.Azure:
		return nil
	case d.Protocol == catalog.Bedrock && op == wire.OpImages:
		// A wildcard deployment's model is the request's: the bedrock
		// package refuses a model it cannot serve.
		if id := bedrock.ModelID(d.Model); d.Model == "*" || d.Model == "" || bedrock.ImageModel(id) {
			return nil
		}
		return apierr.New(apierr.InvalidRequest, "deployment %s (%s) does not serve %s: Bedrock image generation supports Titan Image Generator, Nova Canvas and Stability SD3 / Stable Image models", d.ID, d.Model, op.Path())
	}
	return apierr.New(apierr.InvalidRequest, "deployment %s (%s) does not serve %s: only openai, azure and OpenAI-compatible deployments do", d.ID, d.Provider, op.Path())
}
