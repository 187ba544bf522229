package gateway

import (
	"encoding/json"
	"io"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/providers/chunks"
	"github.com/sluice-gw/sluice/shared/sse"
)

// The Responses API's streams: the body an attempt hands the streaming
// stage (eventReader), and what that stage reads of Responses events.

// eventReader is a response body made of the upstream's events, each
// passed through next (and end's bytes after the last, and its error in
// place of io.EOF), read one event at a time with no goroutine.
type eventReader struct {
	chunks.Reader
	upstream io.Closer
	rd       *sse.Reader
	next     func(ev []byte) []byte
	end      func() ([]byte, error)
}

// newEventReader is an eventReader over rd, the events of upstream.
func newEventReader(upstream io.Closer, rd *sse.Reader, next func(ev []byte) []byte, end func() ([]byte, error)) *eventReader {
	r := &eventReader{upstream: upstream, rd: rd, next: next, end: end}
	r.Init(r)
	return r
}

// Fill appends the next event as next rewrites it; after the last, end's
// bytes and error.
func (r *eventReader) Fill() error {
	ev, err := r.rd.Next()
	switch {
	case err == io.EOF:
		b, err := r.end()
		r.Out = append(r.Out, b...)
		return err
	case err != nil:
		return err
	}
	r.Out = append(r.Out, r.next(ev)...)
	return nil
}

func (r *eventReader) Close() error {
	r.rd.Release()
	return r.upstream.Close()
}

// Responses stream events, as the streaming stage reads them.

// respIsError reports whether a Responses event is a failure: an error
// event, a failed response, or a chat-style error body.
func respIsError(data []byte) bool {
	if isError(data) {
		return true
	}
	switch gjson.GetBytes(data, "type").Str {
	case "error", "response.failed":
		return true
	}
	return false
}

// respHasContent reports whether a Responses event commits the stream:
// anything after the response's creation.
func respHasContent(data []byte) bool {
	switch gjson.GetBytes(data, "type").Str {
	case "response.created", "response.in_progress", "response.queued", "":
		return false
	}
	return true
}

// respErrorBody is a Responses failure event (an error event, a failed
// response) as OpenAI's error body, {"error":{...}}, which the failure
// classification and ErrorEvent read; a chat-style error stays as it is.
func respErrorBody(data []byte) []byte {
	if isError(data) {
		return data
	}
	r := gjson.ParseBytes(data)
	e := r
	if r.Get("type").Str == "response.failed" {
		e = r.Get("response.error")
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": e.Get("message").Str, "type": e.Get("type").Value(), "code": e.Get("code").Value(), "param": e.Get("param").Value(),
	}})
	return b
}

// sseError is the event that ends a stream the gateway has to cut: the
// API's (a Responses error event in OpenAI's shape and sequence,
// Anthropic's error event for a Messages request), else OpenAI's chat
// error event.
func (x *exchange) sseError(err error) []byte {
	if x != nil && x.api.sseError != nil {
		return x.api.sseError(x, err)
	}
	return apierr.SSE(err)
}

// inBandError is the client's copy of a provider's in-band error sent
// after content, its keys redacted.
func (x *exchange) inBandError(data []byte, d *config.Deployment) []byte {
	if x.api.inBand != nil {
		return x.api.inBand(x, data, d)
	}
	return providers.ErrorEvent(data, d)
}

// errorEvent is a Responses error event for an OpenAI error body.
func (rs *respState) errorEvent(body []byte) []byte {
	e := gjson.GetBytes(body, "error")
	b, _ := json.Marshal(struct {
		Type    string `json:"type"`
		Seq     int64  `json:"sequence_number"`
		Code    any    `json:"code"`
		Message string `json:"message"`
		Param   any    `json:"param"`
	}{"error", rs.seq, e.Get("code").Value(), e.Get("message").Str, e.Get("param").Value()})
	rs.seq++
	out := make([]byte, 0, len(b)+24)
	out = append(out, "event: error\ndata: "...)
	out = append(out, b...)
	return append(out, "\n\n"...)
}
