package gateway

import (
	"bytes"
	"net/http"

	"github.com/tidwall/sjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/wire"
)

// Reading a model route's body (the routes are in routes.go).

// parseAPI reads and parses a request's body for API a: JSON (a.parseJSON,
// else wire.Parse), or the API's own (a transcription's multipart form) and
// its state. A model named by the path replaces the body's (Azure's
// deployment is the model group).
func (h *Handler) parseAPI(w http.ResponseWriter, r *http.Request, buf *bytes.Buffer, a *api, pathModel string) (*wire.Request, any, error) {
	if a.parse != nil {
		if err := h.readBody(w, r, buf); err != nil {
			return nil, nil, err
		}
		return a.parse(r, buf.Bytes(), pathModel)
	}
	parse := wire.Parse
	if a.parseJSON != nil {
		parse = a.parseJSON
	}
	req, err := h.parse(w, r, buf, parse, a.streams)
	if err != nil || pathModel == "" || req.Model == pathModel {
		return req, nil, err
	}
	body, err := sjson.SetBytes(req.Body, "model", pathModel)
	if err != nil {
		return nil, nil, &apierr.Error{Kind: apierr.InvalidRequest, Message: "invalid request body: " + err.Error()}
	}
	req, err = parse(body)
	if err != nil {
		return nil, nil, &apierr.Error{Kind: apierr.InvalidRequest, Message: "invalid request body: " + err.Error()}
	}
	if !a.streams {
		req.Stream = false
	}
	return req, nil, nil
}
