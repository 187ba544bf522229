package gatewayapp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/app/appenv"
)

// serveLocal serves gw on e.Addr, bounded by e.Local, until ctx ends;
// the banner goes to w.
func serveLocal(ctx context.Context, gw *app.Gateway, e appenv.Settings, w io.Writer) error {
	ln, err := net.Listen("tcp", e.Addr)
	if err != nil {
		return err
	}
	srv := gw.Server() // settings.Local's timeouts and bounds
	banner(w, gw, "http://"+ln.Addr().String(), e)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	if err := gw.Close(shutdown); err != nil { // record the spend still queued
		return fmt.Errorf("spend: %w", err)
	}
	return nil
}

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
