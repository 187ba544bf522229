package vertex

import (
	"context"
	"net/http"
	"strings"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/resend"
)

// authorize sets req's bearer token: d's service account's current one.
func (t *tokens) authorize(ctx context.Context, d *config.Deployment, req *http.Request) error {
	src, err := t.source(d)
	if err != nil {
		return err
	}
	tok, err := src.get(ctx, d)
	if err != nil {
		return err
	}
	req.Header["Authorization"] = []string{"Bearer " + tok.value}
	return nil
}

// renewing returns client with a transport that answers a 401 to a
// request carrying one of tokens' access tokens by renewing that token (one
// exchange for every request refused with it) and sending the request once
// more with the new one. Any other answer passes through untouched.
func renewing(client *http.Client, tokens *tokens) *http.Client {
	c := &http.Client{}
	if client != nil {
		*c = *client
	}
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = &renewTransport{base: base, tokens: tokens}
	return c
}

type renewTransport struct {
	base   http.RoundTripper
	tokens *tokens
}

func (rt *renewTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rt.base.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	value, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return resp, nil
	}
	src, stale := rt.tokens.holding(value)
	if src == nil {
		return resp, nil
	}
	again, ok := resend.Clone(req)
	if !ok {
		return resp, nil
	}
	if stale != nil {
		src.renew(stale)
	}
	tok, err := src.get(req.Context(), &config.Deployment{ID: "(renewal)"})
	if err != nil {
		return resp, nil // the 401 is the answer
	}
	again.Header["Authorization"] = []string{"Bearer " + tok.value}
	resend.Discard(resp)
	return rt.base.RoundTrip(again)
}

// holding finds the source that issued value: stale is value's token when
// it is still the current one (to renew), nil when a renewal replaced it
// already (the request is resent with the new one).
func (t *tokens) holding(value string) (src *source, stale *token) {
	t.m.Range(func(_, v any) bool {
		s := v.(*source)
		if cur := s.tok.Load(); cur != nil && cur.value == value {
			src, stale = s, cur
			return false
		}
		if p := s.prev.Load(); p != nil && p.value == value {
			src = s
			return false
		}
		return true
	})
	return src, stale
}
