package gatewayapp

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/app/appenv"
)

// syncWriter hands each write to a channel: the banner, once.
type syncWriter chan string

func (w syncWriter) Write(p []byte) (int, error) { w <- string(p); return len(p), nil }

// TestServeLocal: local mode prints where it listens and how to call it
// (the master key's presence, never its value), serves the gateway and the
// admin API and the console (/ui) on that port, and returns cleanly when its context ends.
func TestServeLocal(t *testing.T) {
	for _, c := range []struct {
		masterKey string
		hint      string
		keyList   int // GET /key/list without a key
	}{
		{"", "answers 401 until a master key is set", 401},
		{"sk-local-master", "Authorization: Bearer <your master key or a virtual key>", 401},
	} {
		l := startLocal(t, map[string]string{"GATEWAY_MASTER_KEY": c.masterKey})
		banner := l.banner
		base := regexp.MustCompile(`Gateway listening on (http://\S+)`).FindStringSubmatch(banner)
		if base == nil || !strings.Contains(banner, c.hint) || (c.masterKey != "" && strings.Contains(banner, c.masterKey)) ||
			!strings.Contains(banner, "store: memory") {
			t.Fatalf("banner:\n%s", banner)
		}
		if !strings.Contains(banner, "Admin console: "+base[1]+"/ui\n") {
			t.Errorf("banner does not show the console:\n%s", banner)
		}
		for path, want := range map[string]int{"/v1/models": 200, "/key/list": c.keyList, "/ui/": 200, "/ui/app.js": 200} {
			req, _ := http.NewRequest(http.MethodGet, base[1]+path, nil)
			if c.masterKey != "" && path == "/v1/models" {
				req.Header.Set("Authorization", "Bearer "+c.masterKey)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
			}
		}
		if err := l.stop(t); err != nil {
			t.Errorf("serveLocal after its context ended: %v", err)
		}
	}
}

// local is a local-mode gateway served by serveLocal.
type local struct {
	gw     *app.Gateway
	banner string             // what it printed first
	cancel context.CancelFunc // SIGTERM
	done   chan error         // serveLocal's result
}

// startLocal builds a gateway from env and the flags after the program
// name (on 127.0.0.1:0 unless they say otherwise) and serves it locally.
func startLocal(t *testing.T, env map[string]string, flags ...string) *local {
	t.Helper()
	e, err := appenv.Read(appenv.Gateway, func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		append([]string{"gateway", "-addr", "127.0.0.1:0"}, flags...))
	if err != nil {
		t.Fatal(err)
	}
	s, err := app.FromEnv(context.Background(), e, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	l := &local{done: make(chan error, 1)}
	if l.gw, err = app.Build(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	out := make(syncWriter, 1)
	go func() { l.done <- serveLocal(ctx, l.gw, e, out) }()
	select {
	case l.banner = <-out:
	case err := <-l.done:
		cancel()
		t.Fatalf("serveLocal: %v", err)
	}
	return l
}

// stop ends serveLocal's context (SIGTERM) and returns its result; the
// test fails if serveLocal does not return.
func (l *local) stop(t *testing.T) error {
	t.Helper()
	l.cancel()
	select {
	case err := <-l.done:
		return err
	case <-time.After(15 * time.Second):
		t.Fatal("serveLocal did not return")
		return nil
	}
}
