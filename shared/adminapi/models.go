package adminapi

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/models"
)

// holds says whether s contains the key k.
func holds(s, k string) bool { return k != "" && strings.Contains(s, k) }

// deploymentInfo is a deployment as /model/info shows it: its
// litellm_params without api_key or any other secret.
func deploymentInfo(d *config.Deployment) obj {
	params := obj{}
	for k, v := range d.Params {
		if models.Secret(k) {
			continue
		}
		if s, ok := v.(string); ok && (holds(s, d.APIKey) || holds(s, d.Key())) {
			continue
		}
		params[k] = v
	}
	model := d.Model
	if d.Provider != "" {
		model = d.Provider + "/" + d.Model
	}
	params["model"] = model
	if d.APIBase != "" {
		params["api_base"] = config.DisplayURL(d.APIBase)
	}
	if d.APIVersion != "" {
		params["api_version"] = d.APIVersion
	}
	if d.RPM > 0 {
		params["rpm"] = d.RPM
	}
	if d.TPM > 0 {
		params["tpm"] = d.TPM
	}
	if d.Timeout > 0 {
		params["timeout"] = d.Timeout.Seconds()
	}
	if d.StreamTimeout > 0 {
		params["stream_timeout"] = d.StreamTimeout.Seconds()
	}
	if d.HasWeight {
		params["weight"] = d.Weight
	}
	if d.Order > 0 {
		params["order"] = d.Order
	}
	if len(d.Tags) > 0 {
		params["tags"] = d.Tags
	}
	if d.Region != "" {
		params["region_name"] = d.Region
	}
	info := obj{"id": d.ID, "db_model": d.Stored, "blocked": d.Blocked}
	if d.MaxInputTokens > 0 {
		info["max_input_tokens"] = d.MaxInputTokens
	}
	if d.MaxOutputTokens > 0 {
		info["max_output_tokens"] = d.MaxOutputTokens
	}
	if d.BaseModel != "" {
		info["base_model"] = d.BaseModel
	}
	if p := d.Price; p != nil {
		info["input_cost_per_token"] = p.Input
		info["output_cost_per_token"] = p.Output
	}
	if len(d.AccessGroups) > 0 {
		info["access_groups"] = d.AccessGroups
	}
	info["litellm_provider"] = d.Provider
	return obj{"model_name": d.ModelName, "litellm_params": params, "model_info": info}
}

// allowedModels returns the model lists that bound c (its key's, team's and
// user's); every one must allow a model.
func (h *Handler) allowedModels(ctx context.Context, c *caller) ([][]string, error) {
	if c.viewer() || c.key == nil {
		return nil, nil
	}
	lists := [][]string{c.key.Models}
	if c.key.TeamID != "" {
		t, err := h.keys.GetTeam(ctx, c.key.TeamID)
		if err != nil && !errors.Is(err, keys.ErrNotFound) {
			return nil, err
		}
		lists = append(lists, t.Models)
	}
	if c.user != nil {
		lists = append(lists, c.user.Models)
	}
	return lists, nil
}

// allows reports whether every list allows model: by name, "*",
// "all-proxy-models", or a model access group (ag) holding it.
func allows(lists [][]string, ag map[string][]string, model string) bool {
	for _, l := range lists {
		if len(l) > 0 && !slices.Contains(l, model) && !slices.Contains(l, "*") && !slices.Contains(l, "all-proxy-models") &&
			!slices.ContainsFunc(l, func(g string) bool { return slices.Contains(ag[g], model) }) {
			return false
		}
	}
	return true
}

// modelInfo answers /model/info and /v1/model/info: the deployments of the
// models the caller may use, config and stored (db_model: true) alike.
func (h *Handler) modelInfo(w http.ResponseWriter, r *http.Request, c *caller) error {
	data, err := h.modelList(r, c)
	if err != nil {
		return err
	}
	return ok(w, obj{"data": data})
}

// modelInfoV2 answers /v2/model/info: the same deployments, filtered by
// model (group name) and modelId, a page of them (page from 1, size).
func (h *Handler) modelInfoV2(w http.ResponseWriter, r *http.Request, c *caller) error {
	data, err := h.modelList(r, c)
	if err != nil {
		return err
	}
	q := &query{r: r}
	if group := q.str("model"); group != "" {
		kept := data[:0]
		for _, d := range data {
			if d["model_name"] == group {
				kept = append(kept, d)
			}
		}
		data = kept
	}
	page, size := q.int("page", 1, 1, 1<<20), q.int("size", 50, 1, 1000)
	total := len(data)
	from, to := min((page-1)*size, total), min(page*size, total)
	return ok(w, obj{"data": data[from:to], "total_count": total, "current_page": page, "size": size, "total_pages": (total + size - 1) / size})
}

// modelList is every deployment the caller may use, with its cooldown.
func (h *Handler) modelList(r *http.Request, c *caller) ([]obj, error) {
	lists, err := h.allowedModels(r.Context(), c)
	if err != nil {
		return nil, err
	}
	q := &query{r: r}
	filter := q.str("litellm_model_id")
	if filter == "" {
		filter = q.str("modelId")
	}
	cfg := h.cfg
	if h.models != nil && h.models.View != nil {
		cfg = h.models.View(r.Context())
	}
	data := []obj{}
	var shown []*config.Deployment
	if cfg != nil {
		for _, d := range cfg.Deployments {
			if !allows(lists, cfg.AccessGroups, d.ModelName) || (filter != "" && d.ID != filter) {
				continue
			}
			shown = append(shown, d)
			data = append(data, deploymentInfo(d))
		}
	}
	h.addCooldowns(r.Context(), shown, data)
	return data, nil
}
