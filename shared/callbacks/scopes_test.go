package callbacks_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/callbacks"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/models"
	"github.com/sluice-gw/sluice/shared/spend"
)

// TestScopedCallbacks: a team's callback (metadata.logging, as POST
// /team/{id}/callback writes it) gets its team's calls, built with its
// callback_vars; a key with callbacks of its own overrides its team's;
// calls of other teams go to neither; the older callback_settings shape
// is read too.
func TestScopedCallbacks(t *testing.T) {
	ctx := context.Background()
	ks := keys.NewMemory()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(ks.Teams().Create(ctx, keys.Team{ID: "ta", Settings: keys.Settings{Metadata: json.RawMessage(
		`{"logging":[{"callback_name":"hook","callback_type":"success","callback_vars":{"dest":"team-a"}}]}`)}}))
	must(ks.Teams().Create(ctx, keys.Team{ID: "tb", Settings: keys.Settings{Metadata: json.RawMessage(
		`{"callback_settings":{"success_callback":["hook"],"callback_vars":{"dest":"team-b"}}}`)}}))
	must(ks.Teams().Create(ctx, keys.Team{ID: "tc"}))
	kOwn := keys.Key{Hash: strings.Repeat("b", 64), TeamID: "ta", Settings: keys.Settings{Metadata: json.RawMessage(
		`{"logging":[{"callback_name":"hook","callback_vars":{"dest":"key"}}]}`)}}
	kPlain := keys.Key{Hash: strings.Repeat("c", 64), TeamID: "ta"}
	must(ks.CreateKey(ctx, kOwn))
	must(ks.CreateKey(ctx, kPlain))

	var mu sync.Mutex
	got := map[string][]string{} // dest -> call ids (sinks run at once)
	reg := callbacks.Registry{"hook": func(_ context.Context, env callbacks.Env) (callbacks.Sink, error) {
		dest := env.Var("dest", "")
		return sinkFunc(func(recs []callbacks.Record) {
			mu.Lock()
			defer mu.Unlock()
			for _, r := range recs {
				got[dest] = append(got[dest], r.CallID)
			}
		}), nil
	}}
	d, err := callbacks.New(ctx, callbacks.Options{Callbacks: config.Callbacks{}, Registry: reg, Scopes: callbacks.NewKeyScopes(ks, time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	ev := func(id, key, team string) spend.Event {
		e := event(id, spend.StatusSuccess)
		e.KeyHash, e.TeamID = key, team
		return e
	}
	evs := []spend.Event{ev("1", kPlain.Hash, "ta"), ev("2", kOwn.Hash, "ta"), ev("3", "", "tb"), ev("4", "", "tc"), ev("5", "", "")}
	if err := d.Deliver(ctx, evs); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"team-a": "1", "key": "2", "team-b": "3"}
	if len(got) != len(want) {
		t.Errorf("delivered %v, want %v", got, want)
	}
	for dest, id := range want {
		if g := got[dest]; len(g) != 1 || g[0] != id {
			t.Errorf("%s got %v, want [%s]", dest, g, id)
		}
	}
}

type sinkFunc func([]callbacks.Record)

func (f sinkFunc) Send(_ context.Context, recs []callbacks.Record) error { f(recs); return nil }

// TestScopedCallbackVarsSealed: a team's credentials sealed at rest
// (keys.SealCallbackVars, as the admin API stores them) reach its sink
// opened; a callback whose credential does not open (another salt key) is
// skipped, never built with the sealed text, and the other team's still
// gets its calls.
func TestScopedCallbackVarsSealed(t *testing.T) {
	ctx := context.Background()
	ks := keys.NewMemory()
	sealer, _ := models.NewSealer("salt-a")
	other, _ := models.NewSealer("salt-b")
	meta := func(s *models.Sealer, secret string) json.RawMessage {
		m, err := keys.SealCallbackVars(json.RawMessage(`{"logging":[{"callback_name":"hook","callback_vars":{"dest":"d-`+secret+`","hook_secret":"`+secret+`"}}]}`), s)
		if err != nil || strings.Contains(string(m), `"`+secret+`"`) {
			t.Fatalf("sealed %s: %v", m, err)
		}
		return m
	}
	for id, m := range map[string]json.RawMessage{"ta": meta(sealer, "s3cr3t-a"), "tb": meta(other, "s3cr3t-b")} {
		if err := ks.Teams().Create(ctx, keys.Team{ID: id, Settings: keys.Settings{Metadata: m}}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	got := map[string]string{} // dest -> the secret its sink was built with
	reg := callbacks.Registry{"hook": func(_ context.Context, env callbacks.Env) (callbacks.Sink, error) {
		mu.Lock()
		got[env.Var("dest", "")] = env.Var("hook_secret", "")
		mu.Unlock()
		return sinkFunc(func([]callbacks.Record) {}), nil
	}}
	d, err := callbacks.New(ctx, callbacks.Options{Registry: reg, Scopes: callbacks.NewKeyScopes(ks, time.Minute), Open: sealer.Open})
	if err != nil {
		t.Fatal(err)
	}
	a, b := event("1", spend.StatusSuccess), event("2", spend.StatusSuccess)
	a.TeamID, b.TeamID = "ta", "tb"
	if err := d.Deliver(ctx, []spend.Event{a, b}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got["d-s3cr3t-a"] != "s3cr3t-a" {
		t.Errorf("sinks built with %v, want only d-s3cr3t-a with its secret opened", got)
	}
}
