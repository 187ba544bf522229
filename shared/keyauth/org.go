package keyauth

import (
	"context"
	"errors"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/keys"
)

// org reads the organization of r's team into r.Org and checks that it
// may be used: it exists, is not blocked and is within its budget
// (LiteLLM's organization checks). A team with no organization reads
// nothing: no store call, no allocation.
func (a *Authenticator) org(ctx context.Context, r *Records, now time.Time) error {
	t := r.Team
	if t == nil || t.OrganizationID == "" {
		return nil
	}
	o, err := a.Keys.GetOrganization(ctx, t.OrganizationID)
	switch {
	case errors.Is(err, keys.ErrNotFound):
		// An organization with teams cannot be deleted; this is a team
		// read before its move out of a deleted one reached this cache.
		return deny(TeamGone, "organization", apierr.New(apierr.Unauthorized, "the key's organization %q no longer exists", t.OrganizationID))
	case err != nil:
		return unavailable("organization", "the API key's organization", err)
	}
	if o.Blocked {
		return deny(Blocked, "organization", apierr.New(apierr.Unauthorized, "organization %s is blocked", o.ID))
	}
	r.Org = &o
	return overBudget(r, KindOrg, now)
}
