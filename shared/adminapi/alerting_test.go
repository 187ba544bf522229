package adminapi_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/sluice-gw/sluice/shared/app"
)

// TestActiveCallbacksAlerting: /active/callbacks lists the otel callback
// and the alerting channels (LiteLLM's "alerting" and "num_alerting");
// with no alerting, "alerting" is null and "num_alerting" 0.
func TestActiveCallbacksAlerting(t *testing.T) {
	for _, tt := range []struct {
		extra    string
		alerting string
		n        float64
	}{
		{"  alerting: [slack, webhook]\n", "[slack webhook]", 2},
		{"", "<nil>", 0},
	} {
		yaml := suiteConfig + tt.extra + "litellm_settings:\n  callbacks: [otel]\n" // extra: more general_settings
		gw, err := app.Build(context.Background(), app.Settings{ConfigYAML: []byte(yaml), Store: app.StoreMemory})
		if err != nil {
			t.Fatal(err)
		}
		a := client{t, gw.HTTP}.must("sk-master-test", "GET", "/active/callbacks", "")
		if got := fmt.Sprint(a["alerting"]); got != tt.alerting || a["num_alerting"] != tt.n {
			t.Errorf("alerting %s, num_alerting %v; want %s, %v", got, a["num_alerting"], tt.alerting, tt.n)
		}
		if cbs := fmt.Sprint(a["litellm.callbacks"]); cbs != "[otel]" {
			t.Errorf("litellm.callbacks = %s, want [otel]", cbs)
		}
	}
}
