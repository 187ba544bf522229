package gateway

import (
	"bytes"
	"context"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/router"
	"github.com/sluice-gw/sluice/shared/sse"
	"github.com/sluice-gw/sluice/shared/wire"
)

// messagesStream forwards a Messages event stream event by event, with the
// chat stream's boundary (stream.go): events before the first one with
// content (message_start, ping, an empty content_block_start) are held,
// so a failure before it is retried or falls back with nothing sent; once
// content is sent the attempt is committed, and a later failure ends the
// stream with an Anthropic error event. Usage comes from message_start
// (input and cache tokens) and message_delta (output).
func (x *exchange) messagesStream(ctx context.Context, a *router.Attempt, call wire.Call) (out router.Outcome, err error) {
	d := a.Deployment
	up, err := x.openStream(ctx, a, call) // stream.go
	if err != nil {
		return out, err
	}
	defer up.close()
	rd := up.rd
	m := streamMeter{prompt: call.PromptTokens}
	outBytes := 0     // delta bytes, for an estimate of output never reported
	sawDelta := false // message_delta reported the output
	defer func() {
		if m.hasUsage && !sawDelta { // cut short after message_start
			m.usage.CompletionTokens = max(m.usage.CompletionTokens, wire.TextTokens(outBytes))
			if m.usage.PromptTokens == 0 { // a translated stream reports its input at the end
				m.usage.PromptTokens = int64(m.prompt)
			}
			m.usage.TotalTokens = m.usage.PromptTokens + m.usage.CompletionTokens
		}
		out = x.settle(a, &m)
	}()
	var held [][]byte
	var streamErr error
	for {
		ev, err := rd.Next()
		if err != nil {
			return out, x.readFailed(ctx, a, err, up.timedOut.Load(), streamErr) // stream.go
		}
		data := sse.Data(ev)
		typ := wire.MessagesEventType(data)
		switch typ {
		case "error":
			e := providers.MessagesError(d, data)
			if !x.committed {
				return out, e // nothing sent yet: retry or fall back
			}
			streamErr = &apierr.Error{Kind: apierr.StreamBroken, Message: e.Message}
			_, _ = x.w.Write(apierr.AnthropicSSE(e)) // classified, so redacted
			flush(x.w)
			continue
		case "message_start", "message_delta":
			if u, ok := wire.MessagesStreamUsage(m.usage, typ, data); ok {
				m.usage, m.hasUsage = u, true
				sawDelta = sawDelta || typ == "message_delta"
			}
		case "content_block_delta":
			outBytes += max(len(data)-messagesDeltaEnvelope, 0)
		}
		if !x.committed {
			held = append(held, bytes.Clone(ev))
			if messagesContent(typ) || len(held) >= maxHeld {
				if err := x.commitHeld(up, a, held); err != nil { // stream.go
					return out, err
				}
				held = nil
			}
			continue
		}
		n, _ := x.w.Write(ev)
		up.co.wrote(n)
	}
}

// messagesDeltaEnvelope is about the bytes of a content_block_delta event
// that are not generated text.
const messagesDeltaEnvelope = 70

// messagesContent reports whether a Messages stream event carries output
// (or ends the answer): the stream's boundary.
func messagesContent(typ string) bool {
	switch typ {
	case "message_start", "ping", "content_block_start", "":
		return false
	}
	return true
}
