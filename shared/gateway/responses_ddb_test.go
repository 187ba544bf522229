package gateway_test

import (
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/responses/ddbresponses"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

// TestResponsesSecondInstance: a conversation started on one gateway
// instance continues on another, each with its own DynamoDB client on the
// same table (DynamoDB Local): translated (the second instance sends
// Anthropic the first turn, read from the table) and passed through (the
// second instance reads the response, and sends the continuation to the
// deployment holding it, with the provider's id).
func TestResponsesSecondInstance(t *testing.T) {
	table := ddblocal.Tables(t).Counters
	orec, arec := &recorder{}, &recorder{}
	oa, an := fakeOpenAIResponses(t, orec), fakeAnthropic(t, arec)
	ks := respKeys(t)
	a := newRespGateway(t, ddbresponses.New(ddblocal.Client(t), table, ddbresponses.Options{Timeout: 30 * time.Second}), ks, oa, an, orec, arec)
	b := newRespGateway(t, ddbresponses.New(ddblocal.Client(t), table, ddbresponses.Options{Timeout: 30 * time.Second}), ks, oa, an, orec, arec)
	ctx := respCtx(t)
	ca, cb := a.sdk("sk-a", nil), b.sdk("sk-a", nil)

	first := say(ctx, t, ca, "claude", "", "Remember: the code is 42.")
	second := say(ctx, t, cb, "claude", first.ID, "What is the code?")
	msgs := gjson.GetBytes(arec.last(t), "messages")
	if len(msgs.Array()) != 3 || !strings.Contains(msgs.Get("0").Raw, "the code is 42") ||
		msgs.Get("1.role").Str != "assistant" || !strings.Contains(msgs.Get("1").Raw, "The weather is sunny.") ||
		!strings.Contains(msgs.Get("2").Raw, "What is the code?") {
		t.Errorf("Anthropic got %s", msgs.Raw)
	}
	if got, err := ca.Responses.Get(ctx, second.ID, responses.ResponseGetParams{}); err != nil || got.ID != second.ID {
		t.Errorf("the first instance reads the second's response: %v", err)
	}

	up := say(ctx, t, ca, "gpt-4o", "", "hi")
	if got, err := cb.Responses.Get(ctx, up.ID, responses.ResponseGetParams{}); err != nil || got.OutputText() != "Hello from OpenAI" {
		t.Fatalf("GET on the second instance: %v", err)
	}
	say(ctx, t, cb, "gpt-4o", up.ID, "again")
	if p := gjson.GetBytes(orec.last(t), "previous_response_id").Str; p != "resp_up1" {
		t.Errorf("OpenAI got previous_response_id %q, want its own resp_up1", p)
	}
	other := b.sdk("sk-c", nil)
	if _, err := other.Responses.Get(ctx, up.ID, responses.ResponseGetParams{}); apiError(t, err).StatusCode != 404 {
		t.Errorf("another key on the second instance: %v, want 404", err)
	}
}
