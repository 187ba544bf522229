package router

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/sluice-gw/sluice/shared/config"
)

// node is a deployment with the per-instance statistics strategies read.
type node struct {
	d        *config.Deployment
	provider string // "provider/model", for logs
	*stats          // shared with the previous router's node of the same deployment (Options.Previous)
}

// stats are a node's counters: a router rebuilt over a changed model list
// (store_model_in_db) keeps them for each deployment that still calls the
// same thing.
type stats struct {
	inflight atomic.Int64
	latency  atomic.Uint64 // EWMA of seconds per attempt, as float64 bits; 0 = no sample
	minute   atomic.Int64  // unix minute the counters below belong to
	reqs     atomic.Int64  // requests this minute
	tokens   atomic.Int64  // tokens this minute
}

// label is "provider/model" for logs, built once unless the deployment is a
// wildcard serving many models.
func (n *node) label(model string) string {
	if model == n.d.Model {
		return n.provider
	}
	return n.d.Provider + "/" + model
}

func (n *node) usage(now time.Time) (reqs, tokens int64) {
	if n.minute.Load() != now.Unix()/60 {
		return 0, 0
	}
	return n.reqs.Load(), n.tokens.Load()
}

func (n *node) addUsage(now time.Time, reqs, tokens int64) {
	m := now.Unix() / 60
	if old := n.minute.Load(); old != m {
		if n.minute.CompareAndSwap(old, m) {
			n.reqs.Store(0)
			n.tokens.Store(0)
		}
	}
	n.reqs.Add(reqs)
	n.tokens.Add(tokens)
}

func (n *node) observeLatency(d time.Duration) {
	const alpha = 0.2
	s := d.Seconds()
	for {
		old := n.latency.Load()
		v := s
		if old != 0 {
			v = alpha*s + (1-alpha)*math.Float64frombits(old)
		}
		if n.latency.CompareAndSwap(old, math.Float64bits(v)) {
			return
		}
	}
}

// Selector picks one deployment among filtered candidates (never empty).
// Each routing strategy is one small Selector.
type Selector interface {
	Select(cands []*node, now time.Time, rnd func() float64) *node
}

// NewSelector returns the Selector for a routing_strategy name.
func NewSelector(strategy string) Selector {
	switch strategy {
	case "least-busy":
		return leastBusy{}
	case "latency-based-routing":
		return latencyBased{explore: 0.1}
	case "usage-based-routing-v2":
		return usageBased{}
	case "cost-based-routing":
		return costBased{}
	}
	return simpleShuffle{}
}

// simpleShuffle is LiteLLM's default: a weighted random choice by weight, else
// rpm, else tpm — a field is used when the first candidate sets it and some
// candidate has a positive value (with every value zero the next field is
// tried, as LiteLLM v1.100 does). With no usable field the choice is
// uniform, so weight 0 is not an off switch (model_info.blocked is).
type simpleShuffle struct{}

var shuffleFields = [...]struct {
	set    func(*config.Deployment) bool
	weight func(*config.Deployment) float64
}{
	{func(d *config.Deployment) bool { return d.HasWeight }, func(d *config.Deployment) float64 { return d.Weight }},
	{func(d *config.Deployment) bool { return d.RPM > 0 }, func(d *config.Deployment) float64 { return float64(d.RPM) }},
	{func(d *config.Deployment) bool { return d.TPM > 0 }, func(d *config.Deployment) float64 { return float64(d.TPM) }},
}

func (simpleShuffle) Select(c []*node, _ time.Time, rnd func() float64) *node {
	if len(c) == 1 {
		return c[0]
	}
	for _, f := range shuffleFields {
		if !f.set(c[0].d) {
			continue
		}
		var total float64
		for _, n := range c {
			total += f.weight(n.d)
		}
		if total <= 0 {
			continue
		}
		x := rnd() * total
		var last *node
		for _, n := range c {
			w := f.weight(n.d)
			if w <= 0 {
				continue
			}
			if x -= w; x < 0 {
				return n
			}
			last = n
		}
		return last // rounding left x at ~0: the last weighted candidate
	}
	return c[int(rnd()*float64(len(c)))%len(c)]
}

// leastBusy picks the deployment with the fewest requests in flight on this
// instance (ties broken at random).
type leastBusy struct{}

func (leastBusy) Select(c []*node, _ time.Time, rnd func() float64) *node {
	return pickMin(c, rnd, func(n *node) float64 { return float64(n.inflight.Load()) })
}

// latencyBased picks the lowest moving-average latency; a small share of
// requests explores at random, and deployments never measured go first.
type latencyBased struct{ explore float64 }

func (l latencyBased) Select(c []*node, _ time.Time, rnd func() float64) *node {
	if rnd() < l.explore {
		return c[int(rnd()*float64(len(c)))%len(c)]
	}
	return pickMin(c, rnd, func(n *node) float64 { return math.Float64frombits(n.latency.Load()) })
}

// usageBased picks the deployment with the most RPM/TPM headroom left this
// minute (as a share of its limit; unlimited deployments by least use).
type usageBased struct{}

func (usageBased) Select(c []*node, now time.Time, rnd func() float64) *node {
	return pickMin(c, rnd, func(n *node) float64 {
		reqs, toks := n.usage(now)
		used := 0.0
		if n.d.RPM > 0 {
			used = math.Max(used, float64(reqs)/float64(n.d.RPM))
		}
		if n.d.TPM > 0 {
			used = math.Max(used, float64(toks)/float64(n.d.TPM))
		}
		if n.d.RPM == 0 && n.d.TPM == 0 {
			used = float64(reqs) / 1e9
		}
		return used
	})
}

// costBased picks the cheapest deployment per token.
type costBased struct{}

func (costBased) Select(c []*node, _ time.Time, rnd func() float64) *node {
	return pickMin(c, rnd, func(n *node) float64 { return n.d.InputCostPerToken + n.d.OutputCostPerToken })
}

func pickMin(c []*node, rnd func() float64, score func(*node) float64) *node {
	best := math.Inf(1)
	var ties []*node
	for _, n := range c {
		s := score(n)
		switch {
		case s < best:
			best, ties = s, append(ties[:0], n)
		case s == best:
			ties = append(ties, n)
		}
	}
	return ties[int(rnd()*float64(len(ties)))%len(ties)]
}

func defaultRand() float64 { return rand.Float64() }
