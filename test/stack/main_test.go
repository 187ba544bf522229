// Package stack_test is the whole-stack test: template.yaml deployed as a
// user following localstack/README.md deploys it, then the user's story
// played against it.
//
// LocalStack cannot run here (it needs Docker, and its current images an
// account), but moto, the AWS emulator LocalStack is built on, can. The test
//
//  1. runs localstack/README.md's commands, in its order, against moto
//     (readme_test.go): the init script's SSM parameter, `samlocal build`
//     as the Makefile's build-<LogicalId> targets, `samlocal deploy` as
//     cfn-lint, the package upload to S3, aws-sam-translator's transform and
//     CreateStack on moto's CloudFormation, then the stack's outputs;
//  2. checks that what came up is what template.yaml declares: tables with
//     their keys and TTL, the queue with its redrive policy, the functions
//     with their code, settings and environment, the SQS event source
//     mapping (checks_test.go, checks_functions_test.go);
//  3. runs each function's real bootstrap, taken from the package moto
//     holds, under aws-lambda-rie with exactly the environment the stack
//     gave it plus what Lambda itself sets, and AWS_ENDPOINT_URL pointing at
//     moto (rie_test.go);
//  4. plays Lambda's SQS poller for the event source mapping
//     (poller_test.go);
//  5. follows the user's story: a team and a key from the admin API, chat
//     and a stream through the gateway with that key, the spend through the
//     queue to the key, the admin API reporting it, a poison message in the
//     dead-letter queue (story_test.go, story_spend_test.go).
//
// Where moto falls short, the test says so and checks on the template
// instead: moto has no SAM transform (aws-sam-translator runs here, as
// CloudFormation would run it), no AWS::Lambda::Url and no
// AWS::CloudWatch::Alarm (the function URLs, the alarms, the dashboard that
// shows the alarms and the outputs that read them are taken out of the
// stack; the monitoring_*_test.go files check the alarms, the dashboard and
// the gateway URL's CORS settings on the transformed template); its CloudFormation
// drops a function's Architectures and a table's TimeToLiveSpecification; it
// cannot run functions (aws-lambda-rie does), and would try to for the event
// source mapping, which the test disables once checked. The poller makes a
// failed message visible again at once instead of after the queue's 180 s
// visibility timeout.
//
// It needs moto's server, cfn-lint and aws-sam-translator (Python:
// pip install 'moto[server]' aws-sam-translator cfn-lint), aws-lambda-rie and
// make. Without them it fails, saying how to install them (it skips under
// -short). It uses the moto server MOTO_ENDPOINT names, or the one
// test/run.sh starts (SQS_ENDPOINT), or starts its own on a free loopback
// port; it stops everything it starts.
package stack_test

import (
	"bytes"
	"fmt"
	"go/build"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// guard bounds waits that only a broken system makes long. It is a deadlock
// guard, never a timing assertion.
const guard = 60 * time.Second

// pipInstall is how to install the Python tools the test needs.
const pipInstall = "pip install 'moto[server]' aws-sam-translator cfn-lint"

// rieInstall is how to install the Runtime Interface Emulator (test/run.sh
// does it).
const rieInstall = "go install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@v0.0.0-20261030222936-bef5c4ba774d"

func TestMain(m *testing.M) {
	code := m.Run()
	stopMoto()
	os.Exit(code)
}

// repoRoot is the module root (two levels up from this package).
func repoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test source")
	}
	root := filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repo root %s: %v", root, err)
	}
	return root
}

// tools are the programs the test runs.
type tools struct {
	moto    string // moto_server; "" when MOTO_ENDPOINT names a running one
	cfnLint string
	python  string // with samtranslator importable
	rie     string
	make    string
}

var (
	toolsOnce sync.Once
	toolsRes  tools
	toolsErr  string
)

// requireTools finds every tool the test needs. A missing one fails the test
// with how to install it, or skips it under -short.
func requireTools(t *testing.T) tools {
	t.Helper()
	toolsOnce.Do(func() { toolsRes, toolsErr = findTools() })
	if toolsErr != "" {
		if testing.Short() {
			t.Skip(toolsErr)
		}
		t.Fatal(toolsErr)
	}
	return toolsRes
}

func findTools() (tools, string) {
	var tl tools
	var missing []string
	var python []string
	if p, err := exec.LookPath("moto_server"); err == nil {
		tl.moto = p
	} else if os.Getenv(motoEndpointEnv) == "" && !isMoto(os.Getenv(sqsEndpointEnv)) {
		missing = append(missing, "moto_server (moto's server)")
		python = append(python, "'moto[server]'")
	}
	if p, err := exec.LookPath("cfn-lint"); err == nil {
		tl.cfnLint = p
	} else {
		missing = append(missing, "cfn-lint")
		python = append(python, "cfn-lint")
	}
	if p, err := exec.LookPath("python3"); err == nil {
		tl.python = p
		if out, err := exec.Command(p, "-c", "import samtranslator").CombinedOutput(); err != nil {
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			missing = append(missing, fmt.Sprintf("aws-sam-translator for %s (%s)", p, lines[len(lines)-1]))
			python = append(python, "aws-sam-translator")
		}
	} else {
		missing = append(missing, "python3")
	}
	if p, err := exec.LookPath("aws-lambda-rie"); err == nil {
		tl.rie = p
	} else if p := filepath.Join(build.Default.GOPATH, "bin", "aws-lambda-rie"); fileExists(p) {
		tl.rie = p
	} else {
		missing = append(missing, "aws-lambda-rie (install it with: "+rieInstall+"; test/run.sh does this)")
	}
	if p, err := exec.LookPath("make"); err == nil {
		tl.make = p
	} else {
		missing = append(missing, "make")
	}
	if len(missing) == 0 {
		return tl, ""
	}
	msg := "the whole-stack test needs " + strings.Join(missing, ", ")
	if len(python) > 0 {
		msg += "\ninstall the Python tools with:\n  " + pipInstall +
			"\n(moto's server, with CloudFormation, DynamoDB, SQS, SSM, IAM, S3 and Lambda's control plane; the SAM transform; the template linter)"
	}
	if os.Getenv(motoEndpointEnv) == "" {
		msg += "\nor point " + motoEndpointEnv + " at a running moto server"
	}
	return tl, msg
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// freeAddr returns a loopback address nothing listens on right now.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// syncBuffer is a bytes.Buffer safe for a process's output goroutines and
// the test reading it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func truncate(b []byte) string {
	if len(b) > 800 {
		return string(b[:800]) + "..."
	}
	return string(b)
}

// hostEnv is the environment the test gives the tools it runs (make and go,
// python, cfn-lint): its own, without AWS settings that could point them at
// a real account.
func hostEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "AWS_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}
