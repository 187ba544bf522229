package adminapi

import (
	"context"

	"github.com/sluice-gw/sluice/shared/spend"
)

// teamAliases returns each team's alias by id (teams without one are
// absent), so that spend reports name teams as LiteLLM's do: by
// team_alias, joined from its team table at read time. One listing of the
// teams per report: admin traffic is rare and the table small.
func (h *Handler) teamAliases(ctx context.Context) (map[string]string, error) {
	ts, err := h.keys.Teams().List(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(ts))
	for _, t := range ts {
		if t.Alias != "" {
			out[t.ID] = t.Alias
		}
	}
	return out, nil
}

// teamName is how LiteLLM's global spend report names a team: its alias,
// else its id; "Unassigned Team" for spend of no team.
func teamName(aliases map[string]string, id string) string {
	switch {
	case id == "":
		return "Unassigned Team"
	case aliases[id] != "":
		return aliases[id]
	}
	return id
}

// teamsMeta is the metadata of each team of rows in LiteLLM's daily
// activity breakdown (entities: {"team_alias": ...}).
func (h *Handler) teamsMeta(ctx context.Context, rows []spend.DailyRow) (map[string]obj, error) {
	aliases, err := h.teamAliases(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]obj{}
	for _, r := range rows {
		if r.TeamID != "" {
			out[r.TeamID] = obj{"team_alias": orNil(aliases[r.TeamID])}
		}
	}
	return out, nil
}
