// Command admin is the admin API function: LiteLLM's management routes behind
// the master key, served through a buffered function URL (aws-lambda-go-api-proxy's
// httpadapter), or as a local server outside Lambda. It only wires.
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
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/sluice-gw/sluice/shared/adminapi"
	"github.com/sluice-gw/sluice/shared/ssmparam"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:4001", "listen address outside Lambda")
	flag.Parse()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	slog.SetDefault(log)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	key, err := masterKey(ctx)
	cancel()
	if err != nil {
		log.Error("admin: master key", "error", err)
		os.Exit(1)
	}
	if key == "" {
		log.Warn("admin: no master key configured: every management route answers 401")
	}
	h := adminapi.New(adminapi.Options{MasterKey: key})

	if os.Getenv("AWS_LAMBDA_RUNTIME_API") != "" {
		lambda.Start(httpadapter.NewV2(h).ProxyWithContext)
		return
	}
	fmt.Fprintf(os.Stderr, "admin API listening on http://%s\n", *addr)
	srv := &http.Server{Addr: *addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("admin: serve", "error", err)
		os.Exit(1)
	}
}

// masterKey reads the master key from the SSM SecureString parameter named by
// GATEWAY_MASTER_KEY_PARAMETER (as deployed), else from GATEWAY_MASTER_KEY
// (local runs and tests).
func masterKey(ctx context.Context) (string, error) {
	name := os.Getenv("GATEWAY_MASTER_KEY_PARAMETER")
	if name == "" {
		return os.Getenv("GATEWAY_MASTER_KEY"), nil
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return "", fmt.Errorf("load AWS config: %w", err)
	}
	return ssmparam.Get(ctx, ssm.NewFromConfig(cfg), name)
}
