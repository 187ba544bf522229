package callbacks_test

import (
	"context"
	"encoding/json"
	"errors"
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

// recorder is a sink that keeps what it was sent, failing its first fail
// calls.
type recorder struct {
	mu    sync.Mutex
	fail  int
	err   error
	calls int
	got   []callbacks.Record
}

func (r *recorder) Send(_ context.Context, recs []callbacks.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.fail > 0 {
		r.fail--
		return r.err
	}
	r.got = append(r.got, recs...)
	return nil
}

func (r *recorder) ids() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, x := range r.got {
		out = append(out, x.CallID)
	}
	return out
}

func event(id string, st spend.Status) spend.Event {
	t := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	return spend.Event{Version: 1, RequestID: id, Start: t, End: t.Add(time.Second), Status: st,
		KeyHash: "ab", KeyAlias: "alias", TeamID: "team", UserID: "u", ModelGroup: "gpt", Cost: 1500, CostKnown: true,
		PromptTokens: 10, CompletionTokens: 2, TTFT: 300 * time.Millisecond,
		Messages: json.RawMessage(`[{"role":"user","content":"secret prompt"}]`), Response: json.RawMessage(`{"x":"secret answer"}`)}
}

func dispatcher(t *testing.T, cb config.Callbacks, sinks map[string]*recorder) *callbacks.Dispatcher {
	t.Helper()
	reg := callbacks.Registry{}
	for n, s := range sinks {
		reg[n] = func(context.Context, callbacks.Env) (callbacks.Sink, error) { return s, nil }
	}
	d, err := callbacks.New(context.Background(), callbacks.Options{Callbacks: cb, Registry: reg, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestDeliverSelects sends success_callback sinks the successes,
// failure_callback sinks the failures and callbacks sinks both.
func TestDeliverSelects(t *testing.T) {
	ok, bad, both := &recorder{}, &recorder{}, &recorder{}
	d := dispatcher(t, config.Callbacks{Success: []string{"ok"}, Failure: []string{"bad"}, Both: []string{"both"}},
		map[string]*recorder{"ok": ok, "bad": bad, "both": both})
	evs := []spend.Event{event("a", spend.StatusSuccess), event("b", spend.StatusFailure), event("c", spend.StatusDisconnected)}
	if err := d.Deliver(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
	if got := ok.ids(); len(got) != 1 || got[0] != "a" {
		t.Errorf("success sink got %v", got)
	}
	if got := bad.ids(); len(got) != 2 || got[0] != "b" || got[1] != "c" {
		t.Errorf("failure sink got %v", got)
	}
	if got := both.ids(); len(got) != 3 {
		t.Errorf("both sink got %v", got)
	}
	r := ok.got[0]
	if r.CostNanos != 1500 || !r.CostKnown || r.Cost() != 1.5e-6 || r.CompletionStart.Sub(r.Start) != 300*time.Millisecond || r.KeyAlias != "alias" {
		t.Errorf("record = %+v", r)
	}
	if len(r.Messages) == 0 {
		t.Error("content dropped though message logging is on")
	}
}

// TestDeliverRedacts keeps contents and key details out with
// turn_off_message_logging and redact_user_api_key_info; cost stays.
func TestDeliverRedacts(t *testing.T) {
	s := &recorder{}
	d := dispatcher(t, config.Callbacks{Both: []string{"s"}, TurnOffMessageLogging: true, RedactUserAPIKeyInfo: true}, map[string]*recorder{"s": s})
	if err := d.Deliver(context.Background(), []spend.Event{event("a", spend.StatusSuccess)}); err != nil {
		t.Fatal(err)
	}
	r := s.got[0]
	if r.Messages != nil || r.Response != nil || r.KeyHash != "" || r.KeyAlias != "" || r.TeamID != "" || r.UserID != "" {
		t.Errorf("not redacted: %+v", r)
	}
	if r.CostNanos != 1500 || r.PromptTokens != 10 {
		t.Errorf("usage or cost dropped: %+v", r)
	}
	b, _ := json.Marshal(callbacks.NewPayload(&r))
	for _, secret := range []string{"secret prompt", "secret answer", `"alias"`} {
		if strings.Contains(string(b), secret) {
			t.Errorf("payload holds %q: %s", secret, b)
		}
	}
}

// TestDeliverRetries retries a failing sink, fails once the attempts are
// spent (the batch is then redelivered), and drops what a sink rejects
// permanently.
func TestDeliverRetries(t *testing.T) {
	flaky := &recorder{fail: 2, err: errors.New("503")}
	d := dispatcher(t, config.Callbacks{Both: []string{"s"}}, map[string]*recorder{"s": flaky})
	if err := d.Deliver(context.Background(), []spend.Event{event("a", spend.StatusSuccess)}); err != nil || flaky.calls != 3 {
		t.Fatalf("err %v after %d calls; want success on the third", err, flaky.calls)
	}
	down := &recorder{fail: 100, err: errors.New("connection refused")}
	d = dispatcher(t, config.Callbacks{Both: []string{"s"}}, map[string]*recorder{"s": down})
	if err := d.Deliver(context.Background(), []spend.Event{event("a", spend.StatusSuccess)}); err == nil || down.calls != 3 {
		t.Fatalf("err %v after %d calls; want an error after 3", err, down.calls)
	}
	rejects := &recorder{fail: 100, err: callbacks.Permanent(errors.New("400"))}
	d = dispatcher(t, config.Callbacks{Both: []string{"s"}}, map[string]*recorder{"s": rejects})
	if err := d.Deliver(context.Background(), []spend.Event{event("a", spend.StatusSuccess)}); err != nil || rejects.calls != 1 {
		t.Fatalf("err %v after %d calls; want nil after 1 (dropped)", err, rejects.calls)
	}
}

// TestScopedCallbacks: a team's callback (metadata.logging, as POST
// /team/{id}/callback writes it) gets its team's calls, built with its
// callback_vars; a key with callbacks of its own overrides its team's;
// calls of other teams go to neither; the older callback_settings shape
// is read too.
func TestScopedCallbacks(t *testing.T) {
	ctx := context.Background()
	ks := keys.NewMemory()
	kOwn := keys.Key{Hash: strings.Repeat("b", 64), TeamID: "ta", Settings: keys.Settings{Metadata: json.RawMessage(
		`{"logging":[{"callback_name":"hook","callback_vars":{"dest":"key"}}]}`)}}
	kPlain := keys.Key{Hash: strings.Repeat("c", 64), TeamID: "ta"}
	for _, err := range []error{ // in order: the teams, then their keys
		ks.Teams().Create(ctx, keys.Team{ID: "ta", Settings: keys.Settings{Metadata: json.RawMessage(
			`{"logging":[{"callback_name":"hook","callback_type":"success","callback_vars":{"dest":"team-a"}}]}`)}}),
		ks.Teams().Create(ctx, keys.Team{ID: "tb", Settings: keys.Settings{Metadata: json.RawMessage(
			`{"callback_settings":{"success_callback":["hook"],"callback_vars":{"dest":"team-b"}}}`)}}),
		ks.Teams().Create(ctx, keys.Team{ID: "tc"}),
		ks.CreateKey(ctx, kOwn),
		ks.CreateKey(ctx, kPlain),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}

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
