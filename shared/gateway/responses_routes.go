package gateway

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
)

// The stored-response routes: GET and DELETE /v1/responses/{id}, GET
// /v1/responses/{id}/input_items (routes.go).

// storedResponse serves a stored response's route: sub is "" or
// "input_items".
func storedResponse(sub string) func(h *Handler, w http.ResponseWriter, r *http.Request, id string) {
	return func(h *Handler, w http.ResponseWriter, r *http.Request, id string) { h.storedResponse(w, r, id, sub) }
}

func (h *Handler) storedResponse(w http.ResponseWriter, r *http.Request, id, sub string) {
	p, err := h.authenticate(r)
	if err != nil {
		apierr.Write(w, err)
		return
	}
	ctx := r.Context()
	rec, err := h.responses.Get(ctx, id, h.now())
	if err == nil && !canRead(p, &rec) {
		err = apierr.ErrNotFound
	}
	if err != nil {
		if errors.Is(err, apierr.ErrNotFound) {
			apierr.Write(w, apierr.New(apierr.NotFound, "Response with id '%s' not found.", id))
		} else {
			apierr.Write(w, &apierr.Error{Kind: apierr.Unavailable, Message: "could not read the response; try again", Cause: err})
		}
		return
	}
	switch {
	case sub == "input_items":
		writeJSON(w, http.StatusOK, inputItems(rec.Input, r))
	case r.Method == http.MethodDelete:
		if err := h.responses.Delete(ctx, id); err != nil && !errors.Is(err, apierr.ErrNotFound) {
			apierr.Write(w, &apierr.Error{Kind: apierr.Unavailable, Message: "could not delete the response; try again", Cause: err})
			return
		}
		b, _ := json.Marshal(map[string]any{"id": id, "object": "response", "deleted": true})
		writeJSON(w, http.StatusOK, b)
	default:
		writeJSON(w, http.StatusOK, rec.Response)
	}
}

// inputItems is the input_items list of a response's input: newest first
// unless order=asc, after an item id, at most limit (1-100, default 20).
func inputItems(input []byte, r *http.Request) []byte {
	items := gjson.ParseBytes(input).Array()
	q := r.URL.Query()
	if q.Get("order") != "asc" {
		for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
			items[i], items[j] = items[j], items[i]
		}
	}
	if after := q.Get("after"); after != "" {
		for i, it := range items {
			if it.Get("id").Str == after {
				items = items[i+1:]
				break
			}
		}
	}
	limit := 20
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n >= 1 && n <= 100 {
		limit = n
	}
	more := len(items) > limit
	if more {
		items = items[:limit]
	}
	data := make([]json.RawMessage, len(items))
	for i, it := range items {
		data[i] = json.RawMessage(it.Raw)
	}
	out := map[string]any{"object": "list", "data": data, "has_more": more, "first_id": nil, "last_id": nil}
	if len(items) > 0 {
		out["first_id"], out["last_id"] = items[0].Get("id").Str, items[len(items)-1].Get("id").Str
	}
	b, _ := json.Marshal(out)
	return b
}
