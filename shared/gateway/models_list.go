package gateway

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"sort"
	"strconv"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/router"
)

// modelsQuery is LiteLLM's query of GET /v1/models.
type modelsQuery struct {
	includeGroups bool   // include_model_access_groups: also list the access groups the caller may use
	onlyGroups    bool   // only_model_access_groups: list only those
	wildcards     bool   // return_wildcard_routes: also list wildcard routes ("openai/*")
	teamID        string // team_id: list for this team instead of the key's own
}

func parseModelsQuery(q url.Values) (modelsQuery, error) {
	var m modelsQuery
	for name, dst := range map[string]*bool{
		"include_model_access_groups": &m.includeGroups,
		"only_model_access_groups":    &m.onlyGroups,
		"return_wildcard_routes":      &m.wildcards,
	} {
		if v := q.Get(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				e := apierr.New(apierr.InvalidRequest, "%s must be true or false, got %q", name, v)
				e.Param = name
				return m, e
			}
			*dst = b
		}
	}
	m.teamID = q.Get("team_id")
	return m, nil
}

// modelsFor lists the models p may use: every model group and visible
// alias, unless its key, team or user names a list; with LiteLLM's query
// filters. With no filter and no restriction it is the body built at start.
func (h *Handler) modelsFor(ctx context.Context, p *Principal, query url.Values) ([]byte, error) {
	q, err := parseModelsQuery(query)
	if err != nil {
		return nil, err
	}
	if q.teamID != "" {
		if p, err = h.asTeam(ctx, p, q.teamID); err != nil {
			return nil, err
		}
	}
	if !p.restricted() && q == (modelsQuery{}) {
		return h.allModelsBody(), nil
	}
	var out []router.Model
	if q.includeGroups || q.onlyGroups {
		names := make([]string, 0, len(h.cfg.AccessGroups))
		for name := range h.cfg.AccessGroups {
			if holdsGroup(p, name) {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		for _, name := range names {
			out = append(out, router.Model{ID: name, OwnedBy: "openai"})
		}
		if q.onlyGroups {
			return modelsJSON(out), nil
		}
	}
	candidates := h.router.Models()
	if h.hasWildcards {
		candidates = append(candidates, h.wildcardModels()...)
	}
	if q.wildcards {
		candidates = append(candidates, h.router.WildcardRoutes()...)
	}
	return modelsJSON(h.allowedOf(p, out, candidates)), nil
}

// allowedOf appends to out the models of candidates that p may use.
func (h *Handler) allowedOf(p *Principal, out, candidates []router.Model) []router.Model {
	for _, m := range candidates {
		group, err := h.router.Group(m.ID)
		if err == nil && allowModel(p, h.cfg.AccessGroups, m.ID, group) == nil {
			out = append(out, m)
		}
	}
	return out
}

// asTeam is p listing models as a member of team id (LiteLLM's team_id
// filter): the master key may name any team; a key may name its own team,
// or a team its user is a member of (else 403).
func (h *Handler) asTeam(ctx context.Context, p *Principal, id string) (*Principal, error) {
	a, ok := h.auth.(*access)
	if !ok || a.keys == nil {
		return nil, apierr.New(apierr.NotFound, "team %q not found: the gateway has no key store", id)
	}
	t, err := a.keys.GetTeam(ctx, id)
	switch {
	case errors.Is(err, keys.ErrNotFound):
		e := apierr.New(apierr.NotFound, "team %q not found", id)
		e.Param = "team_id"
		return nil, e
	case err != nil:
		return nil, unavailable("the team", err)
	}
	member := p.Master || (p.Key != nil && p.Key.TeamID == id) ||
		(p.User != nil && slices.ContainsFunc(t.Members, func(m keys.TeamMember) bool { return m.UserID == p.User.ID }))
	if p.Key != nil && !p.Key.Bound.Holds(t.ID, t.OrganizationID) {
		// A key minted for its user by a team or org admin reaches only
		// its scope (docs/admin-api.md, Roles), whatever its user's teams.
		e := apierr.New(apierr.Forbidden, "this key is bound to its team or organization: it may not name team %q", id)
		e.Param = "team_id"
		return nil, e
	}
	if !member {
		e := apierr.New(apierr.Forbidden, "not a member of team %q", id)
		e.Param = "team_id"
		return nil, e
	}
	q := *p
	q.Team = &t
	return &q, nil
}
