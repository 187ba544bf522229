//go:build lambda.norpc

package gatewayapp

import "net/http"

// withConsole is h as it is: the gateway's Lambda build does not link the
// console (test/repo checks it); a local server built so has none.
func withConsole(h http.Handler) (http.Handler, string) { return h, "" }
