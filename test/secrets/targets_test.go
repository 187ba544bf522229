package secrets

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/sluice-gw/sluice/shared/adminapi"
	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/lambdahttp"
	smsecrets "github.com/sluice-gw/sluice/shared/secrets"
	"github.com/sluice-gw/sluice/test/ddblocal"
	"github.com/sluice-gw/sluice/test/sqslocal"
)

// target is one way of serving a gateway.
type target struct {
	name string
	do   func(method, path, key, body string) response
	http bool // local mode (admin routes and /metrics on the same port)
}

func httpTarget(t *testing.T, name, base string) target {
	client := &http.Client{}
	return target{name: name, http: true, do: func(method, path, key, body string) response {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body) // a cut stream ends in an error: what arrived counts
		return response{resp.StatusCode, resp.Header, b}
	}}
}

// syncBuffer collects log lines from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

// build assembles an in-process gateway as the functions do, logging at
// debug level into logs (also slog's default logger, as the mains set it).
// fromSecrets: the keys the config reads through os.environ/ (and the
// master key) come from Secrets Manager on moto, not the environment.
func build(t *testing.T, c canaries, u *upstreams, store string, lambda, fromSecrets bool, logs io.Writer) *app.Gateway {
	t.Helper()
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	prev := slog.Default()
	slog.SetDefault(log)
	t.Cleanup(func() { slog.SetDefault(prev) })
	env := c.env()
	s := app.Settings{
		ConfigYAML: []byte(u.config(c)), Logger: log, Lambda: lambda, Store: store,
		Getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
	}
	var err error
	if s.Metrics, err = app.MetricsFromEnv(func(string) string { return "" }, lambda, logs); err != nil {
		t.Fatal(err)
	}
	if store == app.StoreDynamoDB {
		cfg := ddblocal.Config(t)
		s.AWS, s.Emulator, s.Tables = &cfg, true, ddblocal.Tables(t)
	}
	if !lambda {
		s.Local = app.DefaultLocalLimits()
	}
	if fromSecrets {
		s.ConfigYAML, s.SecretSource = inSecretsManager(t, c, s.ConfigYAML)
		env = nil
	}
	gw, err := app.Build(context.Background(), s)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	return gw
}

// inSecretsManager puts the config's os.environ/ values in Secrets
// Manager (one JSON secret, and the Anthropic key as a hosted key of its
// own) and returns the config naming them, and the Source to read them.
func inSecretsManager(t *testing.T, c canaries, config []byte) ([]byte, smsecrets.Source) {
	t.Helper()
	sqslocal.SecretsManager(t) // the endpoint variable, for the SDK's client
	pairs := c.env()
	hostedValue := pairs["SECRETS_ANTHROPIC_KEY"]
	delete(pairs, "SECRETS_ANTHROPIC_KEY")
	j, err := json.Marshal(pairs)
	if err != nil {
		t.Fatal(err)
	}
	primary := sqslocal.NewSecret(t, "sluice/secrets-test-", string(j))
	hosted := sqslocal.NewSecret(t, "SECRETS_ANTHROPIC_KEY_", hostedValue)
	cfg := strings.ReplaceAll(string(config), "os.environ/SECRETS_ANTHROPIC_KEY", "os.environ/"+hosted)
	cfg += fmt.Sprintf("  key_management_system: aws_secret_manager\n  key_management_settings:\n    primary_secret_name: %s\n    hosted_keys: [%s]\n", primary, hosted)
	return []byte(cfg), smsecrets.NewSecretsManager(sqslocal.Config(t))
}

// serveLocal serves gw as local mode does, on a loopback port.
func serveLocal(t *testing.T, gw *app.Gateway) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := gw.Server()
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// lambdaTarget serves gw as the two functions do: the gateway through a
// streaming function URL (lambdahttp, with the after-response hook), the
// admin API through a buffered one (httpadapter).
func lambdaTarget(t *testing.T, name string, gw *app.Gateway, logs io.Writer) target {
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	gwFn := lambdahttp.Wrap(gw.API, lambdahttp.WithLogger(log), lambdahttp.WithAfterResponse(gw.AfterResponse))
	adminFn := httpadapter.NewV2(gw.Admin)
	return target{name: name, do: func(method, path, key, body string) response {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		rawPath, query, _ := strings.Cut(path, "?")
		headers := map[string]string{"content-type": "application/json", "host": "fn.lambda-url.us-east-1.on.aws"}
		if key != "" {
			headers["authorization"] = "Bearer " + key
		}
		if adminapi.Handles(rawPath) && rawPath != "/health" {
			ev := events.APIGatewayV2HTTPRequest{RawPath: rawPath, RawQueryString: query, Headers: headers, Body: body}
			ev.RequestContext.HTTP.Method, ev.RequestContext.HTTP.Path = method, rawPath
			ev.RequestContext.DomainName = headers["host"]
			resp, err := adminFn.ProxyWithContext(ctx, ev)
			if err != nil {
				t.Fatalf("admin %s %s: %v", method, path, err)
			}
			h := http.Header{}
			for k, v := range resp.Headers {
				h.Set(k, v)
			}
			for k, vs := range resp.MultiValueHeaders {
				h[http.CanonicalHeaderKey(k)] = vs
			}
			b := []byte(resp.Body)
			if resp.IsBase64Encoded {
				b, _ = base64.StdEncoding.DecodeString(resp.Body)
			}
			return response{resp.StatusCode, h, b}
		}
		ev := &events.LambdaFunctionURLRequest{RawPath: rawPath, RawQueryString: query, Headers: headers, Body: body}
		ev.RequestContext.HTTP.Method, ev.RequestContext.HTTP.Path = method, rawPath
		ev.RequestContext.DomainName = headers["host"]
		resp, err := gwFn(ctx, ev)
		if err != nil {
			t.Fatalf("gateway %s %s: %v", method, path, err)
		}
		defer resp.Close()
		b, _ := io.ReadAll(resp.Body)
		h := http.Header{}
		for k, v := range resp.Headers {
			h.Set(k, v)
		}
		return response{resp.StatusCode, h, b}
	}}
}

// runProcess runs the gateway binary as a user would (secrets in the
// environment, LOG_LEVEL=debug) and records its output.
func runProcess(t *testing.T, rec *Recorder, u *upstreams, c canaries) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "gateway")
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	if out, err := exec.Command(goBin, "build", "-o", bin, "github.com/sluice-gw/sluice/functions/gateway").CombinedOutput(); err != nil {
		t.Fatalf("build the gateway: %v\n%s", err, out)
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(u.config(c)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-config", cfgPath)
	cmd.Env = append(os.Environ(), "LOG_LEVEL=debug", "GATEWAY_MASTER_KEY="+c.master)
	for k, v := range c.env() {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out := &syncBuffer{}
	cmd.Stdout = out
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	base := make(chan string, 1)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			out.Write([]byte(line + "\n"))
			if a, ok := strings.CutPrefix(line, "Gateway listening on "); ok {
				select {
				case base <- strings.Fields(a)[0]:
				default:
				}
			}
		}
	}()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-copied
		_ = cmd.Wait()
	}
	defer stop()
	var url string
	select {
	case url = <-base:
	case <-time.After(60 * time.Second):
		t.Fatalf("the gateway did not start:\n%s", out.Bytes())
	}
	drive(t, rec, httpTarget(t, "process/local-http", url), c, u)
	stop()
	rec.Record("process/local-http: stdout and stderr", out.Bytes())
	if !bytes.Contains(out.Bytes(), []byte(`"level":"INFO"`)) {
		t.Errorf("the process logged nothing")
	}
}
