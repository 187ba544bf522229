package gateway

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/limits/ddblimits"
	"github.com/sluice-gw/sluice/shared/router"
)

// A deployment at its own rpm limit (counted across instances) is not
// waited for: the request is answered 429 at once, with Retry-After.
func TestDeploymentLimitAcrossInstancesNoWait(t *testing.T) {
	up := gatewaytest.Answering(t, 200, "", completion)
	cfg := loadConfig(t, fmt.Sprintf("model_list:\n  - model_name: m\n    litellm_params: {model: openai/x, api_base: %s, rpm: 2}\n", up.URL))
	shared := limits.NewMemory()
	var waits []time.Duration
	var mu sync.Mutex
	newInstance := func() *fixture {
		rt := router.New(cfg, router.Options{
			Logger: gatewaytest.Quiet(),
			Sleep: func(ctx context.Context, d time.Duration) error {
				mu.Lock()
				waits = append(waits, d)
				mu.Unlock()
				return ctx.Err()
			},
		})
		// 10 s before the window ends: a Retry-After short enough to wait for.
		at := time.Now().UTC().Truncate(time.Minute).Add(50 * time.Second)
		return serve(t, testHandler(Options{Config: cfg, Router: rt, Limits: shared, Now: func() time.Time { return at }}))
	}
	a, b := newInstance(), newInstance()
	for i := 0; i < 2; i++ {
		if resp := a.post(t, "/v1/chat/completions", "", `{"model":"m"}`); resp.StatusCode != 200 {
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
	}
	resp := b.post(t, "/v1/chat/completions", "", `{"model":"m"}`)
	out := gatewaytest.ReadAll(t, resp.Body)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("third request: %d, Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), out)
	}
	if n := up.Calls.Load(); n != 2 {
		t.Errorf("upstream hits = %d, want 2", n)
	}
	if len(waits) != 0 {
		t.Errorf("the router waited %v for a deployment at its rpm limit", waits)
	}
}

// With the limits store unreachable, general_settings.rate_limits_fail_open
// decides: admit uncounted (the default) or refuse with 503. Never a hang.
func TestRateLimitStoreUnreachable(t *testing.T) {
	hang, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hang.Close()
	go func() {
		for {
			c, err := hang.Accept()
			if err != nil {
				return
			}
			defer c.Close() // accept, never answer
		}
	}()
	awsCfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("a", "b", "")}
	awsCfg.BaseEndpoint = aws.String("http://" + hang.Addr().String())
	store := ddblimits.New(ddb.NewClient(awsCfg, ddb.ClientOptions{Emulator: true, MaxAttempts: 1}), "counters",
		ddblimits.Options{Timeout: 100 * time.Millisecond, Logger: gatewaytest.Quiet()})
	for _, tt := range []struct {
		setting string
		status  int
	}{{"", 200}, {"general_settings: {rate_limits_fail_open: true}\n", 200}, {"general_settings: {rate_limits_fail_open: false}\n", 503}} {
		t.Run(fmt.Sprintf("status %d %q", tt.status, tt.setting), func(t *testing.T) {
			cfg := loadConfig(t, "model_list:\n  - model_name: m\n    litellm_params: {model: mock/m, rpm: 100}\n"+tt.setting)
			f := serve(t, testHandler(Options{Config: cfg, Limits: store}))
			_, out := f.postWant(t, "/v1/chat/completions", "", `{"model":"m"}`, tt.status)
			if tt.status == 503 {
				openAIError(t, out)
			}
		})
	}
}
