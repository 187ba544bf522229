// Command admin is the admin API function: LiteLLM's management routes
// (keys, teams, users, end users, spend, model info), served through a
// buffered function URL (aws-lambda-go-api-proxy's httpadapter), or as a
// local server outside Lambda. It builds its stores through shared/app, so
// it reads and writes the very tables the gateway uses. It only wires.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/app/appenv"
	"github.com/sluice-gw/sluice/shared/console"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "admin:", err)
		os.Exit(1)
	}
}

func run() error {
	e, err := appenv.Read(appenv.Admin, os.LookupEnv, os.Args)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: e.LogLevel}))
	slog.SetDefault(log)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := app.FromEnv(ctx, e, log)
	if err != nil {
		return err
	}
	gw, err := app.Build(ctx, s)
	if err != nil {
		return err
	}
	if gw.Config.General.MasterKey == "" {
		log.Warn("admin: no master key configured: every management route answers 401 (set GATEWAY_MASTER_KEY)")
	}
	h := console.Wrap(gw.Admin) // the admin console at /ui (docs/console.md)
	if e.Lambda {
		lambda.Start(httpadapter.NewV2(h).ProxyWithContext)
		return nil
	}
	fmt.Fprintf(os.Stderr, "admin API listening on http://%s (store: %s), console at /ui\n", e.Addr, e.Store)
	srv := &http.Server{Addr: e.Addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
