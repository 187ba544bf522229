// Package adminapi is the admin API: LiteLLM's management routes (keys,
// teams, users, spend) behind the master key. For now it answers health
// checks and, for the management routes that later work builds, a clear 501.
// It knows nothing of Lambda: functions/admin serves it through a buffered
// function URL, and a local server can serve it as well.
package adminapi

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/sluice-gw/sluice/shared/apierr"
)

// Options configure the admin API.
type Options struct {
	// MasterKey is the bearer token every management route requires. Empty,
	// the management routes refuse every call: the admin API never runs open.
	MasterKey string
}

// routes are LiteLLM's management routes with their methods.
var routes = map[string]string{
	"/key/generate":        http.MethodPost,
	"/key/update":          http.MethodPost,
	"/key/delete":          http.MethodPost,
	"/key/info":            http.MethodGet,
	"/key/list":            http.MethodGet,
	"/key/block":           http.MethodPost,
	"/key/unblock":         http.MethodPost,
	"/team/new":            http.MethodPost,
	"/team/update":         http.MethodPost,
	"/team/delete":         http.MethodPost,
	"/team/info":           http.MethodGet,
	"/team/list":           http.MethodGet,
	"/user/new":            http.MethodPost,
	"/user/update":         http.MethodPost,
	"/user/delete":         http.MethodPost,
	"/user/info":           http.MethodGet,
	"/spend/logs":          http.MethodGet,
	"/global/spend/report": http.MethodGet,
}

// Handler serves the admin API.
type Handler struct {
	masterKey []byte
}

// New returns the admin API handler.
func New(o Options) *Handler {
	return &Handler{masterKey: []byte(o.MasterKey)}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/health", "/health/liveliness", "/health/readiness":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			apierr.Write(w, apierr.New(apierr.MethodNotAllowed, "%s %s: use GET", r.Method, r.URL.Path))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"healthy"}`))
		return
	}
	method, ok := routes[r.URL.Path]
	if !ok {
		apierr.Write(w, apierr.New(apierr.NotFound, "no admin route %s %s", r.Method, r.URL.Path))
		return
	}
	if !h.authorized(r) {
		apierr.Write(w, apierr.New(apierr.Unauthorized, "the admin API needs the master key as a Bearer token"))
		return
	}
	if r.Method != method {
		w.Header().Set("Allow", method)
		apierr.Write(w, apierr.New(apierr.MethodNotAllowed, "%s %s: use %s", r.Method, r.URL.Path, method))
		return
	}
	apierr.Write(w, apierr.New(apierr.NotImplemented, "admin route %s %s is not implemented yet", method, r.URL.Path))
}

// authorized reports whether r carries the master key. Without a configured
// master key nobody is.
func (h *Handler) authorized(r *http.Request) bool {
	if len(h.masterKey) == 0 {
		return false
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(token)), h.masterKey) == 1
}
