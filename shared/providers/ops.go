package providers

import (
	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/providers/catalog"
	"github.com/sluice-gw/sluice/shared/wire"
)

// unsupported refuses an operation d's protocol does not serve. Chat and
// embeddings go to every vendor (each refuses what it cannot translate);
// text completions, images, moderations and audio pass through untranslated
// to OpenAI-compatible and Azure deployments only (and the mock answers text
// completions). LiteLLM translates a text completion into a chat call for
// other providers; the gateway does not (docs/endpoints.md).
func unsupported(d *config.Deployment, op wire.Op) error {
	switch {
	case op == wire.OpChat || op == wire.OpEmbeddings:
		return nil
	case d.Protocol == catalog.Mock || d.MockResponse != nil: // the mock answers in place of any provider
		if op == wire.OpCompletions {
			return nil
		}
		return apierr.New(apierr.InvalidRequest, "deployment %s answers with mock_response, which serves chat, text completions and embeddings only, not %s", d.ID, op.Path())
	case d.Protocol == catalog.OpenAI || d.Protocol == catalog.Azure:
		return nil
	}
	return apierr.New(apierr.InvalidRequest, "deployment %s (%s) does not serve %s: only openai, azure and OpenAI-compatible deployments do", d.ID, d.Provider, op.Path())
}
