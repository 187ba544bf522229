package limits

import (
	"math"

	"github.com/sluice-gw/sluice/shared/wire"
)

// Every token, money and time quantity derived from a client's numbers
// (max_tokens, n, the body's size) is computed here, saturating instead
// of wrapping: a client can ask for 2^62 tokens four times, and the
// product must read as "a lot", never as 0 or a negative.

// MaxTokenEstimate bounds a request's admitted token estimate: far above
// any model's context, and low enough that the counters it is added to
// cannot overflow (2^23 such admissions in one window would be needed).
const MaxTokenEstimate = 1 << 40

// AddSat is a+b, saturated at the int64 bounds.
func AddSat(a, b int64) int64 {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && s >= 0:
		return math.MinInt64
	}
	return s
}

// MulSat is a*b for a, b >= 0 (a negative counts as 0), saturated at
// math.MaxInt64.
func MulSat(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// OutputTokens is the output to reserve for a request asking for
// maxTokens (<= 0: not given) per choice and n choices (<= 1: one): the
// price's output cap when the client gives no max_tokens, else max_tokens
// clamped to that cap when every deployment has one (NoCap empty).
//
// A max_tokens above every deployment's output cap is clamped, not
// refused: the gateway does not know which deployment will serve, the
// upstream still applies its own limit, and clients (and SDK defaults)
// often send a generous max_tokens that LiteLLM passes on. The clamp
// trusts max_output_tokens exactly as the reservation without max_tokens
// already does. With a deployment of no known cap, max_tokens is taken as
// given (saturated).
func (p Price) OutputTokens(maxTokens, n int64) int64 {
	per := maxTokens
	switch {
	case per <= 0:
		per = max(p.MaxOutput, 0)
	case p.NoCap == "" && p.MaxOutput > 0:
		per = min(per, p.MaxOutput)
	}
	return MulSat(per, min(max(n, 1), wire.MaxN))
}

// TokenEstimate is the token count a request is admitted with against tpm
// limits: its prompt estimate plus max_tokens (<= 0: none; clamped to
// outCap when outCap > 0, the deployment's output limit, as OutputTokens
// clamps) times n (<= 1: one; at most wire.MaxN, which wire.Parse
// enforces), never negative and at most MaxTokenEstimate.
func TokenEstimate(prompt, maxTokens, n, outCap int64) int64 {
	per := max(maxTokens, 0)
	if outCap > 0 {
		per = min(per, outCap)
	}
	out := MulSat(per, min(max(n, 1), wire.MaxN))
	return min(AddSat(max(prompt, 0), out), MaxTokenEstimate)
}
