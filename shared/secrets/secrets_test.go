package secrets_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/secrets"
	"github.com/sluice-gw/sluice/test/sqslocal"
)

func TestMain(m *testing.M) { os.Exit(sqslocal.Main(m)) }

// moto returns the Source on the emulator (Secrets Manager through the
// SDK, its endpoint from AWS_ENDPOINT_URL_SECRETS_MANAGER).
func moto(t *testing.T) *secrets.SecretsManager {
	t.Helper()
	sqslocal.SecretsManager(t) // sets the endpoint variable
	return secrets.NewSecretsManager(sqslocal.Config(t))
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// counting counts the reads a Source makes.
type counting struct {
	secrets.Source
	n atomic.Int64
}

func (c *counting) GetSecrets(ctx context.Context, ids []string) (map[string]string, error) {
	c.n.Add(1)
	return c.Source.GetSecrets(ctx, ids)
}

func TestLookupEnvironmentThenSecrets(t *testing.T) {
	primary := sqslocal.NewSecret(t, "sluice/providers-", `{"OPENAI_API_KEY":"sk-primary-1","PORT_N":8080,"SHADOWED":"from-secret"}`)
	hosted := sqslocal.NewSecret(t, "ANTHROPIC_API_KEY_", "sk-ant-hosted-1")
	env := map[string]string{"SHADOWED": "from-env"}
	src := &counting{Source: moto(t)}
	r := secrets.New(secrets.Options{
		Env: func(k string) (string, bool) { v, ok := env[k]; return v, ok }, Source: src,
		Primary: primary, Hosted: []string{hosted},
	})
	r.Start(context.Background())
	for name, want := range map[string]string{"OPENAI_API_KEY": "sk-primary-1", "PORT_N": "8080", "SHADOWED": "from-env", hosted: "sk-ant-hosted-1"} {
		if got, ok := r.Lookup(name); !ok || got != want {
			t.Errorf("Lookup(%s) = %q, %v; want %q", name, got, ok, want)
		}
	}
	if _, ok := r.Lookup("NOPE"); ok {
		t.Error("Lookup(NOPE) found a value")
	}
	if r.FromSecret("SHADOWED") || !r.FromSecret("OPENAI_API_KEY") {
		t.Error("FromSecret: the environment must win")
	}
	if n := src.n.Load(); n != 1 {
		t.Errorf("%d reads for every lookup; want 1 (read once at start)", n)
	}
}

// A failed read names the secret and its cause, never a value.
func TestReadErrorsShowNoValue(t *testing.T) {
	const value = "sk-never-shown-0123456789"
	notJSON := sqslocal.NewSecret(t, "notjson-", value)
	nested := sqslocal.NewSecret(t, "nested-", `{"K":{"v":"`+value+`"}}`)
	for _, primary := range []string{notJSON, nested, "missing-" + notJSON} {
		var logs bytes.Buffer
		r := secrets.New(secrets.Options{Source: moto(t), Primary: primary, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		err := r.Wait(context.Background())
		if err == nil || !strings.Contains(err.Error(), primary) {
			t.Errorf("primary %s: error %v; want one naming the secret", primary, err)
			continue
		}
		if strings.Contains(err.Error(), value) || strings.Contains(logs.String(), value) {
			t.Errorf("the secret's value leaked: %v / %s", err, logs.String())
		}
	}
}

// A rotated secret is served after the TTL, without a read before it.
func TestTTLReread(t *testing.T) {
	id := sqslocal.NewSecret(t, "ttl-", `{"OPENAI_API_KEY":"sk-old"}`)
	clk := &clock{t: time.Unix(1e9, 0)}
	src := &counting{Source: moto(t)}
	r := secrets.New(secrets.Options{Source: src, Primary: id, TTL: time.Minute, Now: clk.now})
	ref := r.Ref("OPENAI_API_KEY")
	if ref == nil || *ref.Load() != "sk-old" {
		t.Fatalf("Ref = %v", ref)
	}
	sqslocal.PutSecret(t, id, `{"OPENAI_API_KEY":"sk-new"}`)
	clk.add(59 * time.Second)
	r.RefreshStale(context.Background())
	if got := *ref.Load(); got != "sk-old" || src.n.Load() != 1 {
		t.Fatalf("before the TTL: %q after %d reads; want sk-old, 1 read", got, src.n.Load())
	}
	clk.add(time.Second)
	r.RefreshStale(context.Background())
	if got := *ref.Load(); got != "sk-new" || src.n.Load() != 2 {
		t.Fatalf("at the TTL: %q after %d reads; want sk-new, 2 reads", got, src.n.Load())
	}
	if v, _ := r.Lookup("OPENAI_API_KEY"); v != "sk-new" {
		t.Errorf("Lookup after the re-read = %q", v)
	}
}

// provider accepts only the key in want (a fake OpenAI).
func provider(t *testing.T, want *atomic.Pointer[string], calls *atomic.Int64) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		if string(body) != `{"model":"m"}` {
			t.Errorf("body %q: the resent request lost its body", body)
		}
		if r.Header.Get("Authorization") != "Bearer "+*want.Load() {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"message":"Incorrect API key provided"}}`)
			return
		}
		io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A provider's 401 for a key read from a secret re-reads the secret once
// for every request that saw it, and each request is sent again with the
// new key.
func TestRejectedKeyRereadsOnce(t *testing.T) {
	id := sqslocal.NewSecret(t, "reject-", `{"OPENAI_API_KEY":"sk-before-rotation"}`)
	src := &counting{Source: moto(t)}
	r := secrets.New(secrets.Options{Source: src, Primary: id, RejectGap: time.Hour})
	ref := r.Ref("OPENAI_API_KEY")
	var want atomic.Pointer[string]
	newKey := "sk-after-rotation"
	want.Store(&newKey) // the provider already rotated
	var calls atomic.Int64
	srv := provider(t, &want, &calls)
	sqslocal.PutSecret(t, id, `{"OPENAI_API_KEY":"`+newKey+`"}`)

	client := &http.Client{Transport: r.Transport(http.DefaultTransport)}
	const n = 40
	var wg sync.WaitGroup
	statuses := make([]int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"model":"m"}`))
			req.Header.Set("Authorization", "Bearer "+*ref.Load())
			resp, err := client.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses[i] = resp.StatusCode
		}()
	}
	wg.Wait()
	for i, s := range statuses {
		if s != http.StatusOK {
			t.Errorf("request %d: %d; want 200 with the rotated key", i, s)
		}
	}
	if got := src.n.Load(); got != 2 {
		t.Errorf("%d reads; want 2 (start, one re-read shared by %d rejected requests)", got, n)
	}
	if *ref.Load() != newKey {
		t.Errorf("the bound key is %q after the re-read", *ref.Load())
	}

	// A key wrong in the secret too: the 401 goes back, and within the
	// gap no further read.
	bad := "sk-provider-wants-another"
	want.Store(&bad)
	for range 5 {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"model":"m"}`))
		req.Header.Set("Authorization", "Bearer "+*ref.Load())
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("status %d; want the provider's 401", resp.StatusCode)
		}
	}
	if got := src.n.Load(); got != 2 {
		t.Errorf("%d reads after 5 rejections of a key the secret still holds; want 2 (none within the gap)", got)
	}
}

// A key not read from a secret is never resent, and costs no read.
func TestRejectOfOtherKeyPassesThrough(t *testing.T) {
	id := sqslocal.NewSecret(t, "other-", `{"OPENAI_API_KEY":"sk-secret"}`)
	src := &counting{Source: moto(t)}
	r := secrets.New(secrets.Options{Source: src, Primary: id})
	r.Ref("OPENAI_API_KEY")
	var want atomic.Pointer[string]
	k := "sk-secret"
	want.Store(&k)
	var calls atomic.Int64
	srv := provider(t, &want, &calls)
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"model":"m"}`))
	req.Header.Set("Authorization", "Bearer sk-config-literal")
	resp, err := (&http.Client{Transport: r.Transport(http.DefaultTransport)}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || calls.Load() != 1 || src.n.Load() != 1 {
		t.Errorf("status %d, %d calls, %d reads; want 401, 1, 1", resp.StatusCode, calls.Load(), src.n.Load())
	}
}
