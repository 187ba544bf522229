package app_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

// max_parallel_requests costs no extra call at admission (its lease is in
// the admission's write) and one write per leased scope after the
// response; with none configured, nothing (TestDynamoDBCallsPerRequest).
func TestDynamoDBCallsWithMaxParallel(t *testing.T) {
	up, hits := upstream(t, 200)
	yaml := fmt.Sprintf(`model_list:
  - model_name: m
    litellm_params: {model: openai/x, api_base: %s}
  - model_name: limited
    litellm_params: {model: openai/y, api_base: %s, rpm: 1000, max_parallel_requests: 10}
general_settings: {master_key: sk-master}
`, up.URL, up.URL)
	gw := instance(t, yaml, app.Settings{Tables: ddblocal.Tables(t)})
	ctx := context.Background()
	four, zero := int64(4), int64(0)
	for secret, s := range map[string]keys.Settings{
		"sk-parallel-only": {MaxParallel: &four},
		"sk-parallel-rpm":  {MaxParallel: &four, RPMLimit: 100},
		"sk-parallel-zero": {MaxParallel: &zero},
	} {
		if err := gw.Keys.CreateKey(ctx, keys.Key{Hash: keys.HashSecret(secret), Settings: s}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []callCase{
		// Cold: key read + cooldown read + admission (the lease) + release.
		{"cold", "sk-parallel-only", `{"model":"m"}`, 200, 4},
		// Warm: the admission's UpdateItem, and one release write.
		{"warm, key lease only", "sk-parallel-only", `{"model":"m"}`, 200, 2},
		// Key rpm and lease, deployment rpm and lease: still one admission
		// (a transaction), then one release write per leased scope (2).
		{"warm, key and deployment leases", "sk-parallel-rpm", `{"model":"limited"}`, 200, 3},
		// 0 admits none, with no call at all once the key is cached.
		{"zero, cold", "sk-parallel-zero", `{"model":"m"}`, 429, 1},
		{"zero, warm", "sk-parallel-zero", `{"model":"m"}`, 429, 0},
	}
	for _, tt := range tests {
		if tt.name == "warm, key and deployment leases" {
			call(t, gw.Handler, ctx, tt.key, tt.body) // warm this key's cache and the model's cooldowns
		}
		countCalls(t, gw.Handler, ctx, tt)
	}
	if hits.Load() != 4 {
		t.Errorf("upstream hits = %d, want 4", hits.Load())
	}
}
