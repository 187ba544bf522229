// Command gateway is the LLM gateway: an OpenAI-compatible HTTP server in
// local mode, or the Lambda function behind a streaming function URL when it
// runs inside Lambda. It only wires: its settings come from appenv, the
// gateway is built and served by shared/app (gatewayapp).
package main

import (
	"fmt"
	"os"

	"github.com/sluice-gw/sluice/shared/app/appenv"
	"github.com/sluice-gw/sluice/shared/app/gatewayapp"
	"github.com/sluice-gw/sluice/shared/inittrace"
)

func main() {
	inittrace.Mark("main")
	s, err := appenv.Read(appenv.Gateway, os.LookupEnv, os.Args)
	if err == nil {
		err = gatewayapp.Run(s)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}
