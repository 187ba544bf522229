package limits_test

import (
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/limits"
)

// extremes are the client numbers the reservation and the estimate must
// survive: every one of them can be sent as max_tokens or n.
var extremes = []int64{math.MinInt64, -1 << 53, -1, 0, 1, 2, 4, 128, 129, 1 << 31, 1 << 53, 1 << 62, math.MaxInt64 - 1, math.MaxInt64}

func TestSaturating(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want int64
	}{
		{"add", limits.AddSat(1, 2), 3},
		{"add max", limits.AddSat(math.MaxInt64, 1), math.MaxInt64},
		{"add 2^62 twice", limits.AddSat(1<<62, 1<<62), math.MaxInt64},
		{"add min", limits.AddSat(math.MinInt64, -1), math.MinInt64},
		{"add mixed", limits.AddSat(math.MaxInt64, math.MinInt64), -1},
		{"mul", limits.MulSat(3, 4), 12},
		{"mul 2^62 x 4", limits.MulSat(1<<62, 4), math.MaxInt64},
		{"mul 2^62 x 2", limits.MulSat(1<<62, 2), math.MaxInt64},
		{"mul max x max", limits.MulSat(math.MaxInt64, math.MaxInt64), math.MaxInt64},
		{"mul negative", limits.MulSat(-5, 4), 0},
		{"mul zero", limits.MulSat(0, math.MaxInt64), 0},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}

// exactReserve is the exact worst-case cost in nano-USD (big.Float): the
// invariant Reserve must never fall below.
func exactReserve(p limits.Price, body, out int64) *big.Float {
	in := new(big.Float).SetInt64(max(body, 0))
	in.Add(in, big.NewFloat(limits.PromptSlack))
	in.Mul(in, big.NewFloat(p.Input))
	o := new(big.Float).SetInt64(max(out, 0))
	o.Mul(o, big.NewFloat(p.Output))
	in.Add(in, o)
	return in.Mul(in, big.NewFloat(1e9))
}

// checkReserve asserts the reservation's invariants for one request.
func checkReserve(t *testing.T, p limits.Price, body, maxTokens, n int64) {
	t.Helper()
	out := p.OutputTokens(maxTokens, n)
	if out < 0 {
		t.Fatalf("OutputTokens(%d, %d) = %d < 0 (price %+v)", maxTokens, n, out, p)
	}
	// The real output worst case: max_tokens (else the cap; clamped to a
	// cap every deployment has) times n, when it fits in an int64.
	per := maxTokens
	if per <= 0 {
		per = p.MaxOutput
	} else if p.NoCap == "" && p.MaxOutput > 0 {
		per = min(per, p.MaxOutput)
	}
	nn := min(max(n, 1), 128)
	if per > 0 && per <= math.MaxInt64/nn && out != per*nn {
		t.Fatalf("OutputTokens(%d, %d) = %d, want %d (price %+v)", maxTokens, n, out, per*nn, p)
	}
	if per > math.MaxInt64/nn && out != math.MaxInt64 {
		t.Fatalf("OutputTokens(%d, %d) = %d, want saturated (price %+v)", maxTokens, n, out, p)
	}
	amt := p.Reserve(body, out)
	if amt < 1 || amt > limits.MaxReserve {
		t.Fatalf("Reserve(%d, %d) = %d, want 1..%d (price %+v)", body, out, amt, int64(limits.MaxReserve), p)
	}
	if math.IsNaN(p.Input) || math.IsNaN(p.Output) || p.Input < 0 || p.Output < 0 || math.IsInf(p.Input, 0) || math.IsInf(p.Output, 0) {
		return
	}
	exact := exactReserve(p, body, out)
	if exact.Cmp(big.NewFloat(limits.MaxReserve)) < 0 && new(big.Float).SetInt64(amt).Cmp(exact) < 0 {
		t.Fatalf("Reserve(%d, %d) = %d below the worst case %s (price %+v)", body, out, amt, exact.Text('f', 3), p)
	}
}

// The reservation, driven with extreme client numbers, is never negative,
// never below the request's real worst case when that fits, and saturates
// instead of wrapping.
func TestReserveExtremes(t *testing.T) {
	prices := []limits.Price{
		{Input: 1e-6, Output: 2e-6, MaxOutput: 4096},
		{Input: 1e-6, Output: 2e-6, MaxOutput: 4096, NoCap: "d2"},
		{Input: 1e-6, Output: 2e-6, NoCap: "d"},
		{Input: 0, Output: 0, MaxOutput: 1},
		{Input: 1e308, Output: 1e308, MaxOutput: 1 << 53},
		{Input: math.NaN(), Output: 1e-6, MaxOutput: 10},
		{Input: -1, Output: -1, MaxOutput: 10},
		{Input: 1e-6, Output: math.Inf(1), NoCap: "d"},
	}
	for _, p := range prices {
		for _, body := range extremes {
			for _, mt := range extremes {
				for _, n := range extremes {
					checkReserve(t, p, body, mt, n)
				}
			}
		}
	}
	// The case: 2^62 x 4 wrapped to 0, so only the prompt was reserved.
	p := limits.Price{Input: 1e-6, Output: 2e-6, NoCap: "d"}
	if got := p.Reserve(100, p.OutputTokens(1<<62, 4)); got != limits.MaxReserve {
		t.Errorf("max_tokens 2^62, n 4: reserved %d, want %d", got, int64(limits.MaxReserve))
	}
}

// The admitted token estimate is never negative, saturates at
// MaxTokenEstimate, and takes max_tokens at most at the output cap.
func TestTokenEstimateExtremes(t *testing.T) {
	for _, prompt := range extremes {
		for _, mt := range extremes {
			for _, n := range extremes {
				for _, outCap := range []int64{0, 100, math.MaxInt64} {
					got := limits.TokenEstimate(prompt, mt, n, outCap)
					if got < 0 || got > limits.MaxTokenEstimate {
						t.Fatalf("TokenEstimate(%d, %d, %d, %d) = %d, want 0..%d", prompt, mt, n, outCap, got, int64(limits.MaxTokenEstimate))
					}
					if prompt >= 0 && got < min(prompt, limits.MaxTokenEstimate) {
						t.Fatalf("TokenEstimate(%d, %d, %d, %d) = %d, below the prompt", prompt, mt, n, outCap, got)
					}
				}
			}
		}
	}
	for _, tc := range []struct {
		prompt, mt, n, outCap, want int64
	}{
		{10, 100, 0, 0, 110},
		{10, 100, 3, 0, 310},
		{10, 1 << 62, 4, 0, limits.MaxTokenEstimate},
		{10, math.MaxInt64, 1, 0, limits.MaxTokenEstimate},
		{10, math.MaxInt64, 4, 50, 210},
		{10, 0, 4, 50, 10},
	} {
		if got := limits.TokenEstimate(tc.prompt, tc.mt, tc.n, tc.outCap); got != tc.want {
			t.Errorf("TokenEstimate(%d, %d, %d, %d) = %d, want %d", tc.prompt, tc.mt, tc.n, tc.outCap, got, tc.want)
		}
	}
}

// The admission check adds a request's tokens to a window's count without
// wrapping past the tpm limit.
func TestRoomForSaturates(t *testing.T) {
	it := limits.Item{TPMCap: 1000}
	if r := it.RoomFor(0, 10, math.MaxInt64); r != limits.ReasonTPM {
		t.Errorf("RoomFor(tok 10, tokens MaxInt64) = %q, want %q", r, limits.ReasonTPM)
	}
}

func FuzzReserve(f *testing.F) {
	f.Add(int64(100), int64(1<<62), int64(4), 1e-6, 2e-6, int64(0), true)
	f.Add(int64(100), int64(1<<62), int64(2), 1e-6, 2e-6, int64(4096), false)
	f.Add(int64(-1), int64(math.MaxInt64), int64(math.MaxInt64), 1e308, math.NaN(), int64(1<<53), false)
	f.Add(int64(0), int64(0), int64(0), 0.0, 0.0, int64(0), false)
	f.Fuzz(func(t *testing.T, body, maxTokens, n int64, in, out float64, maxOutput int64, noCap bool) {
		p := limits.Price{Input: in, Output: out, MaxOutput: max(maxOutput, 0)}
		if noCap {
			p.NoCap = "d"
		}
		checkReserve(t, p, body, maxTokens, n)
		if e := limits.TokenEstimate(body, maxTokens, n, maxOutput); e < 0 || e > limits.MaxTokenEstimate {
			t.Fatalf("TokenEstimate(%d, %d, %d, %d) = %d", body, maxTokens, n, maxOutput, e)
		}
	})
}

// A hold's expiry saturates rather than wraps into the past.
func TestHoldExpirySaturates(t *testing.T) {
	now := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	for _, bound := range []time.Duration{-1, 0, time.Minute, math.MaxInt64} {
		if got := limits.HoldExpiry(now, bound); got.Before(now.Add(limits.HoldGrace)) {
			t.Errorf("HoldExpiry(now, %v) = %v, before now + HoldGrace", bound, got)
		}
	}
}
