package secrets

import (
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluice-gw/sluice/shared/resend"
)

// keyHeaders are where the vendors put a deployment's key (openai,
// anthropic, azure).
var keyHeaders = [...]string{"Authorization", "X-Api-Key", "Api-Key"}

// Transport wraps base: when a provider answers 401 or 403 to a request
// that carried a key read from the secrets (a bound one: Ref), the secrets
// are re-read at once (one read for every request that saw the same
// rejection, at most one per RejectGap) and, when the key changed, the
// request is sent once more with the new key. Any other answer passes
// through untouched: no allocation, no call.
func (r *Resolver) Transport(base http.RoundTripper) http.RoundTripper {
	return &rejectTransport{r: r, base: base}
}

type rejectTransport struct {
	r    *Resolver
	base http.RoundTripper
}

func (t *rejectTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	sent := t.r.o.Now()
	resp, err := t.base.RoundTrip(req)
	if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
		return resp, err
	}
	old, cur, ok := t.r.rejected(req, sent)
	if !ok || cur == old {
		return resp, nil
	}
	again, ok := resend.Clone(req)
	if !ok {
		return resp, nil
	}
	for _, h := range keyHeaders {
		if v := again.Header.Get(h); v != "" && strings.Contains(v, old) {
			again.Header.Set(h, strings.ReplaceAll(v, old, cur))
		}
	}
	resend.Discard(resp)
	return t.base.RoundTrip(again)
}

// rejected finds the bound key req carried (old) and the key to send
// instead (cur), re-reading the secrets when old is still the current
// value, no read started after req was sent, and no rejection started one
// within RejectGap.
func (r *Resolver) rejected(req *http.Request, sent time.Time) (old, cur string, ok bool) {
	name, old, ok := r.carried(req.Header)
	if !ok {
		return "", "", false
	}
	if cur = *r.bound(name).Load(); cur != old {
		return old, cur, true // re-read since: send the new key
	}
	_, _ = r.refresh(req.Context(), func(started, _ time.Time) bool { // under r.mu
		now := r.o.Now()
		if !started.Before(sent) || (!r.rejectRead.IsZero() && now.Sub(r.rejectRead) < r.o.RejectGap) {
			return false
		}
		r.rejectRead = now
		return true
	})
	return old, *r.bound(name).Load(), true
}

// carried is the bound name whose current or previous value req's key
// headers hold.
func (r *Resolver) carried(h http.Header) (name, value string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for n, p := range r.refs {
		for _, v := range [...]string{*p.Load(), r.prev[n]} {
			if v == "" {
				continue
			}
			for _, k := range keyHeaders {
				if hv := h.Get(k); hv != "" && strings.Contains(hv, v) {
					return n, v, true
				}
			}
		}
	}
	return "", "", false
}

func (r *Resolver) bound(name string) *atomic.Pointer[string] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refs[name]
}
