package adminapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/keys"
)

// Logging callbacks (docs/callbacks.md): LiteLLM's POST and GET
// /team/{team_id}/callback (a team's own callbacks, stored in its
// metadata.logging) and GET /active/callbacks (what the config turns on).
// A callback's credentials (callback_vars) are never shown back: every
// record's metadata is rendered through keys.MaskCallbackVars.

// teamCallbackPath returns the team id of /team/{team_id}/callback.
func teamCallbackPath(path string) (string, bool) { return pathID(path, "/team/", "/callback") }

// teamCallbackRoute is the route of /team/{id}/callback for method: GET
// lists, POST (and anything else, refused as not POST) adds.
func teamCallbackRoute(method, id string) route {
	if method == http.MethodGet || method == http.MethodHead {
		return route{http.MethodGet, func(h *Handler, w http.ResponseWriter, r *http.Request, c *caller) error {
			return h.teamCallbacks(w, r, c, id)
		}}
	}
	return route{http.MethodPost, func(h *Handler, w http.ResponseWriter, r *http.Request, c *caller) error {
		return h.teamCallbackAdd(w, r, c, id)
	}}
}

// teamCallbackAdd adds a callback to a team (LiteLLM's add_team_callbacks):
// {callback_name, callback_type, callback_vars}, appended to the team's
// metadata.logging; the same name and type twice is a 400. A proxy admin
// or an admin of the team may.
func (h *Handler) teamCallbackAdd(w http.ResponseWriter, r *http.Request, c *caller, id string) error {
	ctx := r.Context()
	t, err := h.managedTeam(ctx, c, id)
	if err != nil {
		return err
	}
	p, err := readParams(r)
	if err != nil {
		return err
	}
	var cb keys.Callback
	cb.Name, _ = p.str("callback_name")
	cb.Type, _ = p.str("callback_type")
	if raw, ok := p.raw("callback_vars"); ok {
		if json.Unmarshal(raw, &cb.Vars) != nil {
			p.fail(badParam("callback_vars", "want an object of strings"))
		}
	}
	if err := p.done(); err != nil {
		return err
	}
	cb.Name = strings.ToLower(strings.TrimSpace(cb.Name))
	switch {
	case cb.Name == "":
		return badParam("callback_name", "required")
	case !config.CallbackNames[cb.Name]:
		return badParam("callback_name", "%q is not a callback this gateway implements", cb.Name)
	case cb.Type == "":
		cb.Type = "success_and_failure"
	case !slices.Contains(keys.CallbackTypes, cb.Type):
		return badParam("callback_type", "want one of %s", strings.Join(keys.CallbackTypes, ", "))
	}
	var meta map[string]json.RawMessage
	if len(t.Metadata) > 0 {
		if err := json.Unmarshal(t.Metadata, &meta); err != nil {
			return badParam("team_id", "the team's metadata is not an object")
		}
	}
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	var entries []json.RawMessage
	if raw, ok := meta["logging"]; ok && json.Unmarshal(raw, &entries) != nil {
		entries = nil // not a list: replaced, as LiteLLM does
	}
	for _, e := range entries {
		var have keys.Callback
		if json.Unmarshal(e, &have) == nil && strings.EqualFold(have.Name, cb.Name) && have.Type == cb.Type {
			return badParam("callback_name", "callback_name = %s already exists for team_id = %s and event = %s", cb.Name, id, cb.Type)
		}
	}
	entry, _ := json.Marshal(cb)
	entries = append(entries, entry)
	meta["logging"], _ = json.Marshal(entries)
	t.Metadata, _ = json.Marshal(meta)
	t.UpdatedAt = h.now()
	t, err = h.keys.Teams().Update(ctx, t)
	if err != nil {
		return err
	}
	return ok(w, obj{"status": "success", "data": teamObject(t, h.now())})
}

// teamCallbacks lists a team's callbacks (LiteLLM's get_team_callbacks),
// credentials masked.
func (h *Handler) teamCallbacks(w http.ResponseWriter, r *http.Request, c *caller, id string) error {
	t, err := h.managedTeam(r.Context(), c, id)
	if err != nil {
		return err
	}
	success, failure := []string{}, []string{}
	vars := map[string]string{}
	for _, cb := range keys.LoggingCallbacks(t.Metadata) {
		if cb.Type != "failure" {
			success = append(success, cb.Name)
		}
		if cb.Type != "success" {
			failure = append(failure, cb.Name)
		}
		for k, v := range cb.Vars {
			if keys.SecretVar(k) {
				v = keys.Redacted
			}
			vars[k] = v
		}
	}
	return ok(w, obj{"status": "success", "data": obj{
		"team_id": id, "success_callbacks": success, "failure_callbacks": failure, "callback_vars": vars,
	}})
}

// activeCallbacks is LiteLLM's GET /active/callbacks: the callbacks the
// config turns on, in LiteLLM's lists (the async lists are the ones the
// sinks run in: success_callback and callbacks, failure_callback and
// callbacks). A proxy admin's route.
func (h *Handler) activeCallbacks(w http.ResponseWriter, r *http.Request, c *caller) error {
	if !c.admin() {
		return needAdmin(c)
	}
	var cb config.Callbacks
	timeout := 0.0
	var alerting any // LiteLLM's proxy_logging_obj.alerting: null, or the channels
	var nAlerting int
	if h.cfg != nil {
		cb = h.cfg.Callbacks
		timeout = h.cfg.Router.Timeout.Seconds()
		if ch := h.cfg.General.Alerting.Channels; len(ch) > 0 {
			alerting, nAlerting = ch, len(ch)
		}
	}
	list := func(ls ...[]string) []string {
		out := []string{}
		for _, l := range ls {
			for _, n := range l {
				if !slices.Contains(out, n) {
					out = append(out, n)
				}
			}
		}
		return out
	}
	lists := [...][]string{
		list(cb.Both), {}, list(cb.Failure), list(cb.Success),
		list(cb.Success, cb.Both), list(cb.Failure, cb.Both), {},
	}
	var all []string
	for _, l := range lists {
		all = append(all, l...)
	}
	return ok(w, obj{
		"alerting":                        alerting,
		"litellm.callbacks":               lists[0],
		"litellm.input_callback":          lists[1],
		"litellm.failure_callback":        lists[2],
		"litellm.success_callback":        lists[3],
		"litellm._async_success_callback": lists[4],
		"litellm._async_failure_callback": lists[5],
		"litellm._async_input_callback":   lists[6],
		"all_litellm_callbacks":           append([]string{}, all...),
		"num_callbacks":                   len(all),
		"num_alerting":                    nAlerting,
		"litellm.request_timeout":         timeout,
		"turn_off_message_logging":        cb.TurnOffMessageLogging,
		"redact_user_api_key_info":        cb.RedactUserAPIKeyInfo,
	})
}
