package adminapi

import (
	"context"
	"log/slog"
	"time"

	"github.com/sluice-gw/sluice/shared/config"
)

// CooldownReader is what /model/info reads of the cooldown store: which
// deployments are cooling down, in one batch (cooldown.Store implements it).
type CooldownReader interface {
	CoolingDown(ctx context.Context, ids []string, now time.Time) (map[string]time.Time, error)
}

// addCooldowns sets two Sluice extension fields in each deployment's
// model_info (data[i] shows deps[i]): cooldown_until (RFC 3339 UTC, or
// null) and cooling_down. LiteLLM's /model/info has no such fields; its
// clients ignore unknown ones. The state is read in one batch; when there is
// no store or it fails, both are null (unknown), the route still answers
// and the failure is logged: cooldowns are advisory.
func (h *Handler) addCooldowns(ctx context.Context, deps []*config.Deployment, data []obj) {
	var until map[string]time.Time
	known := false
	if h.cooldowns != nil && len(deps) > 0 {
		ids := make([]string, len(deps))
		for i, d := range deps {
			ids[i] = d.ID
		}
		got, err := h.cooldowns.CoolingDown(ctx, ids, h.now())
		if err != nil {
			h.log.LogAttrs(ctx, slog.LevelWarn, "model/info: cooldown store failed; cooling_down is null", slog.String("error", err.Error()))
		} else {
			until, known = got, true
		}
	}
	for i, d := range deps {
		info := data[i]["model_info"].(obj)
		info["cooldown_until"], info["cooling_down"] = nil, nil
		if !known {
			continue
		}
		u, cooling := until[d.ID]
		info["cooling_down"] = cooling
		if cooling {
			info["cooldown_until"] = u.UTC().Format(time.RFC3339)
		}
	}
}
