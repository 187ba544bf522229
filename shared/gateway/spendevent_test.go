package gateway_test

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/gateway"
	"github.com/sluice-gw/sluice/shared/keyauth"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/router"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/wire"
)

func TestSpendEvent(t *testing.T) {
	start := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	k := &keys.Key{Hash: keys.HashSecret("sk-x"), Alias: "ci", TeamID: "t1", UserID: "u1"}
	d := &config.Deployment{ID: "dep-1", ModelName: "gpt-4o", Provider: "azure", Model: "gpt-4o-2024", APIBase: "https://x.example"}
	c := &gateway.Completion{
		CallID: "call-1", Principal: &gateway.Principal{KeyHash: k.Hash, Records: keyauth.Records{Key: k}},
		Model: "my-alias", EndUser: "cust", Tags: []string{"a", strings.Repeat("t", 300)},
		Attempt:  &router.Attempt{Deployment: d, Group: "gpt-4o", ProviderModel: "gpt-4o-2024"},
		Attempts: 3, Retries: 1, Fallbacks: 1,
		Usage:    wire.Usage{PromptTokens: 10, CompletionTokens: 4, TotalTokens: 14, CachedTokens: 2},
		HasUsage: true, UsageEstimated: true, CostNanos: 1234, CostKnown: true,
		Started: start, Ended: start.Add(time.Second), Stream: true, Operation: wire.OpChat, StatusCode: 200,
	}
	e := c.SpendEvent()
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
	want := spend.Event{Version: 1, RequestID: "call-1", Start: start, End: start.Add(time.Second), Status: spend.StatusSuccess,
		KeyHash: k.Hash, KeyAlias: "ci", TeamID: "t1", UserID: "u1", EndUser: "cust", ModelGroup: "my-alias",
		DeploymentID: "dep-1", Provider: "azure", Model: "gpt-4o-2024", APIBase: "https://x.example", CallType: "chat",
		PromptTokens: 10, CompletionTokens: 4, CachedTokens: 2, Cost: 1234, CostKnown: true, UsageEstimated: true,
		Attempts: 3, Retries: 1, Fallbacks: 1, Tags: []string{"a", strings.Repeat("t", spend.MaxIDLen)}, Stream: true, StatusCode: 200}
	if string(spend.Encode(&e)) != string(spend.Encode(&want)) {
		t.Errorf("event\n %s\nwant\n %s", spend.Encode(&e), spend.Encode(&want))
	}
	c.Err = errors.New("boom")
	if e := c.SpendEvent(); e.Status != spend.StatusFailure {
		t.Errorf("status %s, want failure", e.Status)
	}
	c.ClientGone = true
	if e := c.SpendEvent(); e.Status != spend.StatusDisconnected {
		t.Errorf("status %s, want client_disconnected", e.Status)
	}
	// The master key, no attempt, unknown cost: still a valid event.
	bare := &gateway.Completion{CallID: "call-2", Principal: &gateway.Principal{Master: true}, Started: start, Err: errors.New("x")}
	e = bare.SpendEvent()
	if err := e.Validate(); err != nil || e.KeyHash != "" || e.CostKnown {
		t.Errorf("bare completion: %+v, %v", e, err)
	}
}

// A spend event the gateway builds must survive the queue: Encode, Decode and the
// consumer's Validate. JSON replaces every invalid UTF-8 byte by U+FFFD (3
// bytes), so a string cut inside a rune, or holding invalid bytes, used to
// grow past its limit on the way; the consumer rejected the event to the
// dead-letter queue and the request's spend was never counted.
func TestSpendEventSurvivesQueue(t *testing.T) {
	a := func(n int) string { return strings.Repeat("a", n) }
	adversarial := map[string]string{
		"2-byte rune straddling the limit": a(spend.MaxIDLen-1) + "é",
		"3-byte rune straddling the limit": a(spend.MaxIDLen-2) + "€" + "z",
		"4-byte rune straddling the limit": a(spend.MaxIDLen-2) + "😀",
		"4-byte rune ending at the limit":  a(spend.MaxIDLen-4) + "😀" + "z",
		"invalid byte before the limit":    a(spend.MaxIDLen-2) + "\xff",
		"invalid byte at the limit":        a(spend.MaxIDLen-1) + "\xff" + "b",
		"short, invalid bytes":             "cust\xff\xfe\xc3",
		"only invalid bytes":               strings.Repeat("\xff", 3*spend.MaxIDLen),
		"truncated rune at the end":        a(spend.MaxIDLen-10) + "\xe2\x82",
		"encoded surrogate":                a(spend.MaxIDLen-3) + "\xed\xa0\x80",
		"long runes":                       strings.Repeat("é€😀", 100),
	}
	start := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	for name, s := range adversarial {
		k := &keys.Key{Hash: keys.HashSecret("sk-x"), Alias: s, TeamID: s, UserID: s}
		d := &config.Deployment{ID: s, Provider: s, Model: s, APIBase: "https://x.example/" + strings.Repeat(s, 5)}
		c := &gateway.Completion{
			CallID: "call-1", Principal: &gateway.Principal{KeyHash: k.Hash, Records: keyauth.Records{Key: k}},
			Model: s, EndUser: s, Tags: []string{s, "ok", s},
			Attempt:   &router.Attempt{Deployment: d, ProviderModel: s},
			CostNanos: 5, CostKnown: true, Started: start, Ended: start, Operation: wire.OpChat,
		}
		e := c.SpendEvent()
		if err := e.Validate(); err != nil {
			t.Errorf("%s: built event invalid: %v", name, err)
			continue
		}
		got, err := spend.Decode(spend.Encode(&e))
		if err != nil {
			t.Errorf("%s: the event does not survive the queue: %v", name, err)
			continue
		}
		if !reflect.DeepEqual(got, e) {
			t.Errorf("%s: the queue changed the event:\n got %+v\nwant %+v", name, got, e)
		}
		if !utf8.ValidString(e.APIBase) {
			t.Errorf("%s: api_base %q is not valid UTF-8", name, e.APIBase)
		}
		for _, v := range []string{e.EndUser, e.KeyAlias, e.TeamID, e.UserID, e.ModelGroup, e.DeploymentID, e.Provider, e.Model, e.Tags[0], e.Tags[2]} {
			if !utf8.ValidString(v) {
				t.Errorf("%s: %q is not valid UTF-8", name, v)
			}
			if utf8.ValidString(s) && !strings.HasPrefix(s, v) {
				t.Errorf("%s: %q is not a prefix of the valid input", name, v)
			}
		}
		if n := len(e.EndUser); n > spend.MaxIDLen || n < spend.MaxIDLen-utf8.UTFMax && len(s) >= spend.MaxIDLen {
			t.Errorf("%s: end user cut to %d bytes, want within a rune of %d", name, n, spend.MaxIDLen)
		}
	}
}

// BenchmarkHandlerSpend is BenchmarkHandler's mock/log=warn case without
// spend, and with spend on as local mode runs it: the event built and
// copied into the in-process queue, which records it on another goroutine.
// Compare allocs/op.
//
//	go test -run '^$' -bench HandlerSpend -benchmem ./shared/gateway/
func BenchmarkHandlerSpend(b *testing.B) {
	cfg, err := config.Load([]byte(mockConfig+"      input_cost_per_token: 0.00000015\n      output_cost_per_token: 0.0000006\n"), nil)
	if err != nil {
		b.Fatal(err)
	}
	log := discardLogger(slog.LevelWarn)
	for _, mode := range []struct {
		name string
		body []byte
	}{{"json", jsonRequest}, {"sse", streamRequest}} {
		for _, on := range []bool{false, true} {
			name := mode.name + "/spend=off"
			var hook func(context.Context, *gateway.Completion)
			var q *spend.Queue
			if on {
				name = mode.name + "/spend=on"
				q = spend.NewQueue(spend.NewConsumer(spend.NewMemory(keys.NewMemory()), log), spend.QueueOptions{Size: 1 << 20})
				hook = gateway.PublishSpend(q, nil)
			}
			h := gateway.New(gateway.Options{
				Config: cfg, Router: router.New(cfg, router.Options{Logger: log}),
				Provider: providers.New(providers.NewHTTPClient()), Logger: log, OnComplete: hook,
			})
			b.Run(name, func(b *testing.B) { serveLoop(b, h, mode.body, nil) })
			if q != nil {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				_ = q.Close(ctx)
				cancel()
			}
		}
	}
}
