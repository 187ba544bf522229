package gateway

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
)

// The stored-response routes: GET and DELETE /v1/responses/{id}, GET
// /v1/responses/{id}/input_items.

// responsesRoute serves them; false: path is not one of them.
func (h *Handler) responsesRoute(w http.ResponseWriter, r *http.Request) bool {
	var rest string
	found := false
	for _, prefix := range [...]string{"/v1/responses/", "/responses/", "/openai/v1/responses/"} {
		if rest, found = strings.CutPrefix(r.URL.Path, prefix); found {
			break
		}
	}
	if !found || rest == "" {
		return false
	}
	id, sub, _ := strings.Cut(rest, "/")
	switch {
	case sub == "input_items":
		if !h.method(w, r, http.MethodGet) {
			return true
		}
	case sub != "":
		return false
	case r.Method != http.MethodDelete && !h.method(w, r, http.MethodGet):
		return true
	}
	p, err := h.authenticate(r)
	if err != nil {
		apierr.Write(w, err)
		return true
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
		return true
	}
	switch {
	case sub == "input_items":
		writeJSON(w, http.StatusOK, inputItems(rec.Input, r))
	case r.Method == http.MethodDelete:
		if err := h.responses.Delete(ctx, id); err != nil && !errors.Is(err, apierr.ErrNotFound) {
			apierr.Write(w, &apierr.Error{Kind: apierr.Unavailable, Message: "could not delete the response; try again", Cause: err})
			return true
		}
		b, _ := json.Marshal(map[string]any{"id": id, "object": "response", "deleted": true})
		writeJSON(w, http.StatusOK, b)
	default:
		writeJSON(w, http.StatusOK, rec.Response)
	}
	return true
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
