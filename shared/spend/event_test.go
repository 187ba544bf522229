package spend_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/spendtest"
)

func sample() spend.Event {
	k := keys.Key{Hash: keys.HashSecret("sk-1"), Alias: "a", TeamID: "t", UserID: "u"}
	return spendtest.Event(&k, "cust", time.Date(2031, 1, 2, 3, 4, 5, 6000, time.UTC), 1234)
}

func TestEventJSONRoundTrip(t *testing.T) {
	e := sample()
	e.UsageEstimated, e.Stream, e.CachedTokens = true, true, 4
	b := spend.Encode(&e)
	for _, field := range []string{`"v":1`, `"request_id":`, `"cost":1234`, `"status":"success"`, `"model_group":"gpt-4o-mini"`, `"usage_estimated":true`} {
		if !bytes.Contains(b, []byte(field)) {
			t.Errorf("JSON lacks %s: %s", field, b)
		}
	}
	got, err := spend.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(e) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, e)
	}
	e.CostKnown = false
	b = spend.Encode(&e)
	if !bytes.Contains(b, []byte(`"cost":null`)) {
		t.Errorf("unknown cost not null: %s", b)
	}
	if got, err := spend.Decode(b); err != nil || got.CostKnown {
		t.Errorf("null cost decoded as %+v, %v", got, err)
	}
}

// An event carries its request's strict-budget hold (limits.Hold) as the
// amount, the expiry and the names of its counters, and reads back as the
// same hold of the same request.
func TestEventHoldRoundTrip(t *testing.T) {
	e := sample()
	period := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	e.Hold = &limits.Hold{ID: e.RequestID, Amount: 5000, Expires: e.End.Add(20 * time.Minute), Budgets: []limits.BudgetCounter{
		{Kind: "key", ID: e.KeyHash, Base: 10, Max: 100_000},
		{Kind: "member", ID: keys.MemberID("t", "u"), Period: period, End: period.AddDate(0, 1, 0), Max: 100_000},
		{Kind: "team", ID: "t", Shard: 5, Shards: 16, Max: 100_000}, // a hot budget's shard: settled there
	}}
	b := spend.Encode(&e)
	want := fmt.Sprintf(`"hold":{"amount":5000,"expires":"2031-01-02T03:24:05.000006Z","counters":["bud#key#%s#0","bud#member#t#u#%d","bud#team#t#0.5"]}`, e.KeyHash, period.Unix())
	if !bytes.Contains(b, []byte(want)) {
		t.Errorf("JSON %s\nlacks %s", b, want)
	}
	got, err := spend.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if h := got.Hold; h == nil || h.ID != e.RequestID || h.Amount != 5000 || !h.Expires.Equal(e.Hold.Expires) ||
		!slices.Equal(h.Counters(), e.Hold.Counters()) {
		t.Errorf("hold read back as %+v, want the counters %v of %+v", got.Hold, e.Hold.Counters(), e.Hold)
	}
}

// Bad input is rejected with a reason, never recorded.
func TestDecodeRejects(t *testing.T) {
	good := string(spend.Encode(func() *spend.Event { e := sample(); return &e }()))
	set := func(field, value string) string {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(good), &m); err != nil {
			t.Fatal(err)
		}
		if value == "" {
			delete(m, field)
		} else {
			m[field] = json.RawMessage(value)
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	for _, tt := range []struct{ name, body, reason string }{
		{"negative cost", set("cost", "-5"), "negative cost"},
		{"NaN cost", set("cost", `"NaN"`), "not a number"},
		{"infinite cost", set("cost", `"Infinity"`), "not a number"},
		{"huge cost", set("cost", "1e999"), "not an integer"},
		{"fractional cost", set("cost", "1.5"), "not an integer"},
		{"cost not a number", set("cost", "true"), "not a number"},
		{"unknown version", set("v", "3"), "unknown version 3"},
		{"version 1 naming an organization", set("organization_id", `"org-1"`), "names no organization_id"},
		{"no version", set("v", ""), "unknown version 0"},
		{"missing request id", set("request_id", ""), "missing request_id"},
		{"empty request id", set("request_id", `""`), "missing request_id"},
		{"missing end", set("end", ""), "missing end"},
		{"bad key hash", set("key_hash", `"sk-secret"`), "key_hash"},
		{"negative tokens", set("prompt_tokens", "-1"), "negative token"},
		{"unknown status", set("status", `"ok"`), "unknown status"},
		{"not JSON", `{"v":1,`, "invalid spend event"},
		{"not an object", `[1]`, "invalid spend event"},
		{"wrong type", set("prompt_tokens", `"12"`), "invalid spend event"},
		{"hold counter not a budget's", set("hold", `{"amount":1,"expires":"2031-01-02T03:04:05Z","counters":["rl#key#k#0#0"]}`), "budget counter name"},
		{"hold counter not canonical", set("hold", `{"amount":1,"expires":"2031-01-02T03:04:05Z","counters":["bud#key#k#007"]}`), "budget counter name"},
		{"hold counter twice", set("hold", `{"amount":1,"expires":"2031-01-02T03:04:05Z","counters":["bud#key#k#0","bud#key#k#0"]}`), "hold budget"},
		{"hold without counters", set("hold", `{"amount":1,"expires":"2031-01-02T03:04:05Z","counters":[]}`), "hold on 0 budgets"},
		{"hold of a negative amount", set("hold", `{"amount":-1,"expires":"2031-01-02T03:04:05Z","counters":["bud#key#k#0"]}`), "negative amount"},
		{"hold without expiry", set("hold", `{"amount":1,"counters":["bud#key#k#0"]}`), "without an expiry"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := spend.Decode([]byte(tt.body))
			if !errors.Is(err, spend.ErrInvalid) || !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("Decode(%s) = %v; want ErrInvalid saying %q", tt.body, err, tt.reason)
			}
		})
	}
}

func TestRefsAndDeltas(t *testing.T) {
	e := sample()
	var got []string
	for _, d := range e.Deltas() {
		got = append(got, fmt.Sprintf("%s=%d", d.Ref, d.Nanos))
	}
	want := []string{"key#" + e.KeyHash + "=1234", "team#t=1234", "user#u=1234", "member#t#u=1234", "enduser#cust=1234"}
	if !slices.Equal(got, want) {
		t.Errorf("deltas = %v, want %v", got, want)
	}
	e.CostKnown = false
	if len(e.Deltas()) != 0 {
		t.Error("an unknown cost adds spend")
	}
}

type failingStore struct{ spend.Store }

func (failingStore) Record(context.Context, []spend.Event) (spend.Result, error) {
	return spend.Result{}, errors.New("store down")
}

func TestHandleSQS(t *testing.T) {
	ks := keys.NewMemory()
	st := spend.NewMemory(ks)
	var logs bytes.Buffer
	c := spend.NewConsumer(st, slog.New(slog.NewJSONHandler(&logs, nil)))
	good1, good2 := sample(), sample()
	good2.RequestID = "other"
	bad := sample()
	bad.Cost = -1
	batch := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", Body: string(spend.Encode(&good1))},
		{MessageId: "m2", Body: `{"v":1,"request_id":"x"`},
		{MessageId: "m3", Body: string(spend.Encode(&bad))},
		{MessageId: "m4", Body: string(spend.Encode(&good2))},
		{MessageId: "m5", Body: string(spend.Encode(&good1))}, // duplicate
	}}
	resp, err := c.HandleSQS(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	if !slices.Equal(failed, []string{"m2", "m3"}) {
		t.Errorf("failed = %v, want [m2 m3]", failed)
	}
	if n := strings.Count(logs.String(), `"msg":"spend event rejected"`); n != 2 || !strings.Contains(logs.String(), "negative cost") {
		t.Errorf("rejections logged %d times (want 2, with reasons):\n%s", n, logs.String())
	}
	got, _ := st.Logs(context.Background(), spend.LogQuery{From: good1.End.Add(-time.Hour), To: good1.End.Add(time.Hour)})
	if len(got) != 2 {
		t.Errorf("%d logs recorded, want 2", len(got))
	}
	// A store that fails: every valid message is retried.
	c = spend.NewConsumer(failingStore{}, slog.New(slog.DiscardHandler))
	resp, _ = c.HandleSQS(context.Background(), batch)
	if len(resp.BatchItemFailures) != 5 {
		t.Errorf("store down: %d failures, want 5", len(resp.BatchItemFailures))
	}
}

// An event no path could record is logged whole, and the replay reads it
// back from the log.
func TestLostAndReplay(t *testing.T) {
	var logs bytes.Buffer
	c := spend.NewConsumer(failingStore{}, slog.New(slog.NewJSONHandler(&logs, nil)))
	e1, e2 := sample(), sample()
	e2.RequestID, e2.CostKnown = "r2", false
	c.Save(context.Background(), []spend.Event{e1, e2}, errors.New("queue down"))
	if c.Lost() != 2 {
		t.Fatalf("Lost = %d, want 2", c.Lost())
	}
	logs.WriteString("not json\n{\"msg\":\"something else\"}\n")
	logs.WriteString(string(spend.Encode(&e1)) + "\n") // a bare event line (a duplicate)
	ks := keys.NewMemory()
	st := spend.NewMemory(ks)
	rc := spend.NewConsumer(st, slog.New(slog.DiscardHandler))
	rec, dup, err := rc.Replay(context.Background(), bytes.NewReader(logs.Bytes()))
	if err != nil || rec != 2 || dup != 1 {
		t.Fatalf("Replay = %d recorded, %d duplicates, %v; want 2, 1, nil\n%s", rec, dup, err, logs.String())
	}
	got, _ := st.Logs(context.Background(), spend.LogQuery{RequestID: "r2"})
	if len(got) != 1 || got[0].CostKnown {
		t.Errorf("replayed r2 = %+v", got)
	}
}

func TestQueue(t *testing.T) {
	ks := keys.NewMemory()
	k := keys.Key{Hash: keys.HashSecret("sk-q")}
	if err := ks.CreateKey(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	st := spend.NewMemory(ks)
	q := spend.NewQueue(spend.NewConsumer(st, slog.New(slog.DiscardHandler)), spend.QueueOptions{Size: 50, Batch: 7})
	now := time.Now()
	for i := range 500 {
		e := spendtest.Event(&k, "", now, int64(i))
		q.Publish(e)
	}
	if err := q.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, _ := ks.GetKey(context.Background(), k.Hash)
	if keys.Nanos(got.Spend) != 499*500/2 {
		t.Errorf("spend after flush = %v, want %v nano", keys.Nanos(got.Spend), 499*500/2)
	}
	e := spendtest.Event(&k, "", now, 1)
	q.Publish(e)
	if err := q.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	q.Publish(spendtest.Event(&k, "", now, 1)) // after Close: recorded in place
	got, _ = ks.GetKey(context.Background(), k.Hash)
	if keys.Nanos(got.Spend) != 499*500/2+2 {
		t.Errorf("spend after close = %v", keys.Nanos(got.Spend))
	}
}

// Publishing copies a value into a channel: no allocation on the request's
// goroutine.
func TestQueuePublishAllocs(t *testing.T) {
	st := spend.NewMemory(keys.NewMemory())
	q := spend.NewQueue(spend.NewConsumer(st, slog.New(slog.DiscardHandler)), spend.QueueOptions{Size: 100_000})
	defer q.Close(context.Background())
	e := sample()
	if n := testing.AllocsPerRun(1000, func() { q.Publish(e) }); n > 0 {
		t.Errorf("Publish: %v allocs", n)
	}
}

// TestEventOrganization: an event naming an organization is version 2,
// carries organization_id through its JSON form and adds its cost to the
// organization's record; a version 1 event (written before organizations)
// still decodes, naming none.
func TestEventOrganization(t *testing.T) {
	e := sample()
	e.Version, e.OrganizationID = spend.VersionOrg, "org-1"
	b := spend.Encode(&e)
	if !strings.Contains(string(b), `"v":2`) || !strings.Contains(string(b), `"organization_id":"org-1"`) {
		t.Fatalf("JSON form %s: want v 2 and organization_id", b)
	}
	got, err := spend.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.OrganizationID != "org-1" || got.Version != spend.VersionOrg {
		t.Fatalf("decoded %+v", got)
	}
	var refs []string
	for _, d := range got.Deltas() {
		refs = append(refs, fmt.Sprintf("%s=%d", d.Ref, d.Nanos))
	}
	if !slices.Contains(refs, "org#org-1=1234") {
		t.Errorf("deltas = %v, want the organization's", refs)
	}

	old := sample() // version 1, as a gateway before organizations wrote it
	b = spend.Encode(&old)
	if strings.Contains(string(b), "organization_id") {
		t.Fatalf("a version 1 event writes organization_id: %s", b)
	}
	got, err = spend.Decode(b)
	if err != nil || got.OrganizationID != "" || got.Version != spend.Version {
		t.Fatalf("version 1 event: %+v, %v", got, err)
	}
	for _, d := range got.Deltas() {
		if strings.HasPrefix(d.Ref.String(), "org#") {
			t.Errorf("a version 1 event adds to %s", d.Ref)
		}
	}
}
