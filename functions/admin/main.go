// Command admin is the admin API function: LiteLLM's management routes
// (keys, teams, users, end users, spend, model info), served through a
// buffered function URL (aws-lambda-go-api-proxy's httpadapter), or as a
// local server outside Lambda. It builds its stores through shared/app, so
// it reads and writes the very tables the gateway uses. It only wires.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/sluice-gw/sluice/infra/tables"
	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/sysroots"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "admin:", err)
		os.Exit(1)
	}
}

func run() error {
	inLambda := os.Getenv("AWS_LAMBDA_RUNTIME_API") != ""
	defStore := app.StoreMemory
	if inLambda {
		defStore = app.StoreDynamoDB
		sysroots.FromBundle() // before the first TLS handshake: the CA bundle, not the bundle and its copies
	}
	addr := flag.String("addr", "127.0.0.1:4001", "listen address outside Lambda")
	cfgPath := flag.String("config", os.Getenv("GATEWAY_CONFIG"), "LiteLLM config file (env GATEWAY_CONFIG), for /model/info")
	store := flag.String("store", envOr("GATEWAY_STORE", defStore), "state store: memory or dynamodb (env GATEWAY_STORE)")
	flag.Parse()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	slog.SetDefault(log)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	settings := app.Settings{
		ConfigPath: *cfgPath, Store: *store, Getenv: os.LookupEnv, Logger: log,
		Tables:    tableNames(),
		MasterKey: firstEnv("GATEWAY_MASTER_KEY", "LITELLM_MASTER_KEY"),
	}
	if err := settings.ResolveAWS(ctx, os.Getenv); err != nil {
		return err
	}
	gw, err := app.Build(ctx, settings)
	if err != nil {
		return err
	}
	if gw.Config.General.MasterKey == "" {
		log.Warn("admin: no master key configured: every management route answers 401 (set GATEWAY_MASTER_KEY)")
	}
	if inLambda {
		lambda.Start(httpadapter.NewV2(gw.Admin).ProxyWithContext)
		return nil
	}
	fmt.Fprintf(os.Stderr, "admin API listening on http://%s (store: %s)\n", *addr, *store)
	srv := &http.Server{Addr: *addr, Handler: gw.Admin, ReadHeaderTimeout: 10 * time.Second}
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// tableNames reads the tables the admin function uses (keys, and spend for
// the reports); the counters table is the gateway's alone.
func tableNames() tables.Names {
	n := tables.DefaultNames()
	if v := os.Getenv("KEYS_TABLE"); v != "" {
		n.Keys = v
	}
	if v := os.Getenv("SPEND_TABLE"); v != "" {
		n.Spend = v
	}
	return n
}
