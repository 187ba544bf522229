package gatewayapp

import (
	"fmt"
	"io"
	"strings"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/app/appenv"
)

// banner tells who starts a local gateway where it listens, what it
// serves, and how to call it.
func banner(w io.Writer, gw *app.Gateway, base string, e appenv.Settings) {
	var models []string
	for _, m := range gw.Router.Models() {
		models = append(models, m.ID)
	}
	source := "embedded default (mock models, no API keys needed)"
	if e.ConfigPath != "" {
		source = e.ConfigPath
	}
	fmt.Fprintf(w, `
Gateway listening on %s  (config: %s, store: %s)
Models: %s

  curl %s/v1/chat/completions -H 'Content-Type: application/json' \%s
    -d '{"model":"%s","messages":[{"role":"user","content":"Hello"}]}'

Or point any OpenAI SDK at base_url=%s/v1
Admin API (LiteLLM's /key, /team, /user, /customer, /spend routes) on the same port%s
`, base, source, e.Store, strings.Join(models, ", "), base, authHint(gw.Config.General.MasterKey), first(models), base, adminHint(gw.Config.General.MasterKey))
}

// authHint is the banner's curl header line when a master key is set (its
// value never printed): without it the example is a 401.
func authHint(masterKey string) string {
	if masterKey == "" {
		return ""
	}
	return "\n    -H 'Authorization: Bearer <your master key or a virtual key>' \\"
}

func adminHint(masterKey string) string {
	if masterKey == "" {
		return ": answers 401 until a master key is set (GATEWAY_MASTER_KEY=sk-...)"
	}
	return ": authenticate with the master key"
}

func first(s []string) string {
	if len(s) == 0 {
		return "gpt-4o-mini"
	}
	return s[0]
}
