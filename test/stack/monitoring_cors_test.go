package stack_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestTemplateCORS(t *testing.T) {
	t.Run("no origins: no CORS configuration", func(t *testing.T) {
		tr := transform(t, nil)
		for _, id := range tr.resources("AWS::Lambda::Url") {
			if c, ok := tr.props(t, id)["Cors"]; ok {
				t.Errorf("%s has Cors %v without CorsAllowOrigins", id, c)
			}
		}
		if at(tr.tpl, "Resources", tr.gatewayURL(t), "Properties", "Cors") == nil {
			t.Error("the gateway URL has no Cors setting at all: want one decided by the CorsAllowOrigins condition")
		}
	})

	origins := []string{"https://app.example.com", "http://localhost:5173"}
	tr := transform(t, map[string]string{"CorsAllowOrigins": strings.Join(origins, ",")})
	gw := tr.gatewayURL(t)
	cors, ok := tr.props(t, gw)["Cors"].(map[string]any)
	if !ok {
		t.Fatalf("%s: no Cors with CorsAllowOrigins set: %v", gw, tr.props(t, gw))
	}
	t.Run("origins", func(t *testing.T) {
		if got := stringsOf(cors["AllowOrigins"]); !slices.Equal(got, origins) {
			t.Errorf("AllowOrigins = %v, want %v", got, origins)
		}
		if cors["AllowCredentials"] == true {
			t.Error("AllowCredentials: the gateway takes Bearer keys, never cookies")
		}
		for _, id := range tr.resources("AWS::Lambda::Url") {
			if _, ok := tr.props(t, id)["Cors"]; ok && id != gw {
				t.Errorf("%s has Cors: only the gateway's URL is opened to browsers", id)
			}
		}
	})
	t.Run("methods", func(t *testing.T) {
		got := stringsOf(cors["AllowMethods"])
		for _, m := range []string{"GET", "POST"} { // /v1/models, every completion
			if !slices.Contains(got, m) && !slices.Contains(got, "*") {
				t.Errorf("AllowMethods %v: no %s", got, m)
			}
		}
	})
	t.Run("request headers", func(t *testing.T) {
		got := stringsOf(cors["AllowHeaders"])
		// What the OpenAI JS SDK sends from a browser (dangerouslyAllowBrowser),
		// then every request header the gateway reads.
		want := []string{"authorization", "content-type", "openai-organization", "openai-project",
			"x-stainless-arch", "x-stainless-lang", "x-stainless-os", "x-stainless-package-version",
			"x-stainless-runtime", "x-stainless-runtime-version", "x-stainless-retry-count", "x-stainless-timeout",
			"x-stainless-helper-method",
			// and what Anthropic's JS SDK sends from a browser (dangerouslyAllowBrowser)
			"x-api-key", "anthropic-version", "anthropic-beta", "anthropic-dangerous-direct-browser-access"}
		read := goLiterals(t, "shared/gateway", regexp.MustCompile(`Header\.Get\("([A-Za-z0-9-]+)"\)`))
		if len(read) == 0 {
			t.Fatal("found no request header the gateway reads (r.Header.Get): the scan is out of date")
		}
		for _, h := range read {
			want = append(want, strings.ToLower(h))
		}
		for _, h := range want {
			if !slices.Contains(got, h) {
				t.Errorf("AllowHeaders has no %q: a browser's preflight for it fails", h)
			}
		}
		for _, h := range got {
			if h != strings.ToLower(h) {
				t.Errorf("AllowHeaders %q: write header names in lower case, as browsers send them in the preflight", h)
			}
		}
		if len(got) > 100 {
			t.Errorf("AllowHeaders has %d entries; Lambda takes at most 100", len(got))
		}
	})
	t.Run("response headers", func(t *testing.T) {
		got := stringsOf(cors["ExposeHeaders"])
		// Every x-litellm-* header the gateway sets, the Retry-After the SDK
		// honours, and the provider headers passed on under llm_provider-.
		want := []string{"retry-after", "llm_provider-x-request-id"}
		for _, h := range goLiterals(t, "shared/gateway", regexp.MustCompile(`\["(X-Litellm-[A-Za-z-]+)"\]\s*=[^=]`)) {
			want = append(want, strings.ToLower(h))
		}
		if len(want) < 5 {
			t.Fatalf("found %d x-litellm-* headers the gateway sets (header map assignments): the scan is out of date", len(want)-2)
		}
		for _, h := range want {
			if !slices.Contains(got, h) {
				t.Errorf("ExposeHeaders has no %q: a browser app cannot read it", h)
			}
		}
	})
	t.Run("preflight cache", func(t *testing.T) {
		if n, _ := cors["MaxAge"].(float64); n <= 0 || n > 86400 {
			t.Errorf("MaxAge = %v, want 1..86400 s (0 sends a preflight before every request)", cors["MaxAge"])
		}
	})
}
