package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/wire"
)

// LiteLLM's batch completion: a chat request whose model is a
// comma-separated list ("gpt-4o,claude") goes to every model at once
// (Router.abatch_completion), and the answer is the JSON array of their
// responses in the order named, a failed model's error object in its place.
// With "fastest_response": true the first successful response is the
// answer and the others are canceled (abatch_completion_fastest_response).
//
// Each model's call is a request of its own through the whole chat path:
// its model access, limits, routing, spend event and cost.

// maxBatchModels bounds the models of one batch request.
const maxBatchModels = 16

func (h *Handler) batch(w http.ResponseWriter, r *http.Request, req *wire.Request) {
	var models []string
	for _, m := range strings.Split(req.Model, ",") {
		if m = strings.TrimSpace(m); m != "" {
			models = append(models, m)
		}
	}
	switch {
	case len(models) == 0:
		e := apierr.New(apierr.InvalidRequest, "model %q names no model", req.Model)
		e.Param = "model"
		apierr.Write(w, e)
		return
	case len(models) > maxBatchModels:
		e := apierr.New(apierr.InvalidRequest, "a batch completion may name at most %d models, got %d", maxBatchModels, len(models))
		e.Param = "model"
		apierr.Write(w, e)
		return
	case req.Stream:
		e := apierr.New(apierr.InvalidRequest, "stream is not supported with a comma-separated model list (batch completion)")
		e.Param = "stream"
		apierr.Write(w, e)
		return
	}
	fastest := gjson.GetBytes(req.Body, "fastest_response").Bool()
	base, err := sjson.DeleteBytes(req.Body, "fastest_response")
	if err != nil {
		base = req.Body
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	recs := make([]*recorder, len(models))
	first := make(chan int, len(models))
	var wg sync.WaitGroup
	for i, m := range models {
		body, err := sjson.SetBytes(base, "model", m)
		if err != nil {
			body = base
		}
		recs[i] = &recorder{header: http.Header{}}
		sub := r.Clone(ctx)
		sub.Body = io.NopCloser(bytes.NewReader(body))
		sub.ContentLength = int64(len(body))
		wg.Add(1)
		go func(i int, sub *http.Request) {
			defer wg.Done()
			h.postModel(recs[i], sub, chatAPI, "")
			if recs[i].status == http.StatusOK {
				first <- i
			}
		}(i, sub)
	}
	if fastest {
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case i := <-first:
			cancel() // the others are not needed (LiteLLM cancels them too)
			<-done
			recs[i].copyTo(w)
			return
		case <-done:
			select {
			case i := <-first:
				recs[i].copyTo(w)
			default: // every model failed: the first one's error
				recs[0].copyTo(w)
			}
			return
		}
	}
	wg.Wait()
	var out bytes.Buffer
	out.WriteByte('[')
	for i, rec := range recs {
		if i > 0 {
			out.WriteByte(',')
		}
		if b := bytes.TrimSpace(rec.body.Bytes()); gjson.ValidBytes(b) && len(b) > 0 {
			out.Write(b)
		} else {
			out.WriteString("null")
		}
	}
	out.WriteByte(']')
	writeJSON(w, http.StatusOK, out.Bytes())
}

// recorder holds one batch member's response.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}
func (r *recorder) Flush() {}

func (r *recorder) copyTo(w http.ResponseWriter) {
	for k, v := range r.header {
		w.Header()[k] = v
	}
	if r.status == 0 {
		r.status = http.StatusOK
	}
	w.WriteHeader(r.status)
	_, _ = w.Write(r.body.Bytes())
}
