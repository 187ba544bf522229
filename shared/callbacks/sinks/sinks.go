// Package sinks is the registry of every logging callback built here. Only
// the spend consumer (shared/app/spendapp) and local mode import it: the
// gateway's Lambda bootstrap links no sink (test/repo checks it).
package sinks

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sluice-gw/sluice/shared/callbacks"
	"github.com/sluice-gw/sluice/shared/callbacks/langfuse"
	"github.com/sluice-gw/sluice/shared/callbacks/otel"
	"github.com/sluice-gw/sluice/shared/callbacks/s3log"
	"github.com/sluice-gw/sluice/shared/callbacks/webhook"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/spend"
)

// All returns the registry of every sink, by LiteLLM callback name. A new
// sink adds its line here and its name to config.CallbackNames.
func All() callbacks.Registry {
	return callbacks.Registry{
		"langfuse":    langfuse.New,
		"s3":          s3log.New,
		"s3_v2":       s3log.New,
		"generic_api": webhook.New,
		"webhook":     webhook.New,
		"otel":        otel.New,
	}
}

// Func returns the app.SinksFunc shape (shared/app cannot import this
// package: the gateway's Lambda bootstrap links shared/app): it builds a
// Dispatcher of All on cb, reading the environment through getenv and the
// callbacks of teams and keys from ks. With no callback configured it
// still delivers the callbacks of teams and keys.
func Func(getenv func(string) (string, bool)) func(ctx context.Context, cb config.Callbacks, ks keys.Reader, open func(string) (string, error), cfg *aws.Config, log *slog.Logger) (spend.Deliverer, error) {
	return func(ctx context.Context, cb config.Callbacks, ks keys.Reader, open func(string) (string, error), cfg *aws.Config, log *slog.Logger) (spend.Deliverer, error) {
		return New(ctx, cb, getenv, ks, open, cfg, log)
	}
}

// New builds the Dispatcher of All on cb (see Func); open opens the
// credentials of teams' and keys' callbacks, sealed at rest
// (callbacks.Options.Open).
func New(ctx context.Context, cb config.Callbacks, getenv func(string) (string, bool), ks keys.Reader, open func(string) (string, error), cfg *aws.Config, log *slog.Logger) (*callbacks.Dispatcher, error) {
	o := callbacks.Options{
		Callbacks: cb,
		Registry:  All(),
		Env:       callbacks.Env{Getenv: getenv, AWS: cfg, HTTP: &http.Client{Timeout: 10 * time.Second}, Log: log},
		Open:      open,
	}
	if ks != nil {
		o.Scopes = callbacks.NewKeyScopes(ks, time.Minute)
	}
	return callbacks.New(ctx, o)
}
