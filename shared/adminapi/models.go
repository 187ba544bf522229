package adminapi

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/keys"
)

// secretParam reports whether a litellm_params name may hold a secret:
// such values never leave the process.
func secretName(name string) bool {
	n := strings.ToLower(name)
	if n == "max_tokens" || n == "max_completion_tokens" || strings.HasSuffix(n, "_tokens") {
		return false
	}
	for _, s := range []string{"key", "secret", "token", "password", "credential", "auth"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// holds says whether s contains the key k.
func holds(s, k string) bool { return k != "" && strings.Contains(s, k) }

// deploymentInfo is a deployment as /model/info shows it: its
// litellm_params without api_key or any other secret.
func deploymentInfo(d *config.Deployment) obj {
	params := obj{}
	for k, v := range d.Params {
		if secretName(k) {
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
	info := obj{"id": d.ID, "db_model": false, "blocked": d.Blocked}
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
// models the caller may use.
func (h *Handler) modelInfo(w http.ResponseWriter, r *http.Request, c *caller) error {
	lists, err := h.allowedModels(r.Context(), c)
	if err != nil {
		return err
	}
	filter := (&query{r: r}).str("litellm_model_id")
	data := []obj{}
	var shown []*config.Deployment
	if h.cfg != nil {
		for _, d := range h.cfg.Deployments {
			if !allows(lists, h.cfg.AccessGroups, d.ModelName) || (filter != "" && d.ID != filter) {
				continue
			}
			shown = append(shown, d)
			data = append(data, deploymentInfo(d))
		}
	}
	h.addCooldowns(r.Context(), shown, data)
	return ok(w, obj{"data": data})
}
