// Command spend is the spend queue consumer. In Lambda it is the SQS-triggered
// function (partial batch failures); outside Lambda it long-polls
// SPEND_QUEUE_URL and runs the same handler, deleting what it recorded, so
// that local gateways on -store dynamodb plus one local consumer behave as
// the deployed stack does; with -replay FILE it records the events that
// the gateway logged as "spend event not recorded" (or a file of events,
// one JSON object a line) and exits. It only wires.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sluice-gw/sluice/infra/tables"
	"github.com/sluice-gw/sluice/shared/awsconf"
	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys/ddbkeys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/ddbspend"
	"github.com/sluice-gw/sluice/shared/spend/spendsqs"
	"github.com/sluice-gw/sluice/shared/sysroots"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "spend:", err)
		os.Exit(1)
	}
}

func run() error {
	replay := flag.String("replay", "", `record the events of FILE ("-": stdin): log lines "spend event not recorded", or one event a line; then exit`)
	batch := flag.Int("batch", 100, "most messages handled together (outside Lambda)")
	window := flag.Duration("window", 2*time.Second, "how long a batch gathers after its first message (outside Lambda)")
	flag.Parse()
	if os.Getenv("AWS_LAMBDA_RUNTIME_API") != "" {
		sysroots.FromBundle() // before the first TLS handshake: the CA bundle, not the bundle and its copies
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel(os.Getenv("LOG_LEVEL"))}))
	slog.SetDefault(log)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	awsCfg, err := awsconf.Load(ctx, awsconf.Options{}) // the environment only, in a Lambda build
	if err != nil {
		return fmt.Errorf("aws config: %w", err)
	}
	awsCfg.HTTPClient = awsconf.SafeRequestBodies(awsCfg.HTTPClient)
	names := tables.Names{Keys: envOr("KEYS_TABLE", tables.Keys.DefaultName), Spend: envOr("SPEND_TABLE", tables.Spend.DefaultName),
		Counters: envOr("COUNTERS_TABLE", tables.Counters.DefaultName)}
	emulator := os.Getenv("AWS_ENDPOINT_URL") != "" || os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") != ""
	client := ddb.NewClient(awsCfg, ddb.ClientOptions{Emulator: emulator})
	store := ddbspend.New(client, names.Spend, names.Keys, ddbkeys.New(client, names.Keys, ddbkeys.Options{}), ddbspend.Options{Logger: log, CountersTable: names.Counters})
	consumer := spend.NewConsumer(store, log)

	if *replay != "" {
		var in io.Reader = os.Stdin
		if *replay != "-" {
			f, err := os.Open(*replay)
			if err != nil {
				return err
			}
			defer f.Close()
			in = f
		}
		recorded, dups, err := consumer.Replay(ctx, in)
		fmt.Fprintf(os.Stderr, "replay: %d events recorded, %d recorded before\n", recorded, dups)
		return err
	}
	if os.Getenv("AWS_LAMBDA_RUNTIME_API") != "" {
		lambda.StartWithOptions(handler(consumer, store, log), lambda.WithContext(ctx))
		return nil
	}
	url := os.Getenv(tables.SpendQueueEnvVar)
	if url == "" {
		return errors.New(tables.SpendQueueEnvVar + " is not set: the queue to poll (or use -replay FILE)")
	}
	fmt.Fprintf(os.Stderr, "spend consumer polling %s into tables %s and %s\n", url, names.Spend, names.Keys)
	go limits.SweepEvery(ctx, store, limits.SweepInterval, time.Now, log) // strict-budget holds of crashed requests
	return spendsqs.Poll(ctx, sqs.NewFromConfig(awsCfg), url, consumer.HandleSQS,
		spendsqs.PollOptions{MaxBatch: *batch, Window: *window, Logger: log})
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func logLevel(s string) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return slog.LevelInfo
	}
	return l
}
