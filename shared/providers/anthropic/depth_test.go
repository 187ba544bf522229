package anthropic_test

import (
	"errors"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/providers/anthropic"
	"github.com/sluice-gw/sluice/shared/wire"
)

// TestTranslateRequestTooDeep: a body, or a tool call's arguments (a JSON
// text inside a string, which the gateway's check of the body does not
// see), nested deeper than wire.MaxDepth is a 400, never a stack overflow.
// The stack is capped so that a recursive parse fails fast.
func TestTranslateRequestTooDeep(t *testing.T) {
	defer debug.SetMaxStack(debug.SetMaxStack(64 << 20))
	deep := strings.Repeat("[", 5_800_000)
	for _, tt := range []struct{ name, body string }{
		{"body", `{"model":"claude","x":` + deep},
		{"tool call arguments", `{"model":"claude","messages":[{"role":"assistant","tool_calls":[{"id":"t","type":"function","function":{"name":"f","arguments":"` + deep + `"}}]}]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := anthropic.TranslateRequest([]byte(tt.body), 100)
			var e *apierr.Error
			if !errors.As(err, &e) || e.HTTPStatus() != 400 || !strings.Contains(e.Message, "deeper than") {
				t.Fatalf("err = %v, want a 400 about nesting", err)
			}
		})
	}
}

func TestTranslateRequestDepthAtBound(t *testing.T) {
	n := wire.MaxDepth - 1 // the request object is one level more
	args := `{\"a\":` + strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + `}`
	body := `{"model":"claude","x":` + strings.Repeat("[", n) + strings.Repeat("]", n) +
		`,"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"t","type":"function","function":{"name":"f","arguments":"` + args + `"}}]}]}`
	out, err := anthropic.TranslateRequest([]byte(body), 100)
	if err != nil {
		t.Fatalf("a body MaxDepth deep was refused: %v", err)
	}
	if !strings.Contains(string(out), `"input":{"a":[[`) {
		t.Fatalf("tool call arguments lost: %.300s", out)
	}
}
