package repo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/sluice-gw/sluice"

// notInLambda are packages the Lambda bootstraps must not link: the SDK's
// config package and what only it brings (shared config files, SSO, the
// sign-in service, IMDS, credential processes). Their package inits alone
// cost a cold start ~3 ms of CPU; shared/awsconf reads the environment
// instead in a Lambda build.
var notInLambda = []string{
	"github.com/aws/aws-sdk-go-v2/config",
	"github.com/aws/aws-sdk-go-v2/config/internal/ini",
	"github.com/aws/aws-sdk-go-v2/credentials/ssocreds",
	"github.com/aws/aws-sdk-go-v2/credentials/processcreds",
	"github.com/aws/aws-sdk-go-v2/credentials/logincreds",
	"github.com/aws/aws-sdk-go-v2/credentials/ec2rolecreds",
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds",
	"github.com/aws/aws-sdk-go-v2/service/sso",
	"github.com/aws/aws-sdk-go-v2/service/ssooidc",
	"github.com/aws/aws-sdk-go-v2/service/signin",
	// Vertex AI's tokens come from golang.org/x/oauth2/jwt (no package
	// init); x/oauth2/google would bring Google's metadata client, built
	// at package init, and application-default-credential file lookups.
	"golang.org/x/oauth2/google",
	"cloud.google.com/go/compute/metadata",
}

// notInGatewayLambda are packages the gateway's Lambda bootstrap must not
// link though the admin function does: the admin console (its embedded
// files and handler; the gateway function serves no console, and its
// cold start and binary pay nothing for it). Local mode links it
// (shared/app/gatewayapp's console.go, built without lambda.norpc).
var notInGatewayLambda = []string{
	module + "/shared/console",
}

// sinksOnlyInSpend are the logging callbacks' packages: the spend function
// delivers them (and local mode, built without lambda.norpc); the
// gateway's Lambda bootstrap must not link any of them, so that its cold
// start and request path pay nothing for a sink.
var sinksOnlyInSpend = []string{
	module + "/shared/callbacks",
	module + "/shared/callbacks/sinks",
	module + "/shared/callbacks/otel",
	"go.opentelemetry.io/otel/sdk/trace",
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace",
}

// notInSpendLambda are packages the spend function has no use for: gRPC
// came in through otlptracehttp's configuration (the otel sink exports
// OTLP over HTTP; shared/callbacks/otel/client.go), a third of the binary.
var notInSpendLambda = []string{
	"google.golang.org/grpc",
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp",
}

// TestLambdaBuildsLeaveOutSDKConfig fails when a function built as the
// Makefile builds it for Lambda (-tags lambda.norpc, linux/arm64, no cgo)
// links a package of notInLambda again. The same list without the tag must
// hold the config package, or the check would see nothing.
func TestLambdaBuildsLeaveOutSDKConfig(t *testing.T) {
	root := moduleRoot(t)
	for _, f := range []string{"go.mod", "go.sum"} {
		if _, err := os.ReadFile(filepath.Join(root, f)); err != nil {
			t.Fatal(err)
		}
	}
	deps := func(tags ...string) map[string]map[string]bool {
		out := map[string]map[string]bool{}
		for _, fn := range []string{"gateway", "admin", "spend"} {
			args := append([]string{"list", "-deps", "-f", "{{.ImportPath}} {{.Dir}}"}, tags...)
			cmd := exec.Command("go", append(args, "./functions/"+fn)...)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0", "GOFLAGS=")
			b, err := cmd.Output()
			if err != nil {
				var stderr string
				if ee, ok := err.(*exec.ExitError); ok {
					stderr = string(ee.Stderr)
				}
				t.Fatalf("go list -deps %s ./functions/%s: %v\n%s", strings.Join(tags, " "), fn, err, stderr)
			}
			out[fn] = map[string]bool{}
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				pkg, dir, _ := strings.Cut(line, " ")
				out[fn][pkg] = true
				if strings.HasPrefix(pkg, module) {
					readSources(t, dir)
				}
			}
		}
		return out
	}
	lambda := deps("-tags", "lambda.norpc")
	for fn, pkgs := range lambda {
		for _, p := range notInLambda {
			if pkgs[p] {
				t.Errorf("functions/%s built for Lambda links %s (go list -deps -tags lambda.norpc ./functions/%s; build AWS configs with shared/awsconf)", fn, p, fn)
			}
		}
	}
	for fn, pkgs := range deps() {
		if !pkgs[notInLambda[0]] {
			t.Errorf("functions/%s without -tags lambda.norpc does not link %s: this test no longer sees what it checks", fn, notInLambda[0])
		}
	}
	for _, p := range sinksOnlyInSpend {
		if lambda["gateway"][p] {
			t.Errorf("functions/gateway built for Lambda links %s (sinks belong to the spend function and local mode)", p)
		}
		if !lambda["spend"][p] {
			t.Errorf("functions/spend built for Lambda does not link %s: callbacks are not delivered, or this test no longer sees what it checks", p)
		}
	}
	for _, p := range notInSpendLambda {
		if lambda["spend"][p] {
			t.Errorf("functions/spend built for Lambda links %s", p)
		}
	}
	for p := range lambda["gateway"] {
		if strings.HasPrefix(p, module+"/shared/callbacks/") || strings.HasPrefix(p, "go.opentelemetry.io/") {
			t.Errorf("functions/gateway built for Lambda links the sink %s", p)
		}
	}
	for _, p := range notInGatewayLambda {
		if lambda["gateway"][p] {
			t.Errorf("functions/gateway built for Lambda links %s (it belongs to the admin function and local mode only)", p)
		}
		if !lambda["admin"][p] {
			t.Errorf("functions/admin built for Lambda does not link %s: the deployed console is gone, or this test no longer sees what it checks", p)
		}
	}
}

// readSources reads the Go files of a package directory, so that go test's
// cache, which sees only what this process reads, runs the test again when
// one of them changes (go list, which reads them here, is another process).
func readSources(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".go") {
			if _, err := os.ReadFile(filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
}
