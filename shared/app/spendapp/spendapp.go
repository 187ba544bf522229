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
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sluice-gw/sluice/shared/alerts"
	"github.com/sluice-gw/sluice/shared/alerts/ddbalerts"
	"github.com/sluice-gw/sluice/shared/app/appenv"
	"github.com/sluice-gw/sluice/shared/awsconf"
	"github.com/sluice-gw/sluice/shared/callbacks"
	"github.com/sluice-gw/sluice/shared/callbacks/sinks"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/keys/ddbkeys"
	"github.com/sluice-gw/sluice/shared/models"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/ddbspend"
	"github.com/sluice-gw/sluice/shared/spend/spendsqs"
	"github.com/sluice-gw/sluice/shared/ssmparam"
	"github.com/sluice-gw/sluice/shared/sysroots"
)

// App is an assembled spend consumer.
type App struct {
	Store    *ddbspend.Store       // the spend, keys and counters tables
	Consumer *spend.Consumer       // records the events of a batch into Store
	Sinks    *callbacks.Dispatcher // the logging callbacks, called by Consumer after recording
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
	ks := ddbkeys.New(client, names.Keys, ddbkeys.Options{})
	store := ddbspend.New(client, names.Spend, names.Keys, ks, ddbspend.Options{Logger: log, CountersTable: names.Counters})
	consumer := spend.NewConsumer(store, log)
	d, err := buildSinks(ctx, e, ks, &cfg, log)
	if err != nil {
		return nil, err
	}
	consumer.Sinks = d
	a, err := budgetAlerts(e, client, log)
	if err != nil {
		return nil, err
	}
	if a != nil {
		consumer.Alerts = a
	}
	return &App{Store: store, Consumer: consumer, Sinks: d, aws: cfg, settings: e, log: log}, nil
}

// buildSinks builds the logging callbacks of the config's litellm_settings
// (read alone: the consumer does not load the model list) and of teams and
// keys (ks).
func buildSinks(ctx context.Context, e appenv.Settings, ks keys.Reader, cfg *aws.Config, log *slog.Logger) (*callbacks.Dispatcher, error) {
	cb, warnings, err := config.LoadCallbacksFile(e.ConfigPath, e.Getenv)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		log.LogAttrs(ctx, slog.LevelWarn, "config", slog.String("path", w.Path), slog.Int("line", w.Line), slog.String("warning", w.Message))
	}
	return sinks.New(ctx, cb, e.Getenv, ks, sealKey(e, cfg), cfg, log)
}

// sealKey opens the credentials of teams' and keys' callbacks (sealed at
// rest by the admin API) with the salt key, else the master key, each from
// its SSM parameter when one is named (read on the first credential
// opened, not at start), else from the environment; with neither, the
// master key the config names, as the gateway reads it.
func sealKey(e appenv.Settings, cfg *aws.Config) func(string) (string, error) {
	return models.Opener(func() (string, error) {
		param, key := e.SaltKeyParameter, e.SaltKey
		if param == "" && key == "" {
			param, key = e.MasterKeyParameter, e.MasterKey
		}
		if param == "" && key == "" && e.ConfigPath != "" {
			data, err := os.ReadFile(e.ConfigPath)
			if err != nil {
				return "", fmt.Errorf("config: %w", err)
			}
			key = config.MasterKeyOf(data, e.Getenv)
		}
		if param == "" {
			return key, nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return ssmparam.Get(ctx, ssmparam.NewClient(*cfg), param)
	})
}

// budgetAlerts returns the budget alerts the config's general_settings
// alerting turns on (nil: none): records read and alerts claimed on the
// keys and spend tables.
func budgetAlerts(e appenv.Settings, client *dynamodb.Client, log *slog.Logger) (*alerts.Alerter, error) {
	if e.ConfigPath == "" {
		return nil, nil
	}
	data, err := os.ReadFile(e.ConfigPath)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	al, err := config.AlertingOf(data, e.Getenv)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", e.ConfigPath, err)
	}
	dests, problems := alerts.DestinationsOf(al, e.Getenv)
	for _, p := range problems {
		log.Warn("config", slog.String("path", "general_settings.alerting"), slog.String("warning", p))
	}
	if len(dests) == 0 {
		return nil, nil
	}
	names := e.Tables
	return alerts.New(ddbkeys.New(client, names.Keys, ddbkeys.Options{}), ddbalerts.New(client, names.Spend, 0),
		alerts.Options{Destinations: dests, TTL: al.BudgetAlertTTL, Logger: log}), nil
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
