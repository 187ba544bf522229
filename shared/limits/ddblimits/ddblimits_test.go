package ddblimits_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/limits/ddblimits"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

// localStore returns a store on a fresh counters table of DynamoDB Local,
// with its client and the table's name.
func localStore(t *testing.T) (*ddblimits.Store, *dynamodb.Client, string) {
	table, client := ddblocal.Tables(t).Counters, ddblocal.Client(t)
	return ddblimits.New(client, table, ddblimits.Options{}), client, table
}

// TestOneRoundTrip asserts the hot path's cost: an admission with key,
// team, user, deployment and model-group scopes is one DynamoDB call; the TPM correction is one call per TPM-limited
// counter, concurrent.
func TestOneRoundTrip(t *testing.T) {
	st, _, _ := localStore(t)
	bg := context.Background()
	now := time.Date(2030, 1, 1, 0, 0, 10, 0, time.UTC)
	full := limits.AdmitRequest{
		Now:    now,
		Tokens: 50,
		Scopes: []limits.Scope{
			{Kind: limits.KindKey, ID: keys.HashSecret("sk-one"), RPM: 10, TPM: 1000},
			{Kind: limits.KindTeam, ID: "t1", RPM: 100},
			{Kind: limits.KindUser, ID: "u1", RPM: 100},
			{Kind: limits.KindDeployment, ID: "dep-1", RPM: 100, TPM: 10_000},
			{Kind: limits.KindModelGroup, ID: "gpt-4o", RPM: 1000, Shards: 2},
		},
	}
	tests := []struct {
		name       string
		req        limits.AdmitRequest
		wantCalls  int
		wantAdjust int
		wantFree   int
	}{
		{"every scope", full, 1, 2, 0},
		{"one scope", limits.AdmitRequest{Now: now, Scopes: full.Scopes[2:3]}, 1, 0, 0},
		{"unlimited scopes only", limits.AdmitRequest{Now: now, Scopes: []limits.Scope{{Kind: limits.KindUser, ID: "free"}}}, 0, 0, 0},
		{"parallel bound only", limits.AdmitRequest{Now: now, Lease: "call-1.1", LeaseExpires: now.Add(time.Minute),
			Scopes: []limits.Scope{{Kind: limits.KindKey, ID: "par", Parallel: 4}}}, 1, 0, 1},
		{"parallel bound with every scope", limits.AdmitRequest{Now: now, Tokens: 50, Lease: "call-2.1", LeaseExpires: now.Add(time.Minute),
			Scopes: append([]limits.Scope{{Kind: limits.KindTeam, ID: "par", Parallel: 4}}, full.Scopes...)}, 1, 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, count := ddb.WithCallCount(bg)
			d, err := st.Admit(ctx, tt.req)
			if err != nil || !d.Allowed {
				t.Fatalf("Admit = %+v, %v", d, err)
			}
			if count.Calls() != tt.wantCalls {
				t.Errorf("admission made %d DynamoDB calls %v, want %d", count.Calls(), count.Operations(), tt.wantCalls)
			}
			count.Reset()
			if err := st.AdjustTokens(ctx, d.Admission, -10); err != nil {
				t.Fatal(err)
			}
			if count.Calls() != tt.wantAdjust {
				t.Errorf("correction made %d calls %v, want %d", count.Calls(), count.Operations(), tt.wantAdjust)
			}
			count.Reset()
			if err := st.Release(ctx, d.Admission); err != nil {
				t.Fatal(err)
			}
			if count.Calls() != tt.wantFree {
				t.Errorf("release made %d calls %v, want %d", count.Calls(), count.Operations(), tt.wantFree)
			}
		})
	}
}

// TestUnreachable checks the fail-open/fail-closed policy, and that a
// DynamoDB that never answers cannot hang a request past its deadline.
func TestUnreachable(t *testing.T) {
	st := ddblimits.New(ddb.NewClient(ddblocal.ConfigAt(ddblocal.Unanswered(t)), ddb.ClientOptions{Emulator: true, MaxAttempts: 1}), "counters",
		ddblimits.Options{Timeout: 200 * time.Millisecond, AdmitTimeout: 200 * time.Millisecond})

	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	rpm := limits.Scope{Kind: limits.KindKey, ID: "k", RPM: 10}
	tests := []struct {
		name       string
		req        limits.AdmitRequest
		wantOpen   bool
		wantClosed bool
	}{
		{"rate limit fails open", limits.AdmitRequest{Now: now, Scopes: []limits.Scope{rpm}}, true, false},
		{"two rate limits fail open", limits.AdmitRequest{Now: now, Scopes: []limits.Scope{rpm, {Kind: limits.KindTeam, ID: "t", TPM: 5}}}, true, false},
		{"rate limit set to fail closed", limits.AdmitRequest{Now: now, Scopes: []limits.Scope{{Kind: limits.KindKey, ID: "k", RPM: 10, OnError: limits.FailClosed}}}, false, true},
	}
	var opened int64
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			d, err := st.Admit(ctx, tt.req)
			if ctx.Err() != nil {
				t.Fatal("Admit outlived its own timeout")
			}
			if tt.wantClosed && (!errors.Is(err, limits.ErrUnavailable) || d.Allowed) {
				t.Fatalf("Admit = %+v, %v; want ErrUnavailable", d, err)
			}
			if tt.wantOpen {
				if err != nil || !d.Allowed || !d.FailedOpen {
					t.Fatalf("Admit = %+v, %v; want allowed, failed open", d, err)
				}
				opened++
			}
			if st.FailedOpen() != opened {
				t.Errorf("FailedOpen() = %d, want %d", st.FailedOpen(), opened)
			}
		})
	}
}

// A store that does not answer before the request's own deadline (less
// limits.AdmitMargin) comes before the admission's cap refuses the
// request, fail-open scope or not: it is slow, not known down, and its
// write may yet be applied, so letting the request through would make the
// limits inexact. The cap, reached first, is an unreachable store.
func TestRequestDeadlineBeforeCap(t *testing.T) {
	st := ddblimits.New(ddb.NewClient(ddblocal.ConfigAt(ddblocal.Unanswered(t)), ddb.ClientOptions{Emulator: true, MaxAttempts: 1}), "counters",
		ddblimits.Options{AdmitTimeout: time.Minute})
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	req := limits.AdmitRequest{Now: now, Scopes: []limits.Scope{{Kind: limits.KindKey, ID: "k", RPM: 10, OnError: limits.FailOpen}}}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	d, err := st.Admit(ctx, req)
	if !errors.Is(err, limits.ErrUnavailable) || d.Allowed || d.FailedOpen {
		t.Fatalf("Admit = %+v, %v; want refused with ErrUnavailable", d, err)
	}
	if ctx.Err() != nil {
		t.Error("Admit waited past the request's deadline (it leaves limits.AdmitMargin)")
	}
	if st.FailedOpen() != 0 {
		t.Errorf("FailedOpen() = %d, want 0", st.FailedOpen())
	}
}

// Counter items carry the TTL attribute (window end plus CounterTTL), and a
// full window's item left undeleted past its TTL does not block the next
// window: correctness never waits for TTL deletion.
func TestCounterTTLAttribute(t *testing.T) {
	st, client, table := localStore(t)
	ctx := context.Background()
	w := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	scope := limits.Scope{Kind: limits.KindKey, ID: "k", RPM: 1}
	if d, err := st.Admit(ctx, limits.AdmitRequest{Now: w.Add(5 * time.Second), Scopes: []limits.Scope{scope}}); err != nil || !d.Allowed {
		t.Fatalf("first admit: %+v %v", d, err)
	}
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(table),
		Key:       ddb.PK(ddblimits.PK(limits.Slot{Kind: limits.KindKey, ID: "k"}, w)),
	})
	if err != nil || out.Item == nil {
		t.Fatalf("counter item: %v %v", out, err)
	}
	exp, ok := ddb.Int(out.Item, "expires_at")
	want := w.Add(time.Minute + limits.CounterTTL).Unix()
	if !ok || exp != want {
		t.Fatalf("expires_at = %v, want %d", out.Item["expires_at"], want)
	}
	// Long past the TTL the old item still exists (the emulator, like AWS,
	// deletes lazily): the next window is admitted regardless.
	later := w.Add(time.Hour)
	if d, err := st.Admit(ctx, limits.AdmitRequest{Now: later, Scopes: []limits.Scope{scope}}); err != nil || !d.Allowed {
		t.Fatalf("later window: %+v %v", d, err)
	}
	if d, _ := st.Admit(ctx, limits.AdmitRequest{Now: w.Add(30 * time.Second), Scopes: []limits.Scope{scope}}); d.Allowed {
		t.Fatal("the full window admitted a second request")
	}
}
