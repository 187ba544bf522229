package router

import (
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/config"
)

// A router rebuilt over a reloaded model list keeps a deployment's
// counters when it still calls the same thing, and starts afresh when it
// calls something else.
func TestPreviousKeepsCountersOfSameCallee(t *testing.T) {
	load := func(rpm, base string) *config.Config {
		t.Helper()
		cfg, err := config.Load([]byte(`
model_list:
  - model_name: g
    litellm_params: {model: openai/m, api_key: k, api_base: `+base+`, rpm: `+rpm+`}
    model_info: {id: dep-1}
`), nil)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	now := time.Unix(1_800_000_000, 0)
	first := New(load("10", "https://a.example"), Options{})
	n1 := first.groups["g"].nodes[0]
	n1.addUsage(now, 3, 300)
	n1.inflight.Add(2)

	second := New(load("20", "https://a.example"), Options{Previous: first})
	n2 := second.groups["g"].nodes[0]
	if n2.d.RPM != 20 {
		t.Fatalf("new node has rpm %d", n2.d.RPM)
	}
	if reqs, toks := n2.usage(now); reqs != 3 || toks != 300 || n2.inflight.Load() != 2 {
		t.Fatalf("after a change of rpm: usage %d/%d, in flight %d; want 3/300, 2", reqs, toks, n2.inflight.Load())
	}
	n1.inflight.Add(-1) // a request of the old router ends
	if n2.inflight.Load() != 1 {
		t.Fatalf("in flight %d after the old router's request ended", n2.inflight.Load())
	}

	third := New(load("20", "https://b.example"), Options{Previous: second})
	if reqs, _ := third.groups["g"].nodes[0].usage(now); reqs != 0 {
		t.Fatalf("a deployment calling another base kept its usage (%d)", reqs)
	}
}
