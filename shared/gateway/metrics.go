package gateway

import (
	"errors"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/metrics"
	"github.com/sluice-gw/sluice/shared/router"
)

// registerMetrics names the models a client may ask for (groups and
// aliases) and the deployments, so that metrics label only those.
func (h *Handler) registerMetrics() {
	if h.metrics == nil {
		return
	}
	var models []string
	deps := make([]metrics.Deployment, 0, len(h.cfg.Deployments))
	for _, d := range h.cfg.Deployments {
		models = append(models, d.ModelName)
		deps = append(deps, metrics.Deployment{Group: d.ModelName, ID: d.ID})
	}
	if md := h.cfg.ModerationDefault; md != nil {
		deps = append(deps, metrics.Deployment{Group: md.ModelName, ID: md.ID})
	}
	for alias := range h.cfg.Router.ModelGroupAlias {
		models = append(models, alias)
	}
	h.metrics.Register(models, deps)
}

// observe counts a finished request.
func (h *Handler) observe(c *Completion) {
	q := metrics.Request{
		RequestedModel: c.Model, Status: c.StatusCode, CallID: c.CallID, Stream: c.Stream,
		End: c.Ended, Latency: c.Latency, TTFT: c.TTFT,
		HasUsage: c.HasUsage, InputTokens: c.Usage.PromptTokens, OutputTokens: c.Usage.CompletionTokens,
		CostKnown: c.CostKnown, CostNanos: c.CostNanos, Retries: c.Retries, Fallbacks: c.Fallbacks,
	}
	if a := c.Attempt; a != nil {
		q.ModelGroup, q.Deployment = a.Group, a.Deployment.ID
	} else if c.Model != "" && c.StatusCode >= 400 {
		// Refused before any attempt (model access, every deployment
		// cooling down): still the group's failure, when there is one.
		q.ModelGroup = c.plan.group()
	}
	if p := c.Principal; p != nil {
		if p.Key != nil {
			q.KeyAlias = p.Key.Alias
		}
		if p.Team != nil {
			q.Team = p.Team.ID
		}
	}
	if c.Err != nil {
		refused := c.Refused
		if refused == "" && errors.Is(c.Err, router.ErrDeploymentLimits) {
			refused = string(limits.KindDeployment) // the router's own count, before any admission
		}
		switch apierr.KindOf(c.Err) {
		case apierr.RateLimited:
			q.RateLimited = refused
		case apierr.BudgetExceeded:
			q.BudgetExceeded = refused
		}
	}
	h.metrics.Observe(&q)
}

// observeRefused counts a request that authentication refused (no
// Completion: OnComplete never sees it).
func (h *Handler) observeRefused(c *Completion, err error) {
	e := apierr.From(err)
	end := time.Now()
	q := metrics.Request{Status: e.HTTPStatus(), CallID: c.CallID, End: end, Latency: end.Sub(c.Started)}
	if e.Kind == apierr.BudgetExceeded {
		var rf *refusal
		if errors.As(err, &rf) {
			q.BudgetExceeded = rf.scope
		}
	}
	h.metrics.Observe(&q)
}

// refusal is a budget error that names its scope, for metrics; clients
// see only the *apierr.Error it wraps.
type refusal struct {
	err   *apierr.Error
	scope string
}

func (r *refusal) Error() string { return r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

// scoped marks err (a budget error, or nil) as refused by scope.
func scoped(scope string, err error) error {
	var e *apierr.Error
	if !errors.As(err, &e) {
		return err
	}
	return &refusal{err: e, scope: scope}
}
