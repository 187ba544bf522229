package chunks

import (
	"bytes"
	"io"
	"net/http"
	"strconv"

	"github.com/sluice-gw/sluice/shared/sse"
)

// Replace returns resp with a new body of contentType (and status, when
// given): how a translating vendor hands its translated answer, or the
// error a stream's first event stood for, to the gateway.
func Replace(resp *http.Response, contentType string, body []byte, status ...int) *http.Response {
	out := *resp
	out.Header = resp.Header.Clone()
	out.Header["Content-Type"] = []string{contentType}
	out.Header.Del("Content-Length")
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	if len(status) > 0 {
		out.StatusCode = status[0]
		out.Status = strconv.Itoa(status[0]) + " " + http.StatusText(status[0])
	}
	return &out
}

// Streamed returns resp with s as its body: an OpenAI event stream.
func Streamed(resp *http.Response, s *Stream) *http.Response {
	out := Replace(resp, "text/event-stream", nil)
	out.Body = s
	out.ContentLength = -1
	return out
}

// Upstream is the SSE body of a stream being translated: a decoder reads
// it event by event, and may look at the first event before the stream is
// handed out (Lead: an error there becomes the response's status).
type Upstream struct {
	body    io.ReadCloser
	rd      *sse.Reader
	pending []byte // the first event's data, read ahead by Lead
	failed  error  // what ended the stream before its first event
}

// NewUpstream returns the Upstream of body.
func NewUpstream(body io.ReadCloser) Upstream {
	return Upstream{body: body, rd: sse.NewReader(body)}
}

// Lead reads the data of the first event that has any (past keep-alives)
// and keeps it for Next. A stream that ends before one is
// io.ErrUnexpectedEOF (not a clean, empty answer); Next returns that error
// too.
func (u *Upstream) Lead() ([]byte, error) {
	for {
		ev, err := u.rd.Next()
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			u.failed = err
			return nil, err
		}
		if data := sse.Data(ev); len(bytes.TrimSpace(data)) > 0 {
			u.pending = bytes.Clone(data)
			return u.pending, nil
		}
	}
}

// Next returns the next event's data (the one Lead read first), valid until
// the next call; io.EOF at the stream's clean end.
func (u *Upstream) Next() ([]byte, error) {
	if u.pending != nil {
		data := u.pending
		u.pending = nil
		return data, nil
	}
	if u.failed != nil {
		return nil, u.failed
	}
	if u.rd == nil {
		return nil, io.ErrClosedPipe
	}
	ev, err := u.rd.Next()
	if err != nil {
		return nil, err
	}
	return sse.Data(ev), nil
}

// Close releases the reader and closes the body.
func (u *Upstream) Close() error {
	if u.rd != nil {
		u.rd.Release()
		u.rd = nil
	}
	return u.body.Close()
}
