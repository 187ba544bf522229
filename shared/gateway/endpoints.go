package gateway

import (
	"bytes"
	"net/http"
	"strings"

	"github.com/tidwall/sjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/wire"
)

// The routes beyond chat and embeddings: LiteLLM's legacy text completions,
// images, moderations and audio (each with its /v1, bare and /openai/v1
// path, as LiteLLM serves them), Azure OpenAI's deployment paths, and the
// info and health routes (info.go, health.go). Each model route runs the
// chat machinery: keys, model access, limits, routing, spend and cost.

// opPaths are the operations served under /v1, / and /openai/v1.
var opPaths = map[string]wire.Op{
	"/completions":          wire.OpCompletions,
	"/images/generations":   wire.OpImages,
	"/moderations":          wire.OpModerations,
	"/audio/speech":         wire.OpSpeech,
	"/audio/transcriptions": wire.OpTranscriptions,
}

// azureOps are the operations Azure OpenAI serves under
// /openai/deployments/{deployment}.
var azureOps = map[string]wire.Op{
	"/chat/completions":     wire.OpChat,
	"/completions":          wire.OpCompletions,
	"/embeddings":           wire.OpEmbeddings,
	"/images/generations":   wire.OpImages,
	"/audio/speech":         wire.OpSpeech,
	"/audio/transcriptions": wire.OpTranscriptions,
}

// serveExtra serves the routes of this file; false: path is none of them.
func (h *Handler) serveExtra(w http.ResponseWriter, r *http.Request) bool {
	path := r.URL.Path
	switch path {
	case "/model_group/info", "/v1/model_group/info":
		h.modelGroupInfo(w, r) // info.go
		return true
	case "/routes":
		h.routes(w, r)
		return true
	case "/health": // health.go
		h.health(w, r)
		return true
	case "/health/readiness":
		h.readiness(w, r)
		return true
	case "/health/readiness/details":
		h.readinessDetails(w, r)
		return true
	}
	if rest, ok := strings.CutPrefix(path, "/openai/deployments/"); ok {
		name, opPath, found := strings.Cut(rest, "/")
		op, known := azureOps["/"+opPath]
		if !found || !known || name == "" {
			return false
		}
		h.postModel(w, r, op, name)
		return true
	}
	rest := path
	for _, prefix := range []string{"/v1", "/openai/v1"} {
		if p, ok := strings.CutPrefix(path, prefix); ok {
			rest = p
			break
		}
	}
	if op, ok := opPaths[rest]; ok {
		h.post(w, r, op)
		return true
	}
	return false
}

// parseOp reads and parses a request's body for op: JSON, or a
// transcription's multipart form. A model named by the path replaces the
// body's (Azure's deployment is the model group).
func (h *Handler) parseOp(w http.ResponseWriter, r *http.Request, buf *bytes.Buffer, op wire.Op, pathModel string) (*wire.Request, *form, error) {
	if op == wire.OpTranscriptions {
		if err := h.readBody(w, r, buf); err != nil {
			return nil, nil, err
		}
		f, err := parseForm(buf.Bytes(), r.Header.Get("Content-Type"))
		if err != nil {
			return nil, nil, err
		}
		if pathModel != "" {
			f.model = pathModel
		}
		return &wire.Request{Body: buf.Bytes(), Model: f.model, User: f.user, NumRetries: -1}, f, nil
	}
	req, err := h.parse(w, r, buf, op)
	if err != nil || pathModel == "" || req.Model == pathModel {
		return req, nil, err
	}
	body, err := sjson.SetBytes(req.Body, "model", pathModel)
	if err != nil {
		return nil, nil, &apierr.Error{Kind: apierr.InvalidRequest, Message: "invalid request body: " + err.Error()}
	}
	req, err = wire.Parse(body)
	if err != nil {
		return nil, nil, &apierr.Error{Kind: apierr.InvalidRequest, Message: "invalid request body: " + err.Error()}
	}
	if !op.Streams() {
		req.Stream = false
	}
	return req, nil, nil
}
