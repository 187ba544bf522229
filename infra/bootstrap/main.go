// Command bootstrap creates Sluice's DynamoDB tables, from the one
// definition in infra/tables, on whatever the AWS SDK's own configuration
// points at: AWS_ENDPOINT_URL / AWS_ENDPOINT_URL_DYNAMODB (DynamoDB Local,
// LocalStack) or, without them, the account of the current credentials.
//
//	go run ./infra/bootstrap
//
// Table names come from KEYS_TABLE, COUNTERS_TABLE and SPEND_TABLE (defaults
// sluice-keys, sluice-counters, sluice-spend), the variables the Lambda
// functions read. Existing tables are kept, so it is safe to run again.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/sluice-gw/sluice/infra/tables"
	"github.com/sluice-gw/sluice/shared/ddb"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := run(ctx, os.Getenv, os.Stdout); err != nil {
		slog.Error("bootstrap failed", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, getenv func(string) string, out io.Writer) error {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("load aws config: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1" // emulators accept any region
	}
	// An endpoint override means an emulator, whose responses may not carry
	// a valid CRC32 checksum.
	emulator := getenv("AWS_ENDPOINT_URL") != "" || getenv("AWS_ENDPOINT_URL_DYNAMODB") != ""
	client := ddb.NewClient(cfg, ddb.ClientOptions{Emulator: emulator})
	names := tables.NamesFromEnv(getenv)
	if err := tables.Create(ctx, client, names); err != nil {
		return err
	}
	for _, t := range tables.All() {
		fmt.Fprintf(out, "%s=%s\n", t.EnvVar, names.Of(t))
	}
	return nil
}
