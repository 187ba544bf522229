package callbackpipe_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/callbacks/sinks"
	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/test/ddblocal/ddbharness"
)

// TestSinkOffRequestPath: in local mode (the in-process queue) a webhook
// that never answers neither holds up a request nor the spend's
// recording: every request completes (were a sink on its path, the first
// would hang until the test's timeout) and is recorded, while the sink is
// being called.
func TestSinkOffRequestPath(t *testing.T) {
	var entered atomic.Int64
	release := make(chan struct{})
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); hook.Close() })
	up := ddbharness.Upstream(t)
	env := map[string]string{"GENERIC_LOGGER_ENDPOINT": hook.URL}
	gw, err := app.Build(context.Background(), app.Settings{
		ConfigYAML: []byte(gatewayConfig(up.URL, "  success_callback: [generic_api]\n")), Logger: gatewaytest.Quiet(),
		Sinks: sinks.Func(func(k string) (string, bool) { v, ok := env[k]; return v, ok }),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = gw.Close(ctx) // the blocked delivery is logged as not delivered
	})
	hash := createKey(t, gw.Keys)
	srv := httptest.NewServer(gw.HTTP)
	t.Cleanup(srv.Close)
	const n = 30
	for range n {
		call(t, srv.URL, "m", "hi")
	}
	waitFor(t, time.Minute, "the sink to be called", func() bool { return entered.Load() > 0 })
	waitFor(t, time.Minute, "every request's spend", func() bool {
		gw.FlushSpend(context.Background())
		return len(logs(t, gw.Spend, hash)) == n
	})
}
