package app_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/limits/ddblimits"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

// A slow store is not a down one: two gateway instances whose every
// DynamoDB answer comes 200 ms, 1 s or 3 s late, a deployment at 30 RPM,
// 60 concurrent requests: exactly 30 are served, the others refused (429),
// none let through uncounted. The counts are the figures in
// docs/operations.md (go test -run TestSlowStoreKeepsLimitsExact -v ./shared/app/).
func TestSlowStoreKeepsLimitsExact(t *testing.T) {
	const rpm, n = 30, 60
	for _, delay := range []time.Duration{200 * time.Millisecond, time.Second, 3 * time.Second} {
		t.Run(delay.String(), func(t *testing.T) {
			names := ddblocal.Tables(t)
			p := ddblocal.NewProxy(t, "")
			up, _ := upstream(t, 200)
			yaml := fmt.Sprintf(`model_list:
  - model_name: m
    litellm_params: {model: openai/x, api_base: %s, rpm: %d}
router_settings: {num_retries: 0}
general_settings: {master_key: sk-master}
`, up.URL, rpm)
			// One minute window for the whole burst, whenever it runs.
			now := time.Now().UTC().Truncate(time.Minute).Add(10 * time.Second)
			s := app.Settings{Now: func() time.Time { return now }}
			gws := []*app.Gateway{proxied(t, yaml, names, p, s), proxied(t, yaml, names, p, s)}
			p.SetDelay(delay)
			codes := map[int]int{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					rec := call(t, gws[i%2].Handler, context.Background(), "sk-master", `{"model":"m","max_tokens":1,"messages":[]}`)
					mu.Lock()
					codes[rec.Code]++
					mu.Unlock()
				})
			}
			wg.Wait()
			var failedOpen int64
			for _, gw := range gws {
				failedOpen += gw.Limits.(*ddblimits.Store).FailedOpen()
			}
			t.Logf("%v added latency, 2 instances, %d concurrent requests at %d RPM: %d admitted, %d limited (429), %d other %v; %d failed open",
				delay, n, rpm, codes[200], codes[429], n-codes[200]-codes[429], codes, failedOpen)
			if codes[200] != rpm || codes[429] != n-rpm || failedOpen != 0 {
				t.Errorf("statuses %v, %d failed open; want %d served, %d refused with 429, none failed open", codes, failedOpen, rpm, n-rpm)
			}
		})
	}
}
