// Command spend is the spend queue consumer. In Lambda it is the SQS-triggered
// function (partial batch failures); outside Lambda it long-polls
// SPEND_QUEUE_URL and runs the same handler, deleting what it recorded, so
// that local gateways on -store dynamodb plus one local consumer behave as
// the deployed stack does; with -replay FILE it records the events that
// the gateway logged as "spend event not recorded" (or a file of events,
// one JSON object a line) and exits. It only wires: its settings come from
// appenv, the consumer is built by shared/app (spendapp).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sluice-gw/sluice/shared/app/appenv"
	"github.com/sluice-gw/sluice/shared/app/spendapp"
	"github.com/sluice-gw/sluice/shared/limits"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "spend:", err)
		os.Exit(1)
	}
}

func run() error {
	e, err := appenv.Read(appenv.Spend, os.LookupEnv, os.Args)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: e.LogLevel}))
	slog.SetDefault(log)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a, err := spendapp.Build(ctx, e, log)
	switch {
	case err != nil:
		return err
	case e.Replay != "":
		return a.Replay(ctx)
	case e.Lambda:
		lambda.StartWithOptions(handler(a.Consumer, a.Store, log), lambda.WithContext(ctx))
		return nil
	}
	go limits.SweepEvery(ctx, a.Store, limits.SweepInterval, time.Now, log) // strict-budget holds of crashed requests
	return a.Poll(ctx)
}
