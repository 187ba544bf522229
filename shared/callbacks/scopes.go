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

// ScopeCallback is a team's or a key's own callback, LiteLLM's shape:
// {"callback_name": "langfuse", "callback_type": "success",
// "callback_vars": {"langfuse_public_key": ..., ...}}.
type ScopeCallback struct {
	Name string            `json:"callback_name"`
	Type string            `json:"callback_type,omitempty"` // success, failure, success_and_failure (default)
	Vars map[string]string `json:"callback_vars,omitempty"`
}

// When returns when the callback is called.
func (c ScopeCallback) When() When {
	switch strings.ToLower(c.Type) {
	case "success":
		return OnSuccess
	case "failure":
		return OnFailure
	}
	return OnBoth
}

// Scopes reads the callbacks of a call's key (metadata.logging) and team
// (metadata.callback_settings, written by /team/{id}/callback).
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

// Callbacks implements Scopes: the key's, then the team's. A record that
// is gone has none.
func (s *KeyScopes) Callbacks(ctx context.Context, keyHash, teamID string) ([]ScopeCallback, error) {
	var out []ScopeCallback
	if keyHash != "" {
		cbs, err := s.cached(ctx, "k"+keyHash, func() ([]ScopeCallback, error) {
			k, err := s.keys.GetKey(ctx, keyHash)
			return KeyLogging(k.Metadata), err
		})
		if err != nil {
			return nil, fmt.Errorf("callbacks of key: %w", err)
		}
		out = append(out, cbs...)
	}
	if teamID != "" {
		cbs, err := s.cached(ctx, "t"+teamID, func() ([]ScopeCallback, error) {
			t, err := s.keys.GetTeam(ctx, teamID)
			return TeamCallbacks(t.Metadata).List(), err
		})
		if err != nil {
			return nil, fmt.Errorf("callbacks of team: %w", err)
		}
		out = append(out, cbs...)
	}
	return out, nil
}

func (s *KeyScopes) cached(_ context.Context, id string, read func() ([]ScopeCallback, error)) ([]ScopeCallback, error) {
	now := s.now()
	s.mu.Lock()
	c, ok := s.cache[id]
	s.mu.Unlock()
	if ok && now.Sub(c.at) < s.ttl {
		return c.cbs, nil
	}
	cbs, err := read()
	if errors.Is(err, apierr.ErrNotFound) {
		cbs, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if len(s.cache) > 10000 { // bounded: start over
		clear(s.cache)
	}
	s.cache[id] = cachedScope{cbs: cbs, at: now}
	s.mu.Unlock()
	return cbs, nil
}

// KeyLogging reads a key's metadata.logging (nil when absent or not a
// list of callbacks).
func KeyLogging(meta json.RawMessage) []ScopeCallback {
	var m struct {
		Logging []ScopeCallback `json:"logging"`
	}
	if len(meta) == 0 || json.Unmarshal(meta, &m) != nil {
		return nil
	}
	out := m.Logging[:0]
	for _, c := range m.Logging {
		if c.Name = strings.ToLower(strings.TrimSpace(c.Name)); c.Name != "" {
			out = append(out, c)
		}
	}
	return out
}

// TeamSettings is a team's metadata.callback_settings, LiteLLM's shape.
type TeamSettings struct {
	Success []string          `json:"success_callback"`
	Failure []string          `json:"failure_callback"`
	Vars    map[string]string `json:"callback_vars"`
}

// TeamCallbacks reads a team's metadata.callback_settings.
func TeamCallbacks(meta json.RawMessage) TeamSettings {
	var m struct {
		Settings TeamSettings `json:"callback_settings"`
	}
	if len(meta) > 0 {
		_ = json.Unmarshal(meta, &m) // not the shape: no callbacks
	}
	return m.Settings
}

// List returns the team's callbacks, one per name.
func (t TeamSettings) List() []ScopeCallback {
	whens := map[string]When{}
	for _, n := range t.Success {
		whens[strings.ToLower(n)] |= OnSuccess
	}
	for _, n := range t.Failure {
		whens[strings.ToLower(n)] |= OnFailure
	}
	out := make([]ScopeCallback, 0, len(whens))
	for n, w := range whens {
		out = append(out, ScopeCallback{Name: n, Type: w.String(), Vars: t.Vars})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
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
			if !cb.When().takes(&recs[i]) {
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
