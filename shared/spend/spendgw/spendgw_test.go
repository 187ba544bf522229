package spendgw_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/gateway"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/router"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/spendgw"
	"github.com/sluice-gw/sluice/shared/wire"
)

func TestEvent(t *testing.T) {
	start := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	k := &keys.Key{Hash: keys.HashSecret("sk-x"), Alias: "ci", TeamID: "t1", UserID: "u1"}
	d := &config.Deployment{ID: "dep-1", ModelName: "gpt-4o", Provider: "azure", Model: "gpt-4o-2024", APIBase: "https://x.example"}
	c := &gateway.Completion{
		CallID: "call-1", Principal: &gateway.Principal{KeyHash: k.Hash, Key: k},
		Model: "my-alias", EndUser: "cust", Tags: []string{"a", strings.Repeat("t", 300)},
		Attempt:  &router.Attempt{Deployment: d, Group: "gpt-4o", ProviderModel: "gpt-4o-2024"},
		Attempts: 3, Retries: 1, Fallbacks: 1,
		Usage:    wire.Usage{PromptTokens: 10, CompletionTokens: 4, TotalTokens: 14, CachedTokens: 2},
		HasUsage: true, UsageEstimated: true, CostNanos: 1234, CostKnown: true,
		Started: start, Ended: start.Add(time.Second), Stream: true, Operation: wire.OpChat, StatusCode: 200,
	}
	e := spendgw.Event(c)
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
	if e := spendgw.Event(c); e.Status != spend.StatusFailure {
		t.Errorf("status %s, want failure", e.Status)
	}
	c.ClientGone = true
	if e := spendgw.Event(c); e.Status != spend.StatusDisconnected {
		t.Errorf("status %s, want client_disconnected", e.Status)
	}
	// The master key, no attempt, unknown cost: still a valid event.
	e = spendgw.Event(&gateway.Completion{CallID: "call-2", Principal: &gateway.Principal{Master: true}, Started: start, Err: errors.New("x")})
	if err := e.Validate(); err != nil || e.KeyHash != "" || e.CostKnown {
		t.Errorf("bare completion: %+v, %v", e, err)
	}
}
