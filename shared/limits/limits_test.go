package limits_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/limits"
)

// A budget counter's name reads back as the counter it names, and nothing
// else reads as one.
func TestParseBudgetCounter(t *testing.T) {
	period := time.Date(2031, 2, 1, 0, 0, 0, 0, time.UTC)
	for _, b := range []limits.BudgetCounter{
		{Kind: "key", ID: "0123abcd"},
		{Kind: "team", ID: "t-1", Period: period},
		{Kind: "member", ID: "team#user", Period: period}, // a member's id holds a '#'
		{Kind: "enduser", ID: "#"},
		{Kind: "team", ID: "t-1", Period: period, Shard: 7}, // a hot budget's shard
		{Kind: "key", ID: "k.1", Shard: 63},
	} {
		got, err := limits.ParseBudgetCounter(b.Counter())
		if err != nil || got.Kind != b.Kind || got.ID != b.ID || !got.Period.Equal(b.Period) || got.Shard != b.Shard {
			t.Errorf("ParseBudgetCounter(%q) = %+v, %v; want %+v", b.Counter(), got, err, b)
		}
	}
	for _, name := range []string{"", "bud#", "bud#key", "bud#key#0", "bud#key##0", "bud##k#0", "bud#key#k#x", "bud#key#k#007", "rl#key#k#0#0", "bud#key#k#0.0", "bud#key#k#0.", "bud#key#k#0.64", "bud#key#k#0.-1", "bud#key#k#0.01", "bud#key#k#0.x"} {
		if b, err := limits.ParseBudgetCounter(name); !errors.Is(err, limits.ErrInvalid) {
			t.Errorf("ParseBudgetCounter(%q) = %+v, %v; want ErrInvalid", name, b, err)
		}
	}
}

// The reservation is the worst case rounded up, plus one nano-USD, and
// never so large that a counter could overflow.
func TestPriceReserve(t *testing.T) {
	for _, tt := range []struct {
		name      string
		p         limits.Price
		body, out int64
		want      int64
	}{
		// (100 + PromptSlack) x $0.5 + 10 x $0.25 = $180.5
		{"prompt and output", limits.Price{Input: 0.5, Output: 0.25}, 100, 10, 180_500_000_001},
		{"embeddings: no output", limits.Price{Input: 0.5, Output: 0.25}, 100, 0, 178_000_000_001},
		{"free", limits.Price{}, 100, 10, 1},
		{"rounded up", limits.Price{Input: 1e-12}, 0, 0, 2}, // 256 x 1e-12 x 1e9 = 0.000256
		{"capped", limits.Price{Input: 1e300}, 1, 1, math.MaxInt64 / 2},
	} {
		if got := tt.p.Reserve(tt.body, tt.out); got != tt.want {
			t.Errorf("%s: Reserve(%d, %d) = %d, want %d", tt.name, tt.body, tt.out, got, tt.want)
		}
	}
}

// Join keeps the highest prices and cap, and the first deployment without
// a price or a cap.
func TestPriceJoin(t *testing.T) {
	p := limits.Price{Input: 1, Output: 4, MaxOutput: 100, NoCap: "a"}
	p.Join(limits.Price{Input: 2, Output: 3, MaxOutput: 50, NoCap: "b", Unpriced: "c"})
	p.Join(limits.Price{Unpriced: "d"})
	if want := (limits.Price{Input: 2, Output: 4, MaxOutput: 100, NoCap: "a", Unpriced: "c"}); p != want {
		t.Errorf("joined %+v, want %+v", p, want)
	}
}

// A hold outlives its request's bound by HoldGrace; a bound already past
// counts as none.
func TestHoldExpiry(t *testing.T) {
	now := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := limits.HoldExpiry(now, time.Minute); !got.Equal(now.Add(time.Minute + limits.HoldGrace)) {
		t.Errorf("HoldExpiry(now, 1m) = %v", got)
	}
	if got := limits.HoldExpiry(now, -time.Minute); !got.Equal(now.Add(limits.HoldGrace)) {
		t.Errorf("HoldExpiry(now, -1m) = %v", got)
	}
}

func TestBound(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(left time.Duration) context.Context {
		ctx, cancel := context.WithDeadline(context.Background(), now.Add(left))
		t.Cleanup(cancel)
		return ctx
	}
	tests := []struct {
		name       string
		ctx        context.Context
		max        time.Duration
		want       time.Duration
		byDeadline bool
	}{
		{"no deadline: the cap", context.Background(), 3 * time.Second, 3 * time.Second, false},
		{"no deadline, no cap: the default", context.Background(), 0, limits.DefaultAdmitTimeout, false},
		{"a far deadline: the cap", at(time.Minute), 3 * time.Second, 3 * time.Second, false},
		{"a near deadline: it, less the margin", at(5 * time.Second), 10 * time.Second, 5*time.Second - limits.AdmitMargin, true},
		{"a very near deadline: half of it", at(time.Second), 10 * time.Second, 500 * time.Millisecond, true},
		{"a passed deadline: none", at(-time.Second), 10 * time.Second, -500 * time.Millisecond, true},
	}
	for _, tt := range tests {
		got, by := limits.Bound(tt.ctx, now, tt.max)
		if got != tt.want || by != tt.byDeadline {
			t.Errorf("%s: Bound = %v, %v; want %v, %v", tt.name, got, by, tt.want, tt.byDeadline)
		}
	}
}
