package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/test/ddblocal"
)

func TestMain(m *testing.M) { os.Exit(ddblocal.Main(m)) }

func TestRunIsIdempotent(t *testing.T) {
	ddblocal.Config(t) // fails with instructions, or skips in -short, without an emulator
	t.Setenv("AWS_ACCESS_KEY_ID", "dummy")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "dummy")
	t.Setenv("AWS_REGION", ddblocal.Region)
	suffix := "-" + strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "")
	env := map[string]string{
		"KEYS_TABLE":                "boot-keys" + suffix,
		"COUNTERS_TABLE":            "boot-counters" + suffix,
		"AWS_ENDPOINT_URL_DYNAMODB": os.Getenv(ddblocal.EndpointEnv),
	}
	getenv := func(k string) string { return env[k] }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 2 {
		var out strings.Builder
		if err := run(ctx, getenv, &out); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		want := "KEYS_TABLE=boot-keys" + suffix + "\nCOUNTERS_TABLE=boot-counters" + suffix + "\nSPEND_TABLE=sluice-spend\n"
		if out.String() != want {
			t.Errorf("run %d printed %q, want %q", i+1, out.String(), want)
		}
	}
}
