//go:build !lambda.norpc

package gatewayapp

import (
	"net/http"

	"github.com/sluice-gw/sluice/shared/console"
)

// withConsole adds the admin console (/ui) to local mode's port. The
// Lambda build (-tags lambda.norpc) leaves it out (console_lambda.go): the
// gateway function serves no console, the admin function does.
func withConsole(h http.Handler) (http.Handler, string) {
	return console.Wrap(h), console.Prefix
}
