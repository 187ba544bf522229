package adminapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/sluice-gw/sluice/shared/keys"
)

// obj is a JSON object in LiteLLM's shape.
type obj = map[string]any

func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
	return nil
}

func ok(w http.ResponseWriter, v any) error { return writeJSON(w, http.StatusOK, v) }

func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func orNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func limitOrNil(v int64) any {
	if v == 0 {
		return nil
	}
	return v
}

func strList(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}

// metadata is a record's metadata as shown: {} when none, and the
// credentials of its logging callbacks masked (callbacks.go).
func metadata(m json.RawMessage) json.RawMessage {
	if len(m) == 0 {
		return json.RawMessage("{}")
	}
	return keys.MaskCallbackVars(m)
}

func usdOrNil(v *float64) any {
	if v == nil {
		return nil
	}
	return *v
}

// settingsFields adds the LiteLLM fields of a key's, team's or user's
// Settings to o: limits, models, metadata and budget.
func settingsFields(o obj, s keys.Settings, now time.Time) obj {
	o["models"] = strList(s.Models)
	o["tpm_limit"] = limitOrNil(s.TPMLimit)
	o["rpm_limit"] = limitOrNil(s.RPMLimit)
	o["max_parallel_requests"] = s.MaxParallel // nil: null
	o["metadata"] = metadata(s.Metadata)
	budgetFields(o, s.Budget, now)
	return o
}

// budgetFields adds a Budget's LiteLLM fields to o.
func budgetFields(o obj, b keys.Budget, now time.Time) {
	o["max_budget"] = usdOrNil(b.MaxBudget)
	o["soft_budget"] = usdOrNil(b.SoftBudget)
	o["budget_duration"] = orNil(b.Duration)
	o["spend"] = b.Spend
	o["budget_reset_at"] = ts(b.ResetAt(now))
}

// objectsAt renders vs with show at now: a JSON list, [] when empty.
func objectsAt[T any](vs []T, now time.Time, show func(v T, now time.Time) obj) []obj {
	out := make([]obj, 0, len(vs))
	for _, v := range vs {
		out = append(out, show(v, now))
	}
	return out
}

// keyObject is a key as /key/info and /key/list show it (LiteLLM's
// LiteLLM_VerificationToken); the secret is never in it.
func keyObject(k keys.Key, now time.Time) obj {
	o := obj{
		"token":                  k.Hash,
		"key_name":               orNil(k.KeyName),
		"key_alias":              orNil(k.Alias),
		"expires":                ts(k.ExpiresAt),
		"aliases":                aliasesOrEmpty(k.Aliases),
		"config":                 obj{},
		"user_id":                orNil(k.UserID),
		"team_id":                orNil(k.TeamID),
		"permissions":            obj{},
		"tags":                   strList(k.Tags),
		"blocked":                k.Blocked,
		"model_max_budget":       modelBudgetsObject(k.ModelMaxBudget),
		"model_rpm_limit":        modelLimitsOrNil(k.ModelRPM),
		"model_tpm_limit":        modelLimitsOrNil(k.ModelTPM),
		"model_spend":            modelSpendObject(k.Settings, now),
		"allowed_cache_controls": []string{},
		"created_at":             ts(k.CreatedAt),
		"created_by":             orNil(k.CreatedBy),
		"updated_at":             ts(k.UpdatedAt),
		"updated_by":             orNil(k.UpdatedBy),
		"current_period_spend":   k.Budget.Current(now),
		"bound_to":               boundObject(k.Bound),
	}
	return settingsFields(o, k.Settings, now)
}

// recordObject is what team, user and end user objects share: the id
// and alias (null when empty) under their fields' names, created_at and
// updated_at.
func recordObject(idField, id, aliasField, alias string, created, updated time.Time) obj {
	return obj{idField: id, aliasField: orNil(alias), "created_at": ts(created), "updated_at": ts(updated)}
}

func teamObject(t keys.Team, now time.Time) obj {
	members := make([]obj, 0, len(t.Members))
	admins, users := []string{}, []string{}
	for _, m := range t.Members {
		members = append(members, obj{"user_id": m.UserID, "user_email": orNil(m.Email), "role": m.Role})
		if m.Role == keys.MemberAdmin {
			admins = append(admins, m.UserID)
		} else {
			users = append(users, m.UserID)
		}
	}
	o := recordObject("team_id", t.ID, "team_alias", t.Alias, t.CreatedAt, t.UpdatedAt)
	o["organization_id"] = orNil(t.OrganizationID)
	o["admins"], o["members"], o["members_with_roles"] = admins, users, members
	o["blocked"] = t.Blocked
	teamAliasFields(o, t.Aliases)
	o = settingsFields(o, t.Settings, now)
	teamModelLimits(o, t.Settings)
	return o
}

func userObject(u keys.User, now time.Time) obj {
	o := recordObject("user_id", u.ID, "user_alias", u.Alias, u.CreatedAt, u.UpdatedAt)
	o["user_email"] = orNil(u.Email)
	o["user_role"] = string(u.Role)
	o["teams"] = strList(u.Teams)
	o["aliases"] = aliasesOrEmpty(u.Aliases)
	return settingsFields(o, u.Settings, now)
}

func membershipObject(m keys.Member, now time.Time) obj {
	return obj{
		"team_id":              m.GroupID,
		"user_id":              m.UserID,
		"role":                 m.Role,
		"spend":                m.Spend,
		"budget_id":            orNil(m.BudgetID),
		"litellm_budget_table": budgetTable(m.Budget, now),
	}
}

// budgetTable is a budget as LiteLLM's LiteLLM_BudgetTable shows it.
func budgetTable(b keys.Budget, now time.Time) obj {
	return obj{
		"max_budget":      usdOrNil(b.MaxBudget),
		"soft_budget":     usdOrNil(b.SoftBudget),
		"budget_duration": orNil(b.Duration),
		"budget_reset_at": ts(b.ResetAt(now)),
	}
}

func endUserObject(e keys.EndUser, now time.Time) obj {
	budget := budgetTable(e.Budget, now)
	budget["tpm_limit"], budget["rpm_limit"] = limitOrNil(e.TPMLimit), limitOrNil(e.RPMLimit)
	o := recordObject("user_id", e.ID, "alias", e.Alias, e.CreatedAt, e.UpdatedAt)
	o["blocked"] = e.Blocked
	o["spend"] = e.Spend
	o["allowed_model_region"], o["default_model"] = orNil(e.AllowedModelRegion), nil
	o["litellm_budget_table"] = budget
	o["budget_id"] = orNil(e.BudgetID)
	return o
}

// modelLimitsOrNil renders a key's per-model limits: null when none.
func modelLimitsOrNil(m map[string]int64) any {
	if len(m) == 0 {
		return nil
	}
	return m
}
