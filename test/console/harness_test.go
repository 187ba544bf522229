package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/console"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

const master = "sk-console-master"

// browserPath finds Chromium: SLUICE_CHROMIUM, else one on the PATH. It
// skips t without one, or fails it when CI is set (CI must run these).
func browserPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SLUICE_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("SLUICE_CHROMIUM=%s: %v", p, err)
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const msg = "no Chromium: set SLUICE_CHROMIUM or install Debian's chromium (apt-get install -y chromium; ./test/run.sh does)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg + " (CI is set: the browser tests must run)")
	}
	t.Skip(msg)
	return ""
}

// browser starts a headless Chromium for t and returns its first tab's
// context (run bounds each step).
func browser(t *testing.T) context.Context {
	t.Helper()
	path := browserPath(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.WindowSize(1280, 860),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("lang", "en-US"),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run as root with its sandbox
	}
	var err error
	for attempt := 0; attempt < 2; attempt++ { // a loaded machine sometimes loses Chromium's first start
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
		if err = chromedp.Do(ctx); err == nil { // starts the browser (no deadline: it would end the browser)
			t.Cleanup(func() { cancelTab(); cancelAlloc() })
			return ctx
		}
		cancelTab()
		cancelAlloc()
		t.Logf("start %s: %v", path, err)
	}
	t.Fatalf("start %s: %v", path, err)
	return nil
}

// stack is a local-mode gateway with the console, on a free port.
type stack struct {
	base string
	gw   *app.Gateway
}

// start serves a local-mode gateway (the embedded default config: mock
// models) with the console, on the store named ("memory" or "dynamodb").
func start(t *testing.T, store string) *stack {
	t.Helper()
	return startConfig(t, store, config.DefaultYAML())
}

// startConfig is start with the config yaml.
func startConfig(t *testing.T, store string, yaml []byte) *stack {
	t.Helper()
	s := app.Settings{ConfigYAML: yaml, MasterKey: master, Logger: gatewaytest.Quiet(), Local: app.DefaultLocalLimits()}
	if store == app.StoreDynamoDB {
		cfg := ddblocal.Config(t)
		s.Store, s.AWS, s.Emulator, s.Tables = app.StoreDynamoDB, &cfg, true, ddblocal.Tables(t)
		s.KeyCacheTTL = time.Millisecond // a key blocked in the console is refused at once
	}
	gw, err := app.Build(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	gw.HTTP = console.Wrap(gw.HTTP) // as local mode serves it (shared/app/gatewayapp)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := gw.Server()
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = gw.Close(ctx)
	})
	return &stack{base: "http://" + ln.Addr().String(), gw: gw}
}

// call calls the stack's HTTP API as a script would and decodes the
// answer into out (when not nil); it returns the status.
func (s *stack) call(t *testing.T, method, path, key string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if out != nil && res.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
	if res.StatusCode >= 300 {
		t.Logf("%s %s: %d %s", method, path, res.StatusCode, b)
	}
	return res.StatusCode
}

// mustCall is call that fails t on a status other than 200.
func (s *stack) mustCall(t *testing.T, method, path, key string, body any, out any) {
	t.Helper()
	if code := s.call(t, method, path, key, body, out); code != http.StatusOK {
		t.Fatalf("%s %s: %d", method, path, code)
	}
}

// run runs browser actions, failing t with what step failed.
func run(t *testing.T, ctx context.Context, step string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	get(t, ctx, step, chromedp.Steps(actions...))
}

// get runs one browser action and returns its value, failing t with what
// step failed and the page's text.
func get[T any](t *testing.T, ctx context.Context, step string, a chromedp.Action[T]) T {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(sctx, a)
	if err != nil {
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		body, _ := chromedp.Run(tctx, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("%s: %v\npage text: %s", step, err, body)
	}
	return v
}

// stepTimeout bounds one browser step: generous, for a loaded machine.
const stepTimeout = 60 * time.Second

// js runs a script in the page.
func js(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool]("("+expr+", true)")(ctx, tg)
		return err
	})
}

// visible waits until sel is visible.
func visible(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(chromedp.CSS(sel))
}

// signIn opens the console, signs out whoever is signed in, and signs in
// with key; it waits for the nav.
func signIn(t *testing.T, ctx context.Context, base, key string) {
	t.Helper()
	run(t, ctx, "sign in",
		chromedp.Navigate(base+"/ui/"),
		js(`sessionStorage.clear()`),
		chromedp.Reload(),
		visible(`input[name="key"]`),
		chromedp.SendKeys(chromedp.CSS(`input[name="key"]`), key),
		chromedp.Click(chromedp.CSS(`form button[type="submit"]`)),
		visible(`nav#nav a[href="#/home"]`),
	)
}

// open navigates to the console's route hash (e.g. "#/keys?page=2") and
// waits until the page has rendered it.
func open(t *testing.T, ctx context.Context, base, hash string) {
	t.Helper()
	run(t, ctx, "open "+hash, chromedp.Navigate(base+"/ui/"+hash), visible(`#main[data-rendered="`+hash+`"]`))
}

// text is the text of the first node sel matches, once visible.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	run(t, ctx, "wait for "+sel, visible(sel))
	return strings.TrimSpace(get(t, ctx, "read "+sel, chromedp.Text(chromedp.CSS(sel))))
}

// screenshot writes docs/img/console-<name>.png when SLUICE_SCREENSHOTS
// is set (the committed images docs/console.md shows).
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if os.Getenv("SLUICE_SCREENSHOTS") == "" {
		return
	}
	run(t, ctx, "settle", chromedp.Sleep(300*time.Millisecond))
	png := get(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100))
	p := filepath.Join("..", "..", "docs", "img", fmt.Sprintf("console-%s.png", name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// stores are the stores the flows run against: memory always, DynamoDB
// when an emulator is given (DYNAMODB_ENDPOINT, as ./test/run.sh sets).
func stores() []string {
	out := []string{app.StoreMemory}
	if os.Getenv("DYNAMODB_ENDPOINT") != "" || os.Getenv(ddblocal.EndpointEnv) != "" {
		out = append(out, app.StoreDynamoDB)
	}
	return out
}
