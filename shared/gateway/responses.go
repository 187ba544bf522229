package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/responses"
	"github.com/sluice-gw/sluice/shared/sse"
	"github.com/sluice-gw/sluice/shared/wire"
)

// OpenAI's Responses API (POST /v1/responses, and GET, DELETE and
// input_items of a stored response). A request goes through the same
// stages as a chat request (request.go); only the upstream call differs
// (respState.do): OpenAI and Azure deployments get the body as the client
// sent it (the model rewritten), every other deployment a chat request
// translated by package responses, whose answer comes back as the
// Responses body or event sequence. Either way the gateway gives the
// response a LiteLLM-style id naming the deployment (responses.EncodeID)
// and, unless the request says store: false, keeps a record of it
// (responses.Store) before the client sees its end, so that any instance
// can continue the conversation or serve it.

// responsesAPI is OpenAI's Responses API; its state is a respState.
var responsesAPI = registerAPI(&api{op: wire.OpResponses, name: "responses_api", paths: openAIPaths("/responses"),
	streams: true, parseJSON: wire.ParseResponses,
	prepare: func(h *Handler, ctx context.Context, _ *http.Request, p *Principal, req *wire.Request) (any, string, error) {
		rs, err := h.prepareResponses(ctx, p, req)
		if err != nil {
			return nil, "", err
		}
		return rs, rs.pin, nil
	},
	do: func(x *exchange, ctx context.Context, d *config.Deployment, call wire.Call) (*http.Response, error) {
		return x.state.(*respState).do(ctx, x, d, call)
	},
	usage:    func(out []byte) (wire.Usage, bool) { return wire.ResponsesUsage(gjson.GetBytes(out, "usage")) },
	events:   &eventShape{isError: respIsError, errorBody: respErrorBody, hasContent: respHasContent, usage: wire.ResponsesEventUsage},
	sseError: func(x *exchange, err error) []byte { return x.state.(*respState).errorEvent(apierr.JSON(err)) },
	inBand: func(x *exchange, data []byte, d *config.Deployment) []byte {
		return x.state.(*respState).errorEvent(sse.Data(providers.ErrorEvent(data, d)))
	},
})

// respState is a Responses request's state across its attempts.
type respState struct {
	h     *Handler
	input []byte // this turn's input items (a JSON array), ids given
	store bool   // keep the response (the request's store, true unless false)
	// The conversation continued (previous_response_id): its records,
	// newest first, read back to the first turn (all: chain is complete),
	// or only the last one when its deployment passes through: the
	// provider holds the conversation under upstream's id, so the request
	// is pinned to that deployment, and the rest is read only if another
	// deployment serves it after all.
	prevID   string
	chain    []responses.Record
	complete bool
	pin      string
	upstream string
	p        *Principal
	seq      int64 // the sequence number of the next event sent (errors the gateway adds)
}

// passThrough reports whether d answers the Responses API itself: an
// OpenAI or Azure deployment, unless its server was found to have no
// Responses route (most OpenAI-compatible servers: vLLM, Ollama, ...).
func (h *Handler) passThrough(d *config.Deployment) bool {
	if d.MockResponse != nil {
		return false
	}
	if _, chatOnly := h.chatOnly.Load(d); chatOnly {
		return false
	}
	return d.Protocol == config.ProtocolAzure || (d.Protocol == config.ProtocolOpenAI && d.Provider == "openai")
}

// maxChain bounds the stored turns a continuation reads back.
const maxChain = 200

// prepareResponses reads what a Responses request needs beside the chat
// stages: its input items, whether to store it, and the conversation it
// continues (read from the store, and checked to belong to the caller).
func (h *Handler) prepareResponses(ctx context.Context, p *Principal, req *wire.Request) (*respState, error) {
	rs := &respState{h: h, p: p, store: gjson.GetBytes(req.Body, "store").Type != gjson.False}
	in, err := responses.Input(req.Body)
	if err != nil {
		return nil, err
	}
	if rs.store { // kept for input_items
		rs.input = withItemIDs(in)
	}
	prev := gjson.GetBytes(req.Body, "previous_response_id")
	if prev.Type == gjson.Null || !prev.Exists() {
		return rs, nil
	}
	if prev.Type != gjson.String || prev.Str == "" {
		return nil, invalidParam("previous_response_id", "'previous_response_id' must be a string")
	}
	rs.prevID = prev.Str
	rec, err := h.responses.Get(ctx, prev.Str, h.now())
	if err == nil && !canRead(p, &rec) {
		err = apierr.ErrNotFound
	}
	if err != nil {
		if errors.Is(err, apierr.ErrNotFound) {
			e := apierr.New(apierr.NotFound, "Previous response with id '%s' not found.", prev.Str)
			e.Param, e.Code = "previous_response_id", "previous_response_not_found"
			return nil, e
		}
		return nil, storeUnavailable(err)
	}
	rs.chain = []responses.Record{rec}
	if d, ok := responses.DecodeID(rec.ID); ok && h.passThroughID(d.Deployment) {
		rs.pin, rs.upstream = d.Deployment, d.Upstream
		return rs, nil
	}
	return rs, rs.readChain(ctx)
}

func storeUnavailable(err error) *apierr.Error {
	return &apierr.Error{Kind: apierr.Unavailable, Message: "could not read the previous response; try again", Cause: err}
}

// readChain reads the rest of the conversation, back to its first turn
// (at most maxChain turns): a turn no longer stored (expired, deleted,
// made with store: false) ends it there.
func (rs *respState) readChain(ctx context.Context) error {
	if rs.complete || len(rs.chain) == 0 {
		return nil
	}
	rs.complete = true
	now := rs.h.now()
	for id := rs.chain[len(rs.chain)-1].Previous; id != "" && len(rs.chain) < maxChain; {
		rec, err := rs.h.responses.Get(ctx, id, now)
		if err == nil && !canRead(rs.p, &rec) {
			err = apierr.ErrNotFound
		}
		if errors.Is(err, apierr.ErrNotFound) {
			return nil
		}
		if err != nil {
			rs.complete = false
			return storeUnavailable(err)
		}
		rs.chain = append(rs.chain, rec)
		id = rec.Previous
	}
	return nil
}

// history is the conversation's turns, oldest first.
func (rs *respState) history() []responses.Turn {
	turns := make([]responses.Turn, len(rs.chain))
	for i, r := range rs.chain {
		turns[len(rs.chain)-1-i] = responses.Turn{Input: r.Input, Output: []byte(gjson.GetBytes(r.Response, "output").Raw)}
	}
	return turns
}

func (h *Handler) passThroughID(deployment string) bool {
	for _, d := range h.cfg.Deployments {
		if d.ID == deployment {
			return h.passThrough(d)
		}
	}
	return false
}

func invalidParam(param, msg string) *apierr.Error {
	e := apierr.New(apierr.InvalidRequest, "%s", msg)
	e.Param = param
	return e
}

// canRead reports whether p may read (continue, delete) a stored response:
// its key, a key of its team, or the master key. On an open gateway (no
// master key) every caller is the same nobody.
func canRead(p *Principal, r *responses.Record) bool {
	switch {
	case p == nil:
		return r.KeyHash == ""
	case p.Master:
		return true
	case p.KeyHash != "" && p.KeyHash == r.KeyHash:
		return true
	case r.TeamID != "" && p.Team != nil && p.Team.ID == r.TeamID:
		return true
	}
	return p.KeyHash == "" && r.KeyHash == ""
}

// withItemIDs gives each input item without one an id, as OpenAI lists
// them (input_items), in one pass over the list.
func withItemIDs(items []byte) []byte {
	list := gjson.ParseBytes(items)
	missing := false
	list.ForEach(func(_, it gjson.Result) bool {
		missing = it.IsObject() && !it.Get("id").Exists()
		return !missing
	})
	if !missing {
		return items
	}
	out := make([]byte, 0, len(items)+64)
	out = append(out, '[')
	first := true
	list.ForEach(func(_, it gjson.Result) bool {
		if !first {
			out = append(out, ',')
		}
		first = false
		if it.IsObject() && !it.Get("id").Exists() {
			out = append(out, `{"id":"`...)
			out = append(out, responses.NewItemID("msg")...)
			out = append(out, '"')
			if rest := strings.TrimLeft(it.Raw[1:], " \t\r\n"); !strings.HasPrefix(rest, "}") {
				out = append(out, ',')
			}
			out = append(out, it.Raw[1:]...)
		} else {
			out = append(out, it.Raw...)
		}
		return true
	})
	return append(out, ']')
}

// do is an attempt's upstream call for a Responses request. A deployment
// passed through whose server turns out to have no Responses route (a 404
// not naming the model, a 405) is translated through chat in the same
// attempt, and from then on (learnt per deployment and instance): the
// failed call costs the deployment nothing (no cooldown, no retry spent).
func (rs *respState) do(ctx context.Context, x *exchange, d *config.Deployment, call wire.Call) (*http.Response, error) {
	if !x.h.passThrough(d) {
		return rs.translate(ctx, x, d, call)
	}
	resp, err := rs.passThrough(ctx, x, d, call)
	if err != nil && errors.Is(err, providers.ErrNoRoute) && ctx.Err() == nil {
		x.h.chatOnly.Store(d, true)
		x.h.log.LogAttrs(ctx, slog.LevelInfo, "deployment has no Responses route: translated through chat from now on",
			slog.String("deployment", d.ID), slog.String("error", err.Error()))
		return rs.translate(ctx, x, d, call)
	}
	return resp, err
}

func (rs *respState) passThrough(ctx context.Context, x *exchange, d *config.Deployment, call wire.Call) (*http.Response, error) {
	switch {
	case rs.upstream != "" && d.ID == rs.pin: // the provider holds the conversation
		if b, err := sjson.SetBytes(call.Body, "previous_response_id", rs.upstream); err == nil {
			call.Body = b
		}
	case rs.prevID != "": // another deployment: the conversation is sent whole
		if err := rs.readChain(ctx); err != nil {
			return nil, err
		}
		b, err := responses.Expand(call.Body, rs.history())
		if err != nil {
			return nil, err
		}
		call.Body = b
	}
	resp, err := x.h.provider.Do(ctx, d, call)
	if err != nil {
		return nil, err
	}
	// The provider's ids become the client's: the response's own, and the
	// previous one it names.
	var prevUp, prevID []byte
	if rs.upstream != "" && d.ID == rs.pin {
		prevUp, _ = json.Marshal(rs.upstream)
		prevID, _ = json.Marshal(rs.prevID)
	}
	if !call.Stream {
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, providers.TransportError(ctx, d, err)
		}
		if up := gjson.GetBytes(body, "id"); up.Type == gjson.String && wire.Valid(body) {
			if b, err := sjson.SetBytes(body, "id", responses.EncodeID(d.Provider, d.ID, up.Str)); err == nil {
				body = b
			}
			if prevUp != nil {
				body = bytes.ReplaceAll(body, prevUp, prevID)
			}
			rs.save(ctx, x, d, body)
		}
		return replaceBody(resp, body), nil
	}
	rd := sse.NewReader(resp.Body)
	var up, id []byte // the provider's id and the client's, quoted
	ended := false    // the stream's last event came
	resp.Body = newEventReader(resp.Body, rd, func(ev []byte) []byte {
		data := sse.Data(ev)
		if up == nil && bytes.Contains(data, []byte(`"response"`)) {
			if u := gjson.GetBytes(data, "response.id"); u.Type == gjson.String {
				up, _ = json.Marshal(u.Str)
				id, _ = json.Marshal(responses.EncodeID(d.Provider, d.ID, u.Str))
			}
		}
		if up != nil && bytes.Contains(ev, up) {
			ev = bytes.ReplaceAll(ev, up, id)
			data = sse.Data(ev)
		}
		if prevUp != nil && bytes.Contains(ev, prevUp) {
			ev = bytes.ReplaceAll(ev, prevUp, prevID)
			data = sse.Data(ev)
		}
		f := gjson.GetManyBytes(data, "type", "sequence_number")
		switch f[0].Str {
		case "response.completed", "response.incomplete":
			ended = true
			rs.save(ctx, x, d, []byte(gjson.GetBytes(data, "response").Raw))
		case "error", "response.failed": // the gateway sends its own error event in its place
			ended = true
			return ev
		}
		if f[1].Type == gjson.Number {
			rs.seq = f[1].Int() + 1
		}
		return ev
	}, func() ([]byte, error) {
		if !ended { // a Responses stream ends with its response's end
			return nil, io.ErrUnexpectedEOF
		}
		return nil, io.EOF
	})
	return resp, nil
}

func (rs *respState) translate(ctx context.Context, x *exchange, d *config.Deployment, call wire.Call) (*http.Response, error) {
	if err := rs.readChain(ctx); err != nil {
		return nil, err
	}
	model := gjson.GetBytes(call.Body, "model").Str
	body, err := responses.ToChat(call.Body, model, rs.history(), call.Stream, providers.StreamUsage(d), d.DropParams || call.DropParams)
	if err != nil {
		return nil, err
	}
	chat := call
	chat.Op, chat.Body = wire.OpChat, body
	resp, err := x.h.provider.Do(ctx, d, chat)
	if err != nil {
		return nil, err
	}
	m := responses.Meta{ID: responses.EncodeID(d.Provider, d.ID, responses.NewItemID("resp")), Model: model, Created: time.Now().Unix(), Request: call.Body}
	if !call.Stream {
		out, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, providers.TransportError(ctx, d, err)
		}
		if !wire.Valid(out) {
			return nil, apierr.New(apierr.UpstreamServer, "deployment %s returned a response that is not valid JSON", d.ID)
		}
		obj, _ := responses.FromChat(out, m)
		rs.save(ctx, x, d, obj)
		return replaceBody(resp, obj), nil
	}
	st := responses.NewStream(m)
	rd := sse.NewReader(resp.Body)
	resp.Body = newEventReader(resp.Body, rd, func(ev []byte) []byte {
		out := st.Event(sse.Data(ev))
		rs.seq = st.Seq()
		return out
	}, func() ([]byte, error) {
		events, obj, _ := st.End()
		rs.seq = st.Seq()
		rs.save(ctx, x, d, obj)
		return events, io.EOF
	})
	resp.Header.Del("Content-Length")
	return resp, nil
}

// save stores a finished response (unless the request said store: false),
// before the client sees its end: a continuation sent as soon as it has
// the response finds it on any instance. A failure is logged: the
// response itself is served.
func (rs *respState) save(ctx context.Context, x *exchange, d *config.Deployment, object []byte) {
	if !rs.store {
		return
	}
	id := gjson.GetBytes(object, "id").Str
	now := x.h.now()
	r := responses.Record{ID: id, Deployment: d.ID, Previous: rs.prevID, Input: rs.input, Response: bytes.Clone(object),
		Created: now, Expires: now.Add(x.h.responsesTTL)}
	if p := rs.p; p != nil {
		r.KeyHash = p.KeyHash
		if p.Key != nil {
			r.TeamID = p.Key.TeamID
		}
	}
	if err := x.h.responses.Put(ctx, r); err != nil {
		x.h.log.LogAttrs(ctx, slog.LevelWarn, "response not stored", slog.String("call_id", x.c.CallID), slog.String("response_id", id), slog.String("error", err.Error()))
	}
}

func replaceBody(resp *http.Response, body []byte) *http.Response {
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return resp
}
