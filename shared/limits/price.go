package limits

import (
	"math"
	"time"
)

// Price is the worst-case price of the deployments a request may reach
// (its model group and every group its fallbacks lead to): the highest
// input price (cache prices included), the highest output price and the
// highest output cap over them. A request a budget applies to reserves
// Reserve of it (the gateway refuses, rather than guesses, when Unpriced is
// set, or NoCap is and the client sent no max_tokens).
type Price struct {
	Input, Output float64 // USD per token: the highest over the deployments
	MaxOutput     int64   // the highest output cap (max_output_tokens)
	NoCap         string  // a deployment with no output cap, if any
	Unpriced      string  // a deployment with no price, if any
}

// Join makes p the worst case of p and o.
func (p *Price) Join(o Price) {
	p.Input, p.Output, p.MaxOutput = max(p.Input, o.Input), max(p.Output, o.Output), max(p.MaxOutput, o.MaxOutput)
	if p.NoCap == "" {
		p.NoCap = o.NoCap
	}
	if p.Unpriced == "" {
		p.Unpriced = o.Unpriced
	}
}

// PromptSlack is added to the body's byte length to bound its prompt
// tokens: a token is at least one byte of text, and the upstream body
// differs from the client's by the model name and the gateway's own fields.
const PromptSlack = 256

// nanosPerUSD is the unit of every budget counter (keys.NanosPerUSD).
const nanosPerUSD = 1_000_000_000

// MaxReserve bounds a reservation, so that adding it to a counter cannot
// overflow.
const MaxReserve = math.MaxInt64 / 2

// Reserve returns the nano-USD to hold for a request of bodyBytes bytes
// that may produce outTokens tokens (see OutputTokens): its worst-case cost
// rounded up, plus one, and at most MaxReserve: never below the exact
// worst case when that is below MaxReserve. Negative sizes and prices
// count as zero; a cost that is not a number saturates.
func (p Price) Reserve(bodyBytes, outTokens int64) int64 {
	in := float64(AddSat(max(bodyBytes, 0), PromptSlack))
	nanos := (in*max(p.Input, 0) + float64(max(outTokens, 0))*max(p.Output, 0)) * nanosPerUSD
	// The few float64 operations above round by less than nanos * 2^-50
	// in all: the slack (and the +1) keep the result above the exact cost.
	nanos = math.Ceil(nanos) + 1 + math.Floor(nanos*0x1p-50)
	if !(nanos < MaxReserve) { // NaN too
		return MaxReserve
	}
	return int64(nanos)
}

// HoldGrace is how long a hold outlives its request (the request's
// deadline, else the router's timeout) before the sweeper may release it.
// It must cover the latest a spend event can still arrive in the normal
// course: once released, the event's cost lands on top of what was
// admitted since in the reservation's room. The spend queue (template.yaml)
// hands a failed batch back after its visibility timeout, 180 s, for up to
// maxReceiveCount 5 receives, each handled within the spend function's 30 s
// timeout: about 15 minutes from the first receive, which follows the
// request by the 2 s batching window. 20 minutes covers that with room for
// a briefly throttled consumer. The price: a request that crashed before
// sending its event keeps its reservation that long. An event that comes
// later still (a backlog of more than HoldGrace, a replay from the
// dead-letter queue) is counted in full on top (README, strict budgets).
const HoldGrace = 20 * time.Minute

// HoldExpiry is when the sweeper may release the hold of a request made at
// now and bounded by bound (its deadline or timeout).
func HoldExpiry(now time.Time, bound time.Duration) time.Time {
	return now.Add(time.Duration(AddSat(int64(max(bound, 0)), int64(HoldGrace))))
}
