package gateway

import (
	"net/http"
	"strings"

	"github.com/sluice-gw/sluice/shared/apierr"
)

// The gateway's one route table: every path it serves, with its method,
// LiteLLM's route name and what serves it. The dispatch (ServeHTTP), the
// /routes answer (info.go) and the table in docs/endpoints.md (checked by
// TestEndpointsDoc) all come from it.

// route is one (method, pattern) the gateway serves. A pattern may hold one
// {param} segment (Azure's deployment, a stored response's id), handed to
// serve. A model route's api is set: it runs the request stages
// (request.go) for that API (apis.go).
type route struct {
	method  string
	pattern string
	name    string // LiteLLM's route name, for /routes
	api     *api
	serve   func(h *Handler, w http.ResponseWriter, r *http.Request, param string)
}

// buildRoutes is the table, in the order /routes and the docs list it: the
// APIs (each at its paths, then Azure's), then the other routes. New builds
// it once (the APIs are registered by then).
func buildRoutes() []route {
	var out []route
	model := func(a *api) func(*Handler, http.ResponseWriter, *http.Request, string) {
		return func(h *Handler, w http.ResponseWriter, r *http.Request, param string) { h.postModel(w, r, a, param) }
	}
	all := sortedAPIs()
	for _, a := range all {
		for _, p := range a.paths {
			out = append(out, route{method: http.MethodPost, pattern: p, name: a.name, api: a, serve: model(a)})
		}
	}
	for _, a := range all {
		if a.azure != "" {
			out = append(out, route{method: http.MethodPost, pattern: "/openai/deployments/{model}" + a.azure, name: a.name, api: a, serve: model(a)})
		}
	}
	for _, p := range openAIPaths("/responses") { // responses_routes.go
		out = append(out,
			route{method: http.MethodGet, pattern: p + "/{response_id}", name: "get_response", serve: storedResponse("")},
			route{method: http.MethodDelete, pattern: p + "/{response_id}", name: "delete_response", serve: storedResponse("")},
			route{method: http.MethodGet, pattern: p + "/{response_id}/input_items", name: "get_response_input_items", serve: storedResponse("input_items")})
	}
	get := func(name string, serve func(*Handler, http.ResponseWriter, *http.Request), paths ...string) {
		for _, p := range paths {
			out = append(out, route{method: http.MethodGet, pattern: p, name: name,
				serve: func(h *Handler, w http.ResponseWriter, r *http.Request, _ string) { serve(h, w, r) }})
		}
	}
	get("model_list", (*Handler).listModels, "/v1/models", "/models")                               // models_list.go
	get("model_group_info", (*Handler).modelGroupInfo, "/model_group/info", "/v1/model_group/info") // info.go
	get("get_routes", (*Handler).routes, "/routes")
	get("health_endpoint", (*Handler).health, "/health") // health.go
	get("health_readiness", (*Handler).readiness, "/health/readiness")
	get("health_readiness_details", (*Handler).readinessDetails, "/health/readiness/details")
	get("health_liveliness", (*Handler).liveliness, "/health/liveliness", "/health/liveness")
	return out
}

// routeIndex finds a path's routes: by the path itself, else by the
// patterns with a parameter.
type routeIndex struct {
	table     []route
	byPattern map[string][]*route
	params    []string // patterns holding a {param} segment
}

func indexRoutes(rts []route) routeIndex {
	ix := routeIndex{table: rts, byPattern: map[string][]*route{}}
	for i := range rts {
		p := rts[i].pattern
		if _, seen := ix.byPattern[p]; !seen && strings.IndexByte(p, '{') >= 0 {
			ix.params = append(ix.params, p)
		}
		ix.byPattern[p] = append(ix.byPattern[p], &rts[i])
	}
	return ix
}

// lookup returns the routes of path (one per method) and the value of its
// pattern's parameter; nil: no route.
func (ix *routeIndex) lookup(path string) ([]*route, string) {
	if rts, ok := ix.byPattern[path]; ok && strings.IndexByte(path, '{') < 0 {
		return rts, ""
	}
	for _, p := range ix.params {
		if v, ok := matchParam(p, path); ok {
			return ix.byPattern[p], v
		}
	}
	return nil, ""
}

// matchParam matches path against a pattern with one {param} segment; the
// segment must be non-empty and hold no '/'.
func matchParam(pattern, path string) (string, bool) {
	open, end := strings.IndexByte(pattern, '{'), strings.IndexByte(pattern, '}')
	prefix, suffix := pattern[:open], pattern[end+1:]
	if len(path) <= len(prefix)+len(suffix) || !strings.HasPrefix(path, prefix) || !strings.HasSuffix(path, suffix) {
		return "", false
	}
	v := path[len(prefix) : len(path)-len(suffix)]
	if strings.IndexByte(v, '/') >= 0 {
		return "", false
	}
	return v, true
}

// ServeHTTP routes by the table. Unknown routes and methods get
// OpenAI-style errors (Anthropic's on the Messages API's paths).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rts, param := h.table.lookup(r.URL.Path)
	if rts == nil {
		apierr.Write(w, apierr.New(apierr.NotFound, "no route %s %s", r.Method, r.URL.Path))
		return
	}
	for _, rt := range rts {
		if r.Method == rt.method || (rt.method == http.MethodGet && r.Method == http.MethodHead) {
			rt.serve(h, w, r, param)
			return
		}
	}
	allow := rts[0].method
	for _, rt := range rts[1:] {
		allow += ", " + rt.method
	}
	w.Header().Set("Allow", allow)
	err := apierr.New(apierr.MethodNotAllowed, "%s %s is not allowed; use %s", r.Method, r.URL.Path, allow)
	writeError(w, rts[0].api, err)
}
