package sdk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// gatewayBin is the gateway binary built once by TestMain.
var gatewayBin string

// defaultServer runs the embedded default config (mock models, no key).
var defaultServer *server

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "sluice-sdk-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "sdk tests:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	gatewayBin = filepath.Join(dir, "gateway")
	if err := buildGateway(gatewayBin); err != nil {
		fmt.Fprintln(os.Stderr, "sdk tests:", err)
		return 1
	}
	defaultServer, err = startServer("")
	if err != nil {
		fmt.Fprintln(os.Stderr, "sdk tests:", err)
		return 1
	}
	code := m.Run()
	if err := defaultServer.stop(); err != nil {
		fmt.Fprintln(os.Stderr, "sdk tests: default server:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// buildGateway compiles ./functions/gateway, with -race when the tests run
// with it, so that a race inside the server fails the run too.
func buildGateway(out string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	args := []string{"build", "-o", out}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, "github.com/sluice-gw/sluice/functions/gateway")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, args...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build gateway: %w\n%s", err, b)
	}
	return nil
}

// server is one running gateway process.
type server struct {
	base    string // http://127.0.0.1:PORT
	cmd     *exec.Cmd
	log     *syncBuffer
	exited  chan struct{}
	waitErr error // valid once exited is closed
}

// startServer starts the gateway on a free loopback port, with the config
// file at cfgPath ("" for the embedded default), and waits until it is ready.
func startServer(cfgPath string) (*server, error) {
	var lastErr error
	// The port is found free and then handed to the child, so another process
	// may take it in between: retry on a new port.
	for range 3 {
		s, err := tryStart(cfgPath)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if !errors.Is(err, errPortTaken) {
			break
		}
	}
	return nil, lastErr
}

var errPortTaken = errors.New("port taken")

func tryStart(cfgPath string) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{"-addr", "127.0.0.1:" + port}
	if cfgPath != "" {
		args = append(args, "-config", cfgPath)
	}
	s := &server{base: "http://127.0.0.1:" + port, log: &syncBuffer{}, exited: make(chan struct{})}
	s.cmd = exec.Command(gatewayBin, args...)
	s.cmd.Env = childEnv()
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start gateway: %w", err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitReady(30 * time.Second); err != nil {
		_ = s.stop()
		if strings.Contains(s.log.String(), "address already in use") {
			return nil, fmt.Errorf("%w: %s", errPortTaken, port)
		}
		return nil, fmt.Errorf("gateway did not become ready: %w\n--- gateway output ---\n%s", err, s.log.String())
	}
	return s, nil
}

// childEnv is the test's environment without the variables that would
// change what the gateway under test listens on or loads.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "PORT", "GATEWAY_CONFIG", "GATEWAY_STORE", "AWS_LAMBDA_RUNTIME_API", "LOG_LEVEL":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LOG_LEVEL=info")
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	_, port, err := net.SplitHostPort(ln.Addr().String())
	return port, err
}

// waitReady polls GET /health/readiness until it answers 200, the process
// exits, or the bound passes.
func (s *server) waitReady(bound time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/health/readiness", nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.exited:
			return fmt.Errorf("gateway exited: %v", s.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("no ready answer within %s", bound)
		case <-tick.C:
		}
	}
}

// stop asks the gateway to shut down (SIGTERM), kills it if it does not
// within a bound, and reports an unclean exit or a data race it logged.
func (s *server) stop() error {
	select {
	case <-s.exited:
	default:
		_ = s.cmd.Process.Signal(os.Interrupt)
		select {
		case <-s.exited:
		case <-time.After(15 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
			return fmt.Errorf("gateway did not shut down within 15s of SIGINT\n%s", s.log.String())
		}
	}
	out := s.log.String()
	if strings.Contains(out, "WARNING: DATA RACE") {
		return fmt.Errorf("the gateway reported a data race:\n%s", out)
	}
	if s.waitErr != nil {
		return fmt.Errorf("gateway exited with %v\n%s", s.waitErr, out)
	}
	return nil
}

// startServerT starts a gateway on a config written to the test's temp
// directory and stops it when the test ends.
func startServerT(t *testing.T, configYAML string) *server {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(configYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := startServer(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// syncBuffer collects a child's output; the child writes while tests read.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
