package providers

import (
	"context"
	"net/http"

	"github.com/sluice-gw/sluice/shared/catalog"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/providers/anthropic"
	"github.com/sluice-gw/sluice/shared/providers/azure"
	"github.com/sluice-gw/sluice/shared/providers/bedrock"
	"github.com/sluice-gw/sluice/shared/providers/gemini"
	"github.com/sluice-gw/sluice/shared/providers/mock"
	"github.com/sluice-gw/sluice/shared/providers/openai"
	"github.com/sluice-gw/sluice/shared/providers/vertex"
	"github.com/sluice-gw/sluice/shared/wire"
)

// Vendor speaks one protocol (Bifrost's Provider): each package under
// providers/ has one, and vendors lists them by the protocol they serve.
type Vendor interface {
	// Do sends call to d. A non-2xx response comes back as it is, for the
	// dispatcher to classify; so does a failure to get one.
	Do(ctx context.Context, d *config.Deployment, call wire.Call) (*http.Response, error)
	// StreamUsage says whether a stream to d may be asked for its usage
	// even when the client did not ask (to account tokens).
	StreamUsage(d *config.Deployment) bool
}

var (
	_ Vendor = (*openai.Provider)(nil)
	_ Vendor = (*azure.Provider)(nil)
	_ Vendor = mock.Provider{}
	_ Vendor = (*anthropic.Provider)(nil)
	_ Vendor = (*bedrock.Clients)(nil)
	_ Vendor = (*gemini.Provider)(nil)
	_ Vendor = (*vertex.Provider)(nil)
)

// vendors returns the vendor of each implemented protocol, sending through
// client. A new vendor is a package under providers/ with a Vendor and its
// ErrorWords, its prefixes in catalog, and a line here and in words.
//
// The table is built once per Dispatcher and indexed by the protocol config
// gave the deployment at load: finding a vendor costs an array read.
func vendors(client *http.Client) [catalog.Protocols]Vendor {
	return [catalog.Protocols]Vendor{
		catalog.OpenAI:    openai.New(client),
		catalog.Azure:     azure.New(client),
		catalog.Mock:      mock.Provider{},
		catalog.Anthropic: anthropic.New(client),
		catalog.Bedrock:   bedrock.NewClients(client),
		catalog.Gemini:    gemini.New(client),
		catalog.Vertex:    vertex.New(client),
	}
}

// words are every vendor's words for the failures a status does not tell
// apart (catalog.ErrorWords says why all of them, for every deployment).
var words = catalog.Merge(openai.Errors, azure.Errors, anthropic.Errors, gemini.Errors, vertex.Errors)
