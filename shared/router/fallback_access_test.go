package router

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/apierr"
)

// TestFallbackAccess: a fallback the request's Allowed refuses is skipped
// (never attempted, not counted as a fallback) and named with its reason
// in Result.Skipped; the next allowed one is still tried, and when none is
// the client gets the first group's own error. Allowed sees the fallback
// as configured and the group it resolves to.
func TestFallbackAccess(t *testing.T) {
	cfg := load(t, modelList(dep("a", "a1", "openai/m", ""), dep("b", "b1", "openai/m", ""), dep("c", "c1", "openai/m", ""))+`router_settings:
  num_retries: 0
  model_group_alias: {alias-b: b}
  fallbacks: [{a: [alias-b, c]}]
`)
	type call struct{ model, group string }
	only := func(allowed ...string) (func(model, group string) error, *[]call) {
		var seen []call
		return func(model, group string) error {
			seen = append(seen, call{model, group})
			for _, m := range allowed {
				if m == group {
					return nil
				}
			}
			return apierr.New(apierr.Forbidden, "this key may not use model %q", model)
		}, &seen
	}

	t.Run("one skipped, the next tried", func(t *testing.T) {
		rt := testRouter(t, cfg, Options{})
		s := newScript(map[string][]error{"a1": {e500}})
		r := req("a")
		allowed, seen := only("a", "c")
		r.Allowed = allowed
		res, err := rt.Do(context.Background(), r, s.fn)
		if err != nil {
			t.Fatal(err)
		}
		assertTrace(t, res, hop{"a", "a1", "server_error"}, hop{"c", "c1", ""})
		if want := []string{`alias-b: this key may not use model "alias-b"`}; !reflect.DeepEqual(res.Skipped, want) || res.Fallbacks != 1 {
			t.Fatalf("Skipped %q Fallbacks %d, want %q and 1", res.Skipped, res.Fallbacks, want)
		}
		if want := []call{{"alias-b", "b"}, {"c", "c"}}; !reflect.DeepEqual(*seen, want) {
			t.Fatalf("Allowed saw %v, want %v", *seen, want)
		}
	})
	t.Run("every one skipped", func(t *testing.T) {
		rt := testRouter(t, cfg, Options{})
		s := newScript(map[string][]error{"a1": {e500}})
		r := req("a")
		r.Allowed, _ = only("a")
		res, err := rt.Do(context.Background(), r, s.fn)
		if err != e500 {
			t.Fatalf("error %v, want the first group's own %v", err, e500)
		}
		assertTrace(t, res, hop{"a", "a1", "server_error"})
		if len(res.Skipped) != 2 || res.Fallbacks != 0 || s.count("b1")+s.count("c1") != 0 {
			t.Fatalf("Skipped %q Fallbacks %d, calls b1 %d c1 %d", res.Skipped, res.Fallbacks, s.count("b1"), s.count("c1"))
		}
	})
	t.Run("no predicate", func(t *testing.T) {
		rt := testRouter(t, cfg, Options{})
		s := newScript(map[string][]error{"a1": {e500}})
		res, err := rt.Do(context.Background(), req("a"), s.fn)
		if err != nil || res.Skipped != nil {
			t.Fatalf("err %v Skipped %q", err, res.Skipped)
		}
		assertTrace(t, res, hop{"a", "a1", "server_error"}, hop{"b", "b1", ""})
	})
}

// TestRegionFilter: a request with a Region is served only by deployments
// in that region, in its group and in its fallbacks; a group with none
// goes to its fallbacks, and with no fallback left the request is refused
// with LiteLLM's "No deployments available" (429).
func TestRegionFilter(t *testing.T) {
	cfg := load(t, modelList(
		dep("a", "a-us", "openai/m", "region_name: us"),
		dep("a", "a-eu", "openai/m", "region_name: eu"),
		dep("us-only", "u1", "openai/m", "region_name: us"),
		dep("mixed", "m-none", "openai/m", ""),
		dep("mixed", "m-eu", "openai/m", "region_name: eu"),
	)+`router_settings:
  num_retries: 2
  fallbacks: [{us-only: [mixed]}]
`)
	for i := 0; i < 20; i++ { // the strategy shuffles: every pick must be in the region
		rt := testRouter(t, cfg, Options{Rand: constRand(float64(i) / 20)})
		r := req("a")
		r.Region = "eu"
		res, err := rt.Do(context.Background(), r, newScript(nil).fn)
		if err != nil {
			t.Fatal(err)
		}
		assertTrace(t, res, hop{"a", "a-eu", ""})
	}
	t.Run("retries stay in the region", func(t *testing.T) {
		rt := testRouter(t, cfg, Options{})
		s := newScript(map[string][]error{"a-eu": {e500, e500}})
		r := req("a")
		r.Region = "eu"
		if _, err := rt.Do(context.Background(), r, s.fn); err != nil {
			t.Fatal(err)
		}
		if s.count("a-us") != 0 || s.count("a-eu") != 3 {
			t.Fatalf("calls a-us %d a-eu %d, want 0 and 3", s.count("a-us"), s.count("a-eu"))
		}
	})
	t.Run("fallback in the region", func(t *testing.T) {
		rt := testRouter(t, cfg, Options{})
		r := req("us-only")
		r.Region = "eu"
		res, err := rt.Do(context.Background(), r, newScript(nil).fn)
		if err != nil {
			t.Fatal(err)
		}
		assertTrace(t, res, hop{"us-only", "", "rate_limit_exceeded"}, hop{"mixed", "m-eu", ""})
	})
	t.Run("none in the region", func(t *testing.T) {
		rt := testRouter(t, cfg, Options{})
		r := req("mixed")
		r.Region = "us"
		_, err := rt.Do(context.Background(), r, newScript(nil).fn)
		e := apierr.From(err)
		if e.HTTPStatus() != http.StatusTooManyRequests || !strings.HasPrefix(e.Message, "No deployments available for selected model") || e.Code != "no_deployments_available" {
			t.Fatalf("err %v (status %d, code %s), want LiteLLM's no deployments available", err, e.HTTPStatus(), e.Code)
		}
	})
}
