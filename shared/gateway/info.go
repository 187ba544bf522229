package gateway

import (
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/sluice-gw/sluice/shared/adminapi"
	"github.com/sluice-gw/sluice/shared/config"
)

// /model_group/info and /routes, in LiteLLM's shapes. (/model/info and
// /v1/model/info are the admin API's: adminapi/models.go.)

// modelGroupInfo is one entry of /model_group/info (LiteLLM's
// ModelGroupInfo). The supports_* flags are LiteLLM's defaults (false): the
// gateway's price table does not carry them.
type modelGroupInfo struct {
	ModelGroup                      string   `json:"model_group"`
	Providers                       []string `json:"providers"`
	MaxInputTokens                  *int     `json:"max_input_tokens"`
	MaxOutputTokens                 *int     `json:"max_output_tokens"`
	InputCostPerToken               *float64 `json:"input_cost_per_token"`
	OutputCostPerToken              *float64 `json:"output_cost_per_token"`
	Mode                            string   `json:"mode"`
	TPM                             *int64   `json:"tpm"`
	RPM                             *int64   `json:"rpm"`
	SupportsParallelFunctionCalling bool     `json:"supports_parallel_function_calling"`
	SupportsVision                  bool     `json:"supports_vision"`
	SupportsWebSearch               bool     `json:"supports_web_search"`
	SupportsReasoning               bool     `json:"supports_reasoning"`
	SupportsFunctionCalling         bool     `json:"supports_function_calling"`
	SupportedOpenAIParams           []string `json:"supported_openai_params"`
	ConfigurableClientsideAuth      []string `json:"configurable_clientside_auth_params"`
}

// modelGroupInfo answers GET /model_group/info[?model_group=name]: the model
// groups the caller may use (all of them for the master key).
func (h *Handler) modelGroupInfo(w http.ResponseWriter, r *http.Request) {
	p, ok := h.authGET(w, r)
	if !ok {
		return
	}
	filter := r.URL.Query().Get("model_group")
	groups := map[string]*modelGroupInfo{}
	var order []string
	add := func(name string, d *config.Deployment) {
		g := groups[name]
		if g == nil {
			g = &modelGroupInfo{ModelGroup: name, Providers: []string{}, Mode: "chat", SupportedOpenAIParams: []string{}}
			groups[name] = g
			order = append(order, name)
		}
		g.add(d)
	}
	for _, d := range h.cfg.Deployments {
		name := d.ModelName
		if filter != "" && name != filter {
			continue
		}
		if allowModel(p, h.cfg.AccessGroups, name, name) != nil {
			continue
		}
		add(name, d)
	}
	h.wildcardInfo(p, filter, add) // wildcards.go
	data := make([]*modelGroupInfo, 0, len(order))
	for _, name := range order {
		data = append(data, groups[name])
	}
	b, _ := json.Marshal(map[string]any{"data": data})
	writeJSON(w, http.StatusOK, b)
}

// add merges deployment d into its group: the smallest known limits (a
// request may land on any deployment), the highest prices, summed rpm/tpm.
func (g *modelGroupInfo) add(d *config.Deployment) {
	if !slices.Contains(g.Providers, d.Provider) {
		g.Providers = append(g.Providers, d.Provider)
	}
	minInt := func(dst **int, v int) {
		if v > 0 && (*dst == nil || v < **dst) {
			*dst = &v
		}
	}
	maxF := func(dst **float64, v float64) {
		if *dst == nil || v > **dst {
			*dst = &v
		}
	}
	sum := func(dst **int64, v int64) {
		if v > 0 {
			n := v
			if *dst != nil {
				n += **dst
			}
			*dst = &n
		}
	}
	maxOut := d.MaxOutputTokens
	if p := d.Price; p != nil {
		maxF(&g.InputCostPerToken, p.Input)
		maxF(&g.OutputCostPerToken, p.Output)
		if maxOut == 0 {
			maxOut = p.MaxOutput
		}
	}
	minInt(&g.MaxInputTokens, d.MaxInputTokens)
	minInt(&g.MaxOutputTokens, maxOut)
	sum(&g.TPM, d.TPM)
	sum(&g.RPM, d.RPM)
	if strings.Contains(d.Model, "embed") {
		g.Mode = "embedding"
	}
}

// routeInfo is one entry of /routes, as LiteLLM lists its FastAPI routes.
type routeInfo struct {
	Path     string   `json:"path"`
	Methods  []string `json:"methods"`
	Name     string   `json:"name"`
	Endpoint string   `json:"endpoint"`
}

// routes answers GET /routes (any valid key): every route of the gateway
// and of the admin API, with its method.
func (h *Handler) routes(w http.ResponseWriter, r *http.Request) {
	if _, ok := h.authGET(w, r); !ok {
		return
	}
	out := make([]routeInfo, 0, len(h.table.table)+64)
	for _, rt := range h.table.table { // routes.go
		out = append(out, routeInfo{Path: rt.pattern, Methods: []string{rt.method}, Name: rt.name, Endpoint: rt.name})
	}
	admin := adminapi.Routes()
	sort.Strings(admin)
	for _, mp := range admin {
		method, path, _ := strings.Cut(mp, " ")
		name := strings.NewReplacer("/", "_", "{", "", "}", "").Replace(strings.TrimPrefix(path, "/"))
		out = append(out, routeInfo{Path: path, Methods: []string{method}, Name: name, Endpoint: name})
	}
	b, _ := json.Marshal(map[string]any{"routes": out})
	writeJSON(w, http.StatusOK, b)
}
