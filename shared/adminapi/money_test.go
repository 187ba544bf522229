package adminapi_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

// TestMoneyRange: a budget past what the stores keep (DynamoDB numbers
// overflow above 1e125 and underflow below 1e-130) or below the spend
// unit (one nano-dollar) is a 400 naming the field on every store, never
// a 500 on one of them; the edges of the range are accepted.
func TestMoneyRange(t *testing.T) {
	for _, store := range []string{app.StoreMemory, app.StoreDynamoDB} {
		t.Run(store, func(t *testing.T) {
			s := app.Settings{ConfigYAML: []byte(suiteConfig), Store: store, KeyCacheTTL: 1}
			if store == app.StoreDynamoDB {
				cfg := ddblocal.Config(t)
				s.AWS, s.Emulator, s.Tables = &cfg, true, ddblocal.Tables(t)
			}
			gw, err := app.Build(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			c := client{t, gw.HTTP}
			const m = "sk-master-test"
			c.must(m, "POST", "/team/new", `{"team_id":"money"}`)
			n := 0
			routes := []struct {
				path  string
				body  func(id, field, v string) string
				field []string
			}{
				{"/key/generate", func(id, f, v string) string { return fmt.Sprintf(`{"key_alias":%q,%q:%s}`, id, f, v) }, []string{"max_budget", "soft_budget"}},
				{"/team/new", func(id, f, v string) string { return fmt.Sprintf(`{"team_id":%q,%q:%s}`, id, f, v) }, []string{"max_budget", "soft_budget"}},
				{"/user/new", func(id, f, v string) string {
					return fmt.Sprintf(`{"user_id":%q,"auto_create_key":false,%q:%s}`, id, f, v)
				}, []string{"max_budget", "soft_budget"}},
				{"/customer/new", func(id, f, v string) string { return fmt.Sprintf(`{"user_id":%q,%q:%s}`, id, f, v) }, []string{"max_budget", "soft_budget"}},
				{"/team/member_add", func(id, f, v string) string {
					return fmt.Sprintf(`{"team_id":"money","member":{"user_id":%q,"role":"user"},%q:%s}`, id, f, v)
				}, []string{"max_budget_in_team"}},
			}
			for _, rt := range routes {
				for _, f := range rt.field {
					for _, v := range []string{"1e200", "1e-200", "1e16", "1.5e15", "0.0000000009", "1e-10"} {
						n++
						c.errParam(m, "POST", rt.path, rt.body(fmt.Sprintf("id-%d", n), f, v), 400, f)
					}
					for _, v := range []string{"0", "1e-9", "0.000000001", "12.5", "1e15"} {
						n++
						c.must(m, "POST", rt.path, rt.body(fmt.Sprintf("id-%d", n), f, v))
					}
				}
			}
			// /key/update reads money the same way.
			k := c.must(m, "POST", "/key/generate", `{}`)
			c.errParam(m, "POST", "/key/update", fmt.Sprintf(`{"key":%q,"max_budget":1e200}`, k["key"]), 400, "max_budget")
			c.must(m, "POST", "/key/update", fmt.Sprintf(`{"key":%q,"max_budget":1e15}`, k["key"]))
		})
	}
}
