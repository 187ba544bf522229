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

// FirstData reads the data of a stream's first event, past events with no
// data (keep-alives), for a decoder to look at before the stream is handed
// out (an error there becomes the response's status). A stream that ends
// before any is io.ErrUnexpectedEOF: not a clean, empty answer. The data is
// a copy, valid after the next read.
func FirstData(rd *sse.Reader) ([]byte, error) {
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			return nil, io.ErrUnexpectedEOF
		}
		if err != nil {
			return nil, err
		}
		if data := sse.Data(ev); len(bytes.TrimSpace(data)) > 0 {
			return bytes.Clone(data), nil
		}
	}
}
