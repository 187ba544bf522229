package gateway_test

import (
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"
)

// streamed runs a streamed request with the key sk-a and returns its
// events and the stream's error.
func (g *respGateway) streamed(t *testing.T, params responses.ResponseNewParams) ([]responses.ResponseStreamEventUnion, error) {
	t.Helper()
	c := g.sdk("sk-a", nil)
	st := c.Responses.NewStreaming(respCtx(t), params)
	var events []responses.ResponseStreamEventUnion
	for st.Next() {
		events = append(events, st.Current())
	}
	return events, st.Err()
}

// streamEvents runs a streamed request and returns its events' types and
// raw JSON, and the stream's error.
func streamEvents(t *testing.T, g *respGateway, params responses.ResponseNewParams) (types, raws []string, err error) {
	t.Helper()
	events, err := g.streamed(t, params)
	for _, ev := range events {
		types, raws = append(types, ev.Type), append(raws, ev.RawJSON())
	}
	return types, raws, err
}

// TestResponsesStreamFailures: an error event before any output is
// retried (the client sees only the answer); a failure after output ends
// the stream with a Responses error event, numbered after the last event,
// the provider's key redacted; a stream cut short is billed on an
// estimate of the text it carried.
func TestResponsesStreamFailures(t *testing.T) {
	g := startRespGateway(t)
	types, _, err := streamEvents(t, g, responses.ResponseNewParams{Model: "gpt-4o", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("fail first")}})
	if err != nil || len(types) != 5 || types[4] != "response.completed" {
		t.Fatalf("retried stream: %v %v", types, err)
	}
	if c := g.lastCompletion(t, 1); c.Attempts != 2 || c.Err != nil {
		t.Errorf("attempts %d, err %v; want 2, nil", c.Attempts, c.Err)
	}

	types, raws, err := streamEvents(t, g, responses.ResponseNewParams{Model: "gpt-4o", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("fail midway")}})
	if err != nil || len(types) != 4 || types[3] != "error" {
		t.Fatalf("broken stream: %v %v", types, err)
	}
	last := raws[3]
	if gjson.Get(last, "sequence_number").Int() != 3 || !strings.Contains(gjson.Get(last, "message").Str, "[redacted]") ||
		strings.Contains(last, "sk-upstream") || gjson.Get(last, "code").Str != "server_error" {
		t.Errorf("error event %s", last)
	}
	if c := g.lastCompletion(t, 2); c.Err == nil {
		t.Error("the failed stream is recorded as a success")
	}

	types, raws, err = streamEvents(t, g, responses.ResponseNewParams{Model: "gpt-4o", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("cut")}})
	if err != nil || len(types) != 4 || types[3] != "error" || gjson.Get(raws[3], "sequence_number").Int() != 3 {
		t.Fatalf("cut stream: %v %v %v", types, raws, err)
	}
	if c := g.lastCompletion(t, 3); !c.UsageEstimated || c.Usage.CompletionTokens < 4 {
		t.Errorf("cut stream billed %+v (estimated %v), want an estimate of its text", c.Usage, c.UsageEstimated)
	}
}

// TestResponsesSwitchModels: a conversation moves between providers. From
// Claude to an OpenAI model, OpenAI gets the conversation whole (it holds
// none of it): no previous_response_id, the earlier turn's items before
// the new input; back to Claude, Anthropic gets every turn.
func TestResponsesSwitchModels(t *testing.T) {
	g := startRespGateway(t)
	ctx := respCtx(t)
	client := g.sdk("sk-a", nil)
	first := say(ctx, t, client, "claude", "", "The code is 42.")
	second := say(ctx, t, client, "gpt-4o", first.ID, "What is the code?")
	up := gjson.ParseBytes(g.openai.last(t))
	if up.Get("previous_response_id").Exists() || len(up.Get("input").Array()) != 3 ||
		!strings.Contains(up.Get("input.0").Raw, "The code is 42.") || up.Get("input.1.role").Str != "assistant" ||
		up.Get("input.1.id").Exists() || !strings.Contains(up.Get("input.2").Raw, "What is the code?") {
		t.Errorf("OpenAI got %s", up.Raw)
	}
	say(ctx, t, client, "claude", second.ID, "Thanks")
	msgs := gjson.GetBytes(g.anthropic.last(t), "messages")
	if len(msgs.Array()) != 5 || !strings.Contains(msgs.Get("3").Raw, "Hello from OpenAI") || !strings.Contains(msgs.Get("4").Raw, "Thanks") {
		t.Errorf("Anthropic got %s", msgs.Raw)
	}
}
