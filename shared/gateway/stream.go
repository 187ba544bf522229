package gateway

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/router"
	"github.com/sluice-gw/sluice/shared/sse"
	"github.com/sluice-gw/sluice/shared/wire"
)

// maxHeld bounds the events held back before the first content event.
const maxHeld = 16

// stream forwards an SSE stream event by event. Events that carry no content
// yet (a role-only first chunk) are held back, so that a failure before the
// first content can still be retried or fall back with nothing sent. Once
// content is sent, the attempt is committed: a later failure ends the stream
// with an OpenAI-style error event, and no other model's output is spliced in.
func (x *exchange) stream(ctx context.Context, a *router.Attempt, call wire.Call, injected bool) (out router.Outcome, err error) {
	d := a.Deployment
	up, err := x.openStream(ctx, a, call)
	if err != nil {
		return out, err
	}
	defer up.close()
	rd := up.rd
	m := streamMeter{prompt: call.PromptTokens}
	// However the stream ends, a panic included, what it received is
	// billed, and that sets the outcome the router learns.
	defer func() { out = x.settle(a, &m) }()
	var held [][]byte
	var streamErr error
	evs := x.api.events // how the API's events read (apis.go)
	for {
		ev, err := rd.Next()
		if err != nil {
			return out, x.readFailed(ctx, a, err, up.timedOut.Load(), streamErr)
		}
		data := sse.Data(ev)
		if evs.isError(data) {
			if evs.errorBody != nil {
				data = evs.errorBody(data)
			}
			e := providers.Classify(d, http.StatusInternalServerError, nil, data)
			if !x.committed {
				return out, e // nothing sent yet: retry or fall back
			}
			streamErr = &apierr.Error{Kind: apierr.StreamBroken, Message: e.Message}
			_, _ = x.w.Write(x.inBandError(data, d)) // the provider's in-band error, its keys redacted
			flush(x.w)
			continue
		}
		if u, ok := evs.usage(data); ok {
			m.usage, m.hasUsage = u, true // the last report is the whole stream's
			if injected && gjson.GetBytes(data, "choices.#").Int() == 0 {
				continue // usage chunk the client did not ask for
			}
		} else if !m.hasUsage { // the estimate is needed only until usage comes
			m.text.Add(data)
		}
		if !x.committed {
			held = append(held, bytes.Clone(ev))
			if evs.hasContent(data) || sse.IsDone(data) || len(held) >= maxHeld {
				if err := x.commitHeld(up, a, held); err != nil {
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

// streamMeter is what one streamed attempt received: its usage, if the
// provider reported it, and a running measure of the text generated, for an
// estimate when it did not.
type streamMeter struct {
	prompt   int // the prompt estimate sent
	text     wire.TextMeter
	usage    wire.Usage
	hasUsage bool
}

// settle bills a streamed attempt when it ends: with its reported usage, or
// an estimate once output came (the provider bills a stream cut short, or
// one that reports no usage). An attempt that failed before any output and
// reported nothing is not billed. It returns the attempt's outcome: the
// router stops after an attempt that committed, so x.committed is this
// attempt's doing.
func (x *exchange) settle(a *router.Attempt, m *streamMeter) router.Outcome {
	out := router.Outcome{Committed: x.committed}
	switch {
	case m.hasUsage:
		out.Tokens = x.bill(a, m.usage, false)
	case x.committed || m.text.Bytes() > 0:
		out.Tokens = x.bill(a, estimatedUsage(m.prompt, m.text.Bytes()), true)
	}
	return out
}

// commit sends the status, headers (the provider's llm_provider-* ones
// too, as for unary responses) and held events (flushed by the caller) and
// returns the bytes written: from here on the attempt can no longer be
// retried.
func (x *exchange) commit(a *router.Attempt, held [][]byte, upstream http.Header) int {
	x.setRouteHeaders(a)
	hd := x.w.Header()
	hd["Content-Type"] = hdrEventStream
	hd["Cache-Control"] = hdrNoCache
	hd["X-Accel-Buffering"] = hdrNo
	copyUpstreamHeaders(hd, upstream)
	x.c.TTFT = time.Since(x.c.Started)
	x.committed = true
	x.w.WriteHeader(http.StatusOK)
	n := 0
	for _, ev := range held {
		m, _ := x.w.Write(ev)
		n += m
	}
	return n
}

func isError(data []byte) bool {
	return len(data) > 8 && bytes.HasPrefix(bytes.TrimSpace(data), []byte(`{"error"`))
}

// hasContent reports whether a chunk carries output: text, a tool call, a
// refusal or a finish reason.
func hasContent(data []byte) bool {
	if !bytes.Contains(data, []byte(`"choices"`)) {
		return false
	}
	c := gjson.GetBytes(data, "choices.0")
	if !c.IsObject() {
		return false
	}
	has := false
	c.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "delta":
			v.ForEach(func(dk, dv gjson.Result) bool {
				switch dk.Str {
				case "content", "refusal", "reasoning_content":
					has = dv.Type == gjson.String && dv.Str != ""
				case "tool_calls", "function_call":
					has = dv.Type != gjson.Null
				}
				return !has
			})
		case "finish_reason", "text":
			has = v.Type == gjson.String && v.Str != ""
		}
		return !has
	})
	return has
}

// readFailed is the end of an upstream stream whose reader failed (io.EOF
// included). Before the stream committed, it is a failure the router may
// retry; after, the stream is over: cleanly at EOF (streamErr, an in-band
// error already forwarded, or nil), else cut, and the client is told with
// an error event in its API's shape (unless it went away).
// ctx is the request's: a deadline of its shows through the call's own
// context (canceled, not past a deadline, when stream_timeout passed).
func (x *exchange) readFailed(ctx context.Context, a *router.Attempt, err error, timedOut bool, streamErr error) error {
	d := a.Deployment
	if !x.committed {
		if timedOut {
			return noFirstChunk(a)
		}
		if err == io.EOF || errors.Is(err, sse.ErrTruncated) {
			return apierr.New(apierr.UpstreamConnection, "deployment %s ended the stream before the first chunk", d.ID)
		}
		return providers.TransportError(ctx, d, err)
	}
	if err == io.EOF {
		x.done = !clientGone(ctx)
		return streamErr
	}
	if clientGone(ctx) { // the client went away: nothing to tell it
		return &apierr.Error{Kind: apierr.StreamBroken, Message: "client disconnected", Cause: ctx.Err()}
	}
	msg := "the upstream stream broke after content was sent (deployment " + d.ID + ")"
	if ctx.Err() != nil { // the request's deadline (in Lambda, a margin before the invocation's): say so
		msg = "the request reached its time limit after content was sent (deployment " + d.ID + ")"
	}
	e := &apierr.Error{Kind: apierr.StreamBroken, Message: msg, Cause: err}
	_, _ = x.w.Write(x.sseError(e))
	flush(x.w)
	return e
}

// noFirstChunk is the failure of a stream that sent nothing within its
// deployment's stream_timeout.
func noFirstChunk(a *router.Attempt) error {
	return apierr.New(apierr.UpstreamTimeout, "deployment %s sent no first chunk within %s", a.Deployment.ID, a.StreamTimeout)
}

// commitHeld commits the attempt with the events held before its first
// content, unless stream_timeout passed first.
func (x *exchange) commitHeld(up *upstreamStream, a *router.Attempt, held [][]byte) error {
	if up.timer != nil {
		up.timer.Stop()
	}
	if up.timedOut.Load() {
		return noFirstChunk(a)
	}
	up.co.wrote(x.commit(a, held, up.resp.Header))
	return nil
}

// upstreamStream is a streamed attempt's upstream call: the cancel of its
// context (called when stream_timeout passes first), the response and its
// event reader, and the coalescer that flushes what was written before a read
// that would wait.
type upstreamStream struct {
	cancel   context.CancelFunc
	timer    *time.Timer
	timedOut atomic.Bool // stream_timeout passed
	co       coalescer
	resp     *http.Response
	rd       *sse.Reader
}

// openStream makes a streamed attempt's upstream call (chat, Responses and
// Messages alike); the caller closes what it returns.
func (x *exchange) openStream(ctx context.Context, a *router.Attempt, call wire.Call) (*upstreamStream, error) {
	d := a.Deployment
	u := &upstreamStream{}
	uctx, cancel := context.WithCancel(ctx)
	u.cancel = cancel
	if a.StreamTimeout > 0 {
		u.timer = time.AfterFunc(a.StreamTimeout, func() { u.timedOut.Store(true); u.cancel() })
	}
	pctx := uctx
	if pendingSupported && d.Protocol != config.ProtocolMock {
		pctx = httptrace.WithClientTrace(uctx, u.co.trace())
	}
	resp, err := x.do(pctx, d, call)
	if err != nil {
		u.close()
		if u.timedOut.Load() {
			return nil, noFirstChunk(a)
		}
		return nil, err
	}
	u.resp = resp
	u.rd = sse.NewReader(resp.Body)
	u.co.w = x.w
	u.rd.BeforeRead = u.co.beforeRead // flush what was written before waiting for more
	return u, nil
}

// close releases the reader and the response, stops the timer and cancels
// the call.
func (u *upstreamStream) close() {
	if u.rd != nil {
		u.rd.Release()
		_ = u.resp.Body.Close()
	}
	if u.timer != nil {
		u.timer.Stop()
	}
	u.cancel()
}
