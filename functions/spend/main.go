// Command spend is the spend queue consumer: an SQS-triggered function that
// reports partial batch failures. It only wires.
package main

import (
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sluice-gw/sluice/shared/spendconsumer"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	slog.SetDefault(log)
	lambda.Start(spendconsumer.New(log).Handle)
}
