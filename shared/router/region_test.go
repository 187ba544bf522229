package router

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/apierr"
)

// TestRegionFilter: a request with a Region is served only by deployments
// in that region, in its group and in its fallbacks; a group with none
// goes to its fallbacks, and with no fallback left the request is refused
// with LiteLLM's "No deployments available" (429).
func TestRegionFilter(t *testing.T) {
	cfg := load(t, `model_list:
  - model_name: a
    litellm_params: {model: openai/m, api_key: k, region_name: us}
    model_info: {id: a-us}
  - model_name: a
    litellm_params: {model: openai/m, api_key: k, region_name: eu}
    model_info: {id: a-eu}
  - model_name: us-only
    litellm_params: {model: openai/m, api_key: k, region_name: us}
    model_info: {id: u1}
  - model_name: mixed
    litellm_params: {model: openai/m, api_key: k}
    model_info: {id: m-none}
  - model_name: mixed
    litellm_params: {model: openai/m, api_key: k, region_name: eu}
    model_info: {id: m-eu}
router_settings:
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
