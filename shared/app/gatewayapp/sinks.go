//go:build !lambda.norpc

package gatewayapp

import (
	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/callbacks/sinks"
)

// localSinks delivers the logging callbacks from local mode's in-process
// spend queue. The Lambda build (-tags lambda.norpc) has none
// (sinks_lambda.go): there the spend function delivers, and the gateway's
// bootstrap links no sink package (test/repo checks it).
func localSinks(getenv func(string) (string, bool)) app.SinksFunc { return sinks.Func(getenv) }
