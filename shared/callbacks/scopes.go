package callbacks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/spend"
)

// ScopeCallback is a team's or key's own callback, LiteLLM's shape
// (keys.Callback): {"callback_name", "callback_type", "callback_vars"}.
type ScopeCallback = keys.Callback

// WhenOf returns when a team's or key's callback is called
// (callback_type; success_and_failure when absent).
func WhenOf(c ScopeCallback) When {
	switch strings.ToLower(c.Type) {
	case "success":
		return OnSuccess
	case "failure":
		return OnFailure
	}
	return OnBoth
}

// Scopes reads the callbacks of a call's key and team (keys.LoggingCallbacks
// of their metadata: metadata.logging, which /team/{id}/callback writes,
// else a team's older metadata.callback_settings).
type Scopes interface {
	Callbacks(ctx context.Context, keyHash, teamID string) ([]ScopeCallback, error)
}

// KeyScopes is Scopes on the keys store, each key's and team's callbacks
// kept for a TTL (a change reaches the consumer within it): a batch of
// calls costs no read per call.
type KeyScopes struct {
	keys  keys.Reader
	ttl   time.Duration
	now   func() time.Time
	mu    sync.Mutex
	cache map[string]cachedScope
}

type cachedScope struct {
	cbs []ScopeCallback
	at  time.Time
}

// NewKeyScopes returns the Scopes of ks, cached for ttl.
func NewKeyScopes(ks keys.Reader, ttl time.Duration) *KeyScopes {
	return &KeyScopes{keys: ks, ttl: ttl, now: time.Now, cache: map[string]cachedScope{}}
}

// Callbacks implements Scopes: the key's callbacks when it has any (as in
// LiteLLM, a key's logging overrides its team's), else the team's. A
// record that is gone has none.
func (s *KeyScopes) Callbacks(ctx context.Context, keyHash, teamID string) ([]ScopeCallback, error) {
	if keyHash != "" {
		cbs, err := s.cached("key", keyHash, func() (json.RawMessage, error) {
			k, err := s.keys.GetKey(ctx, keyHash)
			return k.Metadata, err
		})
		if err != nil || len(cbs) > 0 {
			return cbs, err
		}
	}
	if teamID == "" {
		return nil, nil
	}
	return s.cached("team", teamID, func() (json.RawMessage, error) {
		t, err := s.keys.GetTeam(ctx, teamID)
		return t.Metadata, err
	})
}

// cached returns the callbacks of the key or team (kind) id, from the
// cache or from the metadata read returns (none when the record is gone).
func (s *KeyScopes) cached(kind, id string, read func() (json.RawMessage, error)) ([]ScopeCallback, error) {
	id = kind[:1] + id
	now := s.now()
	s.mu.Lock()
	c, ok := s.cache[id]
	s.mu.Unlock()
	if ok && now.Sub(c.at) < s.ttl {
		return c.cbs, nil
	}
	meta, err := read()
	if errors.Is(err, apierr.ErrNotFound) {
		meta, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("callbacks of %s: %w", kind, err)
	}
	cbs := keys.LoggingCallbacks(meta)
	s.mu.Lock()
	if len(s.cache) > 10000 { // bounded: start over
		clear(s.cache)
	}
	s.cache[id] = cachedScope{cbs: cbs, at: now}
	s.mu.Unlock()
	return cbs, nil
}

type scopedJob struct {
	name string
	sink Sink
	recs []Record
}

// scopedJobs groups recs by the team and key callbacks of their events
// (read once per key and team in the batch).
func (d *Dispatcher) scopedJobs(ctx context.Context, evs []spend.Event, recs []Record) ([]scopedJob, error) {
	if d.o.Scopes == nil {
		return nil, nil
	}
	type scope struct{ key, team string }
	seen := map[scope][]ScopeCallback{}
	byKey := map[string]*scopedJob{}
	var order []string
	for i := range evs {
		sc := scope{evs[i].KeyHash, evs[i].TeamID}
		if sc.key == "" && sc.team == "" {
			continue
		}
		cbs, ok := seen[sc]
		if !ok {
			var err error
			if cbs, err = d.o.Scopes.Callbacks(ctx, sc.key, sc.team); err != nil {
				return nil, err
			}
			seen[sc] = cbs
		}
		for _, cb := range cbs {
			if !WhenOf(cb).takes(&recs[i]) {
				continue
			}
			k := scopeKey(cb)
			j := byKey[k]
			if j == nil {
				s, err := d.scopedSink(ctx, k, cb)
				if err != nil {
					d.log.LogAttrs(ctx, slog.LevelError, "team or key callback not built; skipped",
						slog.String("callback", cb.Name), slog.String("error", err.Error())) // never its vars
					continue
				}
				j = &scopedJob{name: cb.Name + " (team/key)", sink: s}
				byKey[k] = j
				order = append(order, k)
			}
			j.recs = append(j.recs, recs[i])
		}
	}
	out := make([]scopedJob, 0, len(order))
	for _, k := range order {
		out = append(out, *byKey[k])
	}
	return out, nil
}

func (d *Dispatcher) scopedSink(ctx context.Context, k string, cb ScopeCallback) (Sink, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.scoped[k]; ok {
		return s, nil
	}
	f, ok := d.o.Registry[cb.Name]
	if !ok {
		return nil, fmt.Errorf("callback %q is not implemented", cb.Name)
	}
	env := d.o.Env
	env.Name, env.Params = cb.Name, cb.Vars
	if d.o.Open != nil {
		var err error
		if env.Params, err = keys.OpenCallbackVars(cb.Vars, d.o.Open); err != nil {
			return nil, err
		}
	}
	s, err := f(ctx, env)
	if err != nil {
		return nil, err
	}
	d.scoped[k] = s
	return s, nil
}

// scopeKey identifies a sink by its name and settings.
func scopeKey(cb ScopeCallback) string {
	ks := make([]string, 0, len(cb.Vars))
	for k := range cb.Vars {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var b strings.Builder
	b.WriteString(cb.Name)
	for _, k := range ks {
		b.WriteString("\x00" + k + "\x00" + cb.Vars[k])
	}
	return b.String()
}
