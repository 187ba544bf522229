package gateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/pricing"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/wire"
)

// LiteLLM's health routes: GET /health (master key) makes one cheap call
// per deployment and answers healthy_endpoints / unhealthy_endpoints and
// their counts; GET /health/readiness is the public probe ({"status":
// "healthy"}, as LiteLLM's current release answers unauthenticated callers)
// and GET /health/readiness/details its detailed payload, for any valid key.

const (
	healthConcurrency = 8                // deployments checked at once
	healthCallTimeout = 15 * time.Second // each check's bound
)

// healthEndpoint is one deployment in /health's answer: what LiteLLM shows
// of its litellm_params, never a key.
type healthEndpoint struct {
	Model     string `json:"model"`
	ModelName string `json:"model_name"`
	ModelID   string `json:"model_id"`
	APIBase   string `json:"api_base,omitempty"`
	Error     string `json:"error,omitempty"`
}

// health answers GET /health[?model=group]: every deployment (of the group)
// checked now, never from a cache, by at most healthConcurrency calls at
// once, each bounded by healthCallTimeout.
func (h *Handler) health(w http.ResponseWriter, r *http.Request) {
	p, ok := h.authGET(w, r)
	if !ok {
		return
	}
	if !p.Master && h.cfg.General.MasterKey != "" {
		apierr.Write(w, apierr.New(apierr.Forbidden, "/health checks every deployment: only the master key may call it"))
		return
	}
	filter := r.URL.Query().Get("model")
	var deps []*config.Deployment
	for _, d := range h.cfg.Deployments {
		if (filter == "" || d.ModelName == filter) && d.Model != "*" && !strings.HasSuffix(d.Model, "/*") {
			deps = append(deps, d)
		}
	}
	results := make([]healthEndpoint, len(deps))
	healthy := make([]bool, len(deps))
	sem := make(chan struct{}, healthConcurrency)
	var wg sync.WaitGroup
	for i, d := range deps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-r.Context().Done():
				results[i] = endpointOf(d, "the health check was canceled")
				return
			}
			defer func() { <-sem }()
			results[i], healthy[i] = h.checkDeployment(r.Context(), d)
		}()
	}
	wg.Wait()
	out := struct {
		Healthy        []healthEndpoint `json:"healthy_endpoints"`
		Unhealthy      []healthEndpoint `json:"unhealthy_endpoints"`
		HealthyCount   int              `json:"healthy_count"`
		UnhealthyCount int              `json:"unhealthy_count"`
	}{Healthy: []healthEndpoint{}, Unhealthy: []healthEndpoint{}}
	for i, e := range results {
		if healthy[i] {
			out.Healthy = append(out.Healthy, e)
		} else {
			out.Unhealthy = append(out.Unhealthy, e)
		}
	}
	out.HealthyCount, out.UnhealthyCount = len(out.Healthy), len(out.Unhealthy)
	b, _ := json.Marshal(out)
	w.Header()["Cache-Control"] = []string{"no-store"}
	writeJSON(w, http.StatusOK, b)
}

func endpointOf(d *config.Deployment, errMsg string) healthEndpoint {
	model := d.Model
	if d.Provider != "" {
		model = d.Provider + "/" + d.Model
	}
	e := healthEndpoint{Model: model, ModelName: d.ModelName, ModelID: d.ID, Error: errMsg}
	if d.APIBase != "" {
		e.APIBase = config.DisplayURL(d.APIBase)
	}
	return e
}

// checkDeployment makes d's health call: an embedding of one word for an
// embedding model, a free moderation for a moderation model, else a chat
// completion of at most one token. Image and audio models are not called (a
// check would buy an image or a clip): they are listed unhealthy, their
// error saying they were not checked.
func (h *Handler) checkDeployment(ctx context.Context, d *config.Deployment) (healthEndpoint, bool) {
	call := wire.Call{Op: wire.OpChat, PromptTokens: 1}
	model, _ := json.Marshal(d.Model)
	tab, name := pricing.DefaultMedia(), firstNonEmpty(d.BaseModel, d.Model)
	m, _ := tab.Lookup(name)
	switch media := tab.Media(name); {
	case media && m.Free:
		call.Op = wire.OpModerations
		call.Body = []byte(`{"model":` + string(model) + `,"input":"ping"}`)
	case media:
		return endpointOf(d, "not checked: a health call to an image or audio model would be billed"), false
	case strings.Contains(d.Model, "embed"):
		call.Op = wire.OpEmbeddings
		call.Body = []byte(`{"model":` + string(model) + `,"input":"ping"}`)
	default:
		call.Body = []byte(`{"model":` + string(model) + `,"messages":[{"role":"user","content":"ping"}],"max_tokens":1}`)
	}
	ctx, cancel := context.WithTimeout(ctx, healthCallTimeout)
	defer cancel()
	resp, err := h.provider.Do(ctx, d, call)
	if err != nil {
		msg := providers.Redact(apierr.From(err).Message, d)
		h.log.LogAttrs(ctx, slog.LevelWarn, "health check failed", slog.String("deployment", d.ID), slog.String("error", msg))
		return endpointOf(d, msg), false
	}
	resp.Body.Close()
	return endpointOf(d, ""), true
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// readiness answers GET /health/readiness: the public probe, as LiteLLM's
// current release answers it.
func (h *Handler) readiness(w http.ResponseWriter, r *http.Request) {
	if h.method(w, r, http.MethodGet) {
		writeJSON(w, http.StatusOK, []byte(`{"status":"healthy"}`))
	}
}

// readinessDetails answers GET /health/readiness/details (any valid key)
// with LiteLLM's detail fields. db is "connected" when virtual keys are
// read from a store ("Not connected" with the master key alone); the store
// is not probed (that would be a DynamoDB read per probe). The gateway has
// no response cache (cache: null); success_callbacks names
// litellm_settings.success_callback (LiteLLM's litellm.success_callback;
// the sinks run off the request path, from the spend queue);
// litellm_version is the gateway's build version.
func (h *Handler) readinessDetails(w http.ResponseWriter, r *http.Request) {
	if _, ok := h.authGET(w, r); !ok {
		return
	}
	db := "Not connected"
	if a, ok := h.auth.(*access); ok && a.keys != nil {
		db = "connected"
	}
	version := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		version = bi.Main.Version
	}
	debugOn := h.log.Enabled(r.Context(), slog.LevelDebug)
	level := "INFO"
	if debugOn {
		level = "DEBUG"
	}
	b, _ := json.Marshal(map[string]any{
		"status": "healthy", "db": db, "cache": nil, "litellm_version": version,
		"success_callbacks": successCallbacks(h.cfg), "use_aiohttp_transport": false,
		"log_level": level, "is_detailed_debug": debugOn,
	})
	writeJSON(w, http.StatusOK, b)
}

// successCallbacks is cfg's success_callback, each name once.
func successCallbacks(cfg *config.Config) []string {
	out := []string{}
	if cfg == nil {
		return out
	}
	for _, n := range cfg.Callbacks.Success {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
