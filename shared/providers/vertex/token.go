package vertex

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/jwt"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
)

// Access tokens: a service account's key signs a JWT (RS256) that its
// token_uri exchanges for an OAuth access token (golang.org/x/oauth2/jwt,
// which links no more than net/http; not x/oauth2/google, whose metadata
// client is built at package init). A token serves every deployment of the
// same key until EarlyExpiry before it expires; one exchange serves every
// request that needs a token at once (x/oauth2's ReuseTokenSource holds its
// lock over the exchange), and a 401 from Vertex renews it once.

// Scope is the OAuth scope Vertex AI needs.
const Scope = "https://www.googleapis.com/auth/cloud-platform"

// DefaultTokenURI is Google's token endpoint, for a key without token_uri.
const DefaultTokenURI = "https://oauth2.googleapis.com/token"

// EarlyExpiry is how long before its expiry a token is replaced.
const EarlyExpiry = time.Minute

// exchangeTimeout bounds one exchange at the token endpoint.
const exchangeTimeout = 10 * time.Second

// tokens holds one source per service account key (its JSON text).
type tokens struct {
	client *http.Client
	m      sync.Map // string (the key's JSON) -> *source
}

// source is one service account's access tokens.
type source struct {
	cfg  *jwt.Config
	ctx  context.Context // carries the exchange's HTTP client
	tok  atomic.Pointer[token]
	prev atomic.Pointer[token] // the token the last renewal replaced

	mu sync.Mutex
	ts oauth2.TokenSource // replaced by renew
}

// token is an access token, good until until.
type token struct {
	value string
	until time.Time
	ts    oauth2.TokenSource // the source that made it
}

// source returns the token source of d's current key.
func (t *tokens) source(d *config.Deployment) (*source, error) {
	creds := d.Vertex.Creds()
	if s, ok := t.m.Load(creds); ok {
		return s.(*source), nil
	}
	r := gjson.GetMany(creds, "client_email", "private_key", "private_key_id", "token_uri")
	if r[0].Str == "" || r[1].Str == "" {
		return nil, apierr.New(apierr.UpstreamAuth, "deployment %s: vertex_credentials is not a service account's key", d.ID)
	}
	cfg := &jwt.Config{
		Email: r[0].Str, PrivateKey: []byte(r[1].Str), PrivateKeyID: r[2].Str,
		Scopes: []string{Scope}, TokenURL: r[3].Str,
	}
	if cfg.TokenURL == "" {
		cfg.TokenURL = DefaultTokenURI
	}
	hc := &http.Client{Timeout: exchangeTimeout}
	if t.client != nil {
		hc.Transport = t.client.Transport
	}
	s := &source{cfg: cfg, ctx: context.WithValue(context.Background(), oauth2.HTTPClient, hc)}
	s.ts = s.newTS()
	actual, _ := t.m.LoadOrStore(creds, s)
	return actual.(*source), nil
}

func (s *source) newTS() oauth2.TokenSource {
	return oauth2.ReuseTokenSourceWithExpiry(nil, s.cfg.TokenSource(s.ctx), EarlyExpiry)
}

type fetched struct {
	t   *oauth2.Token
	err error
}

// get returns a token good for now: the one held, else one from the
// exchange every caller shares. The caller stops waiting when ctx ends;
// the exchange goes on for the others.
func (s *source) get(ctx context.Context, d *config.Deployment) (*token, error) {
	if t := s.tok.Load(); t != nil && time.Now().Before(t.until) {
		return t, nil
	}
	s.mu.Lock()
	ts := s.ts
	s.mu.Unlock()
	ch := make(chan fetched, 1)
	go func() {
		t, err := ts.Token()
		ch <- fetched{t, err}
	}()
	var f fetched
	select {
	case f = <-ch:
	case <-ctx.Done():
		return nil, &apierr.Error{Kind: apierr.UpstreamTimeout, Message: fmt.Sprintf("deployment %s timed out waiting for an access token", d.ID)}
	}
	if f.err != nil {
		return nil, exchangeError(d, f.err)
	}
	until := f.t.Expiry.Add(-EarlyExpiry)
	if f.t.Expiry.IsZero() { // no expires_in: ask the source again in a while
		until = time.Now().Add(EarlyExpiry)
	}
	t := &token{value: f.t.AccessToken, until: until, ts: ts}
	if old := s.tok.Load(); old == nil || old.value != t.value || old.ts != ts {
		s.tok.Store(t)
	} else {
		t = old
	}
	return t, nil
}

// renew drops stale (a token Vertex refused) so that the next get makes a
// new exchange; many requests refused with the same token renew it once.
func (s *source) renew(stale *token) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if stale.ts == s.ts {
		s.ts = s.newTS()
		s.prev.Store(stale)
	}
	s.tok.CompareAndSwap(stale, nil)
}

// exchangeError is a failed exchange in the gateway's vocabulary. It
// quotes nothing the token endpoint said but its error code: an endpoint
// may echo the signed assertion.
func exchangeError(d *config.Deployment, err error) *apierr.Error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		status := re.Response.StatusCode
		msg := fmt.Sprintf("deployment %s: the token endpoint refused the service account's key (%d", d.ID, status)
		if c := gjson.GetBytes(re.Body, "error").Str; safeCode(c) {
			msg += " " + c
		}
		msg += ")"
		kind := apierr.UpstreamAuth
		if status >= 500 || status == http.StatusTooManyRequests {
			kind = apierr.UpstreamServer
		}
		return &apierr.Error{Kind: kind, Message: msg}
	}
	// x/oauth2 formats (%v) a failure to post or read, so it does not
	// unwrap; its words tell it from a key that does not sign.
	if strings.Contains(err.Error(), "cannot fetch token") {
		return &apierr.Error{Kind: apierr.UpstreamConnection, Message: fmt.Sprintf("deployment %s: could not reach the token endpoint or read its answer", d.ID)}
	}
	return &apierr.Error{Kind: apierr.UpstreamAuth, Message: fmt.Sprintf("deployment %s: could not sign or read an access token with the service account's key", d.ID)}
}

// safeCode reports whether an OAuth error code may be quoted (RFC 6749's
// codes: a few lowercase words).
func safeCode(c string) bool {
	if c == "" || len(c) > 40 {
		return false
	}
	for _, r := range c {
		if (r < 'a' || r > 'z') && r != '_' {
			return false
		}
	}
	return true
}
