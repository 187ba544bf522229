// Package spendapp assembles the spend function: the spend queue consumer
// on the spend and keys tables, from the settings appenv read. It links
// nothing of the gateway (shared/app does), so the consumer's bootstrap
// stays small.
package spendapp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sluice-gw/sluice/shared/app/appenv"
	"github.com/sluice-gw/sluice/shared/awsconf"
	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys/ddbkeys"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/ddbspend"
	"github.com/sluice-gw/sluice/shared/spend/spendsqs"
	"github.com/sluice-gw/sluice/shared/sysroots"
)

// App is an assembled spend consumer.
type App struct {
	Store    *ddbspend.Store // the spend, keys and counters tables
	Consumer *spend.Consumer // records the events of a batch into Store
	aws      aws.Config
	settings appenv.Settings
	log      *slog.Logger
}

// Build assembles the consumer e describes (the tables in DynamoDB, the
// AWS configuration from awsconf). In Lambda, the CA bundle is set up
// first (sysroots), before the first TLS handshake.
func Build(ctx context.Context, e appenv.Settings, log *slog.Logger) (*App, error) {
	if e.Lambda {
		sysroots.FromBundle() // the CA bundle, not the bundle and its copies
	}
	cfg, err := awsconf.LoadForClients(ctx) // the environment only, in a Lambda build
	if err != nil {
		return nil, err
	}
	client := ddb.NewClient(cfg, ddb.ClientOptions{Emulator: awsconf.HasEndpoint(ctx, cfg, "DynamoDB")})
	names := e.Tables
	store := ddbspend.New(client, names.Spend, names.Keys, ddbkeys.New(client, names.Keys, ddbkeys.Options{}),
		ddbspend.Options{Logger: log, CountersTable: names.Counters})
	return &App{Store: store, Consumer: spend.NewConsumer(store, log), aws: cfg, settings: e, log: log}, nil
}

// Replay records the events of the file e.Replay names ("-": stdin): the
// log lines "spend event not recorded" of the gateway, or one event a
// line; it reports how many on stderr.
func (a *App) Replay(ctx context.Context) error {
	var in io.Reader = os.Stdin
	if a.settings.Replay != "-" {
		f, err := os.Open(a.settings.Replay)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	recorded, dups, err := a.Consumer.Replay(ctx, in)
	fmt.Fprintf(os.Stderr, "replay: %d events recorded, %d recorded before\n", recorded, dups)
	return err
}

// Poll long-polls the spend queue (outside Lambda) and records what it
// receives, deleting what it recorded, as the SQS trigger does in Lambda,
// until ctx ends (SIGTERM); then it finishes the batch in hand for up to
// e.Shutdown.Drain and returns to the queue what it could not record
// (spendsqs.Poll).
func (a *App) Poll(ctx context.Context) error {
	e := a.settings
	fmt.Fprintf(os.Stderr, "spend consumer polling %s into tables %s and %s\n", e.SpendQueueURL, e.Tables.Spend, e.Tables.Keys)
	return spendsqs.Poll(ctx, sqs.NewFromConfig(a.aws), e.SpendQueueURL, a.Consumer.HandleSQS,
		spendsqs.PollOptions{MaxBatch: e.Batch, Window: e.Window, Drain: e.Shutdown.Drain, Logger: a.log})
}
