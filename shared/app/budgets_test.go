package app_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

// TestLinkedBudgetCallsPerRequest: a request whose end user links a
// reusable budget reads the budget once, cold, then from the key cache:
// warm, it costs the admission alone, as any limited request does.
func TestLinkedBudgetCallsPerRequest(t *testing.T) {
	up, _ := upstream(t, 200)
	yaml := fmt.Sprintf(`model_list:
  - model_name: m
    litellm_params: {model: openai/x, api_base: %s}
general_settings: {master_key: sk-master}
`, up.URL)
	gw := instance(t, yaml, app.Settings{Tables: ddblocal.Tables(t)})
	ctx := context.Background()
	secret := "sk-linked-test-key"
	if err := gw.Keys.CreateKey(ctx, keys.Key{Hash: keys.HashSecret(secret)}); err != nil {
		t.Fatal(err)
	}
	if err := gw.Keys.CreateBudget(ctx, keys.BudgetRecord{ID: "b", Settings: keys.Settings{RPMLimit: 100}}); err != nil {
		t.Fatal(err)
	}
	if err := gw.Keys.CreateEndUser(ctx, keys.EndUser{ID: "cust", Settings: keys.Settings{BudgetID: "b"}}); err != nil {
		t.Fatal(err)
	}
	body := `{"model":"m","user":"cust","messages":[]}`
	for _, tt := range []callCase{
		// Cold: key, end user count, end user, its budget, cooldown, admission.
		{"cold", secret, body, 200, 6},
		// Warm: the admission of the budget's rpm_limit alone.
		{"warm", secret, body, 200, 1},
	} {
		countCalls(t, gw.Handler, ctx, tt)
	}
}
