// Package lambda_test runs Sluice's functions as Lambda runs them: the real
// bootstrap binaries under the AWS Lambda Runtime Interface Emulator, the
// streaming adapter against a test double of the Lambda Runtime API, and
// template.yaml against the code and infra/tables.
package lambda_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/build"
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

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		runChild() // serves Lambda invocations until killed
		return
	}
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
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

var (
	buildMu    sync.Mutex
	buildCache = map[string]string{}
	buildDir   string
)

// bootstrap builds ./functions/<name> for the host as Lambda's bootstrap
// (with -tags lambda.norpc, as the Makefile does) once per test run and
// returns its path.
func bootstrap(t *testing.T, name string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if p, ok := buildCache[name]; ok {
		return p
	}
	if buildDir == "" {
		d, err := os.MkdirTemp("", "sluice-bootstraps-")
		if err != nil {
			t.Fatal(err)
		}
		buildDir = d
	}
	out := filepath.Join(buildDir, name, "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", out, "./functions/"+name)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build functions/%s: %v\n%s", name, err, b)
	}
	buildCache[name] = out
	return out
}

// rieBinary finds aws-lambda-rie on PATH or in GOPATH/bin, where
// `go install` (and test/run.sh) puts it.
func rieBinary(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("aws-lambda-rie"); err == nil {
		return p
	}
	p := filepath.Join(build.Default.GOPATH, "bin", "aws-lambda-rie")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	const msg = "aws-lambda-rie not found on PATH or in GOPATH/bin: install it with\n" +
		"  go install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@v0.0.0-20261030222936-bef5c4ba774d\n" +
		"(test/run.sh does this)"
	if testing.Short() {
		t.Skip(msg)
	}
	t.Fatal(msg)
	return ""
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

// streamedResponse is a function URL streaming response as the Runtime API
// receives it: a JSON prelude, eight NUL bytes, then the body.
type streamedResponse struct {
	StatusCode int               `json:"statusCode"`
	Headers    map[string]string `json:"headers"`
	Cookies    []string          `json:"cookies"`
	Body       []byte            `json:"-"`
}

var preludeSep = make([]byte, 8)

func parseStreamed(raw []byte) (*streamedResponse, error) {
	i := bytes.Index(raw, preludeSep)
	if i < 0 {
		return nil, fmt.Errorf("no 8-NUL prelude separator in %q", truncate(raw))
	}
	var r streamedResponse
	dec := json.NewDecoder(bytes.NewReader(raw[:i]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("prelude %q: %w", raw[:i], err)
	}
	if r.StatusCode == 0 {
		return nil, errors.New("prelude without statusCode")
	}
	r.Body = raw[i+len(preludeSep):]
	return &r, nil
}

// header returns a prelude header, whatever its case.
func (r *streamedResponse) header(name string) string {
	for k, v := range r.Headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

func truncate(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "..."
	}
	return string(b)
}

// sseData returns the data fields of the events in an SSE body, in order.
func sseData(body []byte) []string {
	var out []string
	for _, ev := range strings.Split(string(body), "\n\n") {
		for _, line := range strings.Split(ev, "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				out = append(out, d)
			}
		}
	}
	return out
}
