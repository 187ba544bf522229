package adminapi_test

import (
	"fmt"
	"testing"

	"github.com/sluice-gw/sluice/shared/app"
)

// model_max_budget on /key/generate, /key/update and /key/info, in
// LiteLLM's JSON (budget_limit as a number or a string of one), on both
// stores; hostile values are a 400 naming the field; teams and users
// refuse it. Teams take model_rpm_limit / model_tpm_limit and show them
// where LiteLLM does (in metadata).
func TestModelMaxBudgetRoutes(t *testing.T) {
	onStoresWith(t, suiteConfig, func(t *testing.T, gw *app.Gateway, c client) {
		const m = "sk-master-test"
		gen := c.must(m, "POST", "/key/generate", `{"model_max_budget":{"gpt-4o":{"budget_limit":0.0005,"time_period":"1d"},"openai/x #1":{"budget_limit":"2.5"}}}`)
		secret := gen["key"].(string)
		info := c.must(m, "GET", "/key/info?key="+secret, "")["info"].(map[string]any)
		want := "map[gpt-4o:map[budget_limit:0.0005 time_period:1d] openai/x #1:map[budget_limit:2.5 time_period:<nil>]]"
		if got := fmt.Sprint(info["model_max_budget"]); got != want {
			t.Fatalf("key/info model_max_budget = %s, want %s", got, want)
		}
		if got := fmt.Sprint(info["model_spend"]); got != "map[]" {
			t.Errorf("model_spend before any spend = %s", got)
		}
		for _, bad := range []string{
			`{"gpt-4o":{"budget_limit":9223372036854775808,"time_period":"1d"}}`, // 2^63
			`{"gpt-4o":{"budget_limit":"NaN"}}`,
			`{"gpt-4o":{"budget_limit":"Infinity"}}`,
			`{"gpt-4o":{"budget_limit":"-Inf"}}`,
			`{"gpt-4o":{"budget_limit":1e400}}`,
			`{"gpt-4o":{"budget_limit":-1}}`,
			`{"gpt-4o":{"budget_limit":1e-12}}`,
			`{"gpt-4o":{"budget_limit":1,"time_period":"fortnight"}}`,
			`{"gpt-4o":{"budget_limit":1,"time_period":"0d"}}`,
			`{"gpt-4o":{"budget_limit":1,"time_period":7}}`,
			`{"gpt-4o":{"time_period":"1d"}}`,
			`{"gpt-4o":{"budget_limit":1,"tpm_limit":5}}`,
			`{"gpt-4o":1}`,
			`{"":{"budget_limit":1}}`,
			`["gpt-4o"]`,
		} {
			c.errParam(m, "POST", "/key/update", `{"key":"`+secret+`","model_max_budget":`+bad+`}`, 400, "model_max_budget")
		}
		up := c.must(m, "POST", "/key/update", `{"key":"`+secret+`","model_max_budget":{"gpt-4o":{"budget_limit":1,"time_period":"30d"}}}`)
		if got := fmt.Sprint(up["model_max_budget"]); got != "map[gpt-4o:map[budget_limit:1 time_period:30d]]" {
			t.Errorf("key/update model_max_budget = %s", got)
		}
		if up := c.must(m, "POST", "/key/update", `{"key":"`+secret+`","model_max_budget":null}`); fmt.Sprint(up["model_max_budget"]) != "map[]" {
			t.Errorf("cleared model_max_budget = %v", up["model_max_budget"])
		}
		c.errParam(m, "POST", "/team/new", `{"team_id":"mb","model_max_budget":{"gpt-4o":{"budget_limit":1}}}`, 400, "model_max_budget")
		c.errParam(m, "POST", "/user/new", `{"user_id":"mb","model_max_budget":{"gpt-4o":{"budget_limit":1}}}`, 400, "model_max_budget")

		// Team model limits.
		team := c.must(m, "POST", "/team/new", `{"team_id":"tm","model_rpm_limit":{"gpt-4o":10},"model_tpm_limit":{"gpt-4o":1000},"metadata":{"cost_center":"7"}}`)
		if fmt.Sprint(team["model_rpm_limit"], team["model_tpm_limit"]) != "map[gpt-4o:10] map[gpt-4o:1000]" {
			t.Errorf("team/new model limits = %v %v", team["model_rpm_limit"], team["model_tpm_limit"])
		}
		if got := fmt.Sprint(team["metadata"]); got != "map[cost_center:7 model_rpm_limit:map[gpt-4o:10] model_tpm_limit:map[gpt-4o:1000]]" {
			t.Errorf("team metadata = %s", got)
		}
		c.errParam(m, "POST", "/team/update", `{"team_id":"tm","model_rpm_limit":{"gpt-4o":-1}}`, 400, "model_rpm_limit")
		up = c.must(m, "POST", "/team/update", `{"team_id":"tm","model_rpm_limit":null}`)["data"].(map[string]any)
		if up["model_rpm_limit"] != nil || fmt.Sprint(up["model_tpm_limit"]) != "map[gpt-4o:1000]" {
			t.Errorf("team/update model limits = %v %v", up["model_rpm_limit"], up["model_tpm_limit"])
		}
	})
}
