//go:build lambda.norpc

package gatewayapp

import "github.com/sluice-gw/sluice/shared/app"

// localSinks is nil in the Lambda build: the spend function delivers the
// logging callbacks (sinks.go).
func localSinks(func(string) (string, bool)) app.SinksFunc { return nil }
