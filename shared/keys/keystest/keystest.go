// Package keystest is the conformance suite of the keys ports, one per
// consumer: RunReader (what the gateway reads), RunAdmin (what the admin API
// writes) and RunSpender (what the spend consumer records). Every store
// passes them unchanged, on memory and on DynamoDB Local.
package keystest

import (
	"context"
	"errors"
	"math"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/conformance"
	"github.com/sluice-gw/sluice/shared/keys"
)

// Store is a store under test: the suites seed records through Admin and
// check spend through Spender whichever port they test.
type Store interface {
	keys.Admin
	keys.Spender
}

// NewStore returns a store on fresh shared state the first time it is
// called in a test, and another instance on the same state (for DynamoDB:
// a new SDK client) on later calls in the same test.
type NewStore func(t *testing.T) Store

// tests are the suites' tests, each under the port it checks.
var tests = []struct {
	port, name string
	fn         func(t *testing.T, newStore func(t *testing.T) Store)
}{
	{"Reader", "KeyLifecycle", testKeyLifecycle},
	{"Reader", "TeamLifecycle", testTeamLifecycle},
	{"Reader", "NotFound", testNotFound},
	{"Reader", "EndUserPresence", testEndUserPresence},
	{"Reader", "LinkedBudget", testLinkedBudget},
	{"Admin", "Invalid", testInvalid},
	{"Admin", "KeyAdminFields", testKeyAdminFields},
	{"Admin", "KeyAlias", testKeyAlias},
	{"Admin", "ListKeys", testListKeys},
	{"Admin", "ArchiveKey", testArchiveKey},
	{"Admin", "RegenerateKey", testRegenerateKey},
	{"Admin", "Users", testUsers},
	{"Admin", "Members", testMembers},
	{"Admin", "EndUsers", testEndUsers},
	{"Admin", "AdminNotFound", testAdminNotFound},
	{"Admin", "AdminInvalid", testAdminInvalid},
	{"Admin", "HostileIDs", testHostileIDs},
	{"Admin", "Oversized", testOversized},
	{"Admin", "Times", testTimes},
	{"Admin", "ModelAliases", testModelAliases},
	{"Admin", "SetSpend", testSetSpend},
	{"Admin", "MemberEmail", testMemberEmail},
	{"Admin", "Orgs", testOrgs},
	{"Admin", "OrgTeams", testOrgTeams},
	{"Admin", "OrgInvalid", testOrgInvalid},
	{"Admin", "ConcurrentMembers", testConcurrentMembers},
	{"Admin", "OrgDeleteRace", testOrgDeleteRace},
	{"Admin", "Budgets", testBudgets},
	{"Admin", "BudgetLinks", testBudgetLinks},
	{"Spender", "ConcurrentSpend", testConcurrentSpend},
	{"Spender", "SpendPeriods", testSpendPeriods},
	{"Spender", "AnchoredPeriods", testAnchoredPeriods},
	{"Spender", "SoftBudget", testSoftBudget},
	{"Spender", "RegeneratedKeySpend", testRegeneratedKeySpend},
	{"Spender", "LinkedSpend", testLinkedSpend},
	{"Spender", "ModelMaxBudget", testModelMaxBudget},
	{"Spender", "ConcurrentModelSpend", testConcurrentModelSpend},
}

func run(t *testing.T, newStore NewStore, port string) {
	for _, tt := range tests {
		if tt.port == port {
			t.Run(tt.name, func(t *testing.T) { tt.fn(t, newStore) })
		}
	}
}

// Run runs the three suites.
func Run(t *testing.T, newStore NewStore) {
	t.Run("Reader", func(t *testing.T) { RunReader(t, newStore) })
	t.Run("Admin", func(t *testing.T) { RunAdmin(t, newStore) })
	t.Run("Spender", func(t *testing.T) { RunSpender(t, newStore) })
}

// RunReader checks keys.Reader: records read back as written, from
// another instance too; missing records are ErrNotFound; HasEndUsers.
func RunReader(t *testing.T, newStore NewStore) { run(t, newStore, "Reader") }

// RunAdmin checks keys.Admin: key admin fields, alias uniqueness, listing,
// deleted keys, regeneration, users, team members and end users, invalid
// writes.
func RunAdmin(t *testing.T, newStore NewStore) { run(t, newStore, "Admin") }

// RunSpender checks keys.Spender: exact concurrent spend, budget periods,
// soft budget crossings, spend following a regenerated key.
func RunSpender(t *testing.T, newStore NewStore) { run(t, newStore, "Spender") }

func ctx(t *testing.T) context.Context { return conformance.Context(t) }

func id(prefix string) string { return conformance.ID(prefix) }

func usd(v float64) *float64 { return &v }

func i64(v int64) *int64 { return &v }

func testKeyLifecycle(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	created := time.Date(2030, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	k := keys.Key{
		Hash: keys.HashSecret("sk-" + id("secret")), Alias: "ci", TeamID: "t1", UserID: "u1",

		ExpiresAt: created.Add(24 * time.Hour), CreatedAt: created, Settings: keys.Settings{Models: []string{"gpt-4o", "claude"}, RPMLimit: 100, TPMLimit: 50_000, MaxParallel: i64(4),
			ModelRPM: map[string]int64{"gpt-4o": 10, "claude": 0}, ModelTPM: map[string]int64{"gpt-4o": 1000},
			Budget: keys.Budget{MaxBudget: usd(50), SoftBudget: usd(40), Duration: "30d", Anchor: created}},
	}
	if err := s.CreateKey(c, k); err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	if err := s.CreateKey(c, k); !errors.Is(err, keys.ErrExists) {
		t.Fatalf("second CreateKey: %v, want ErrExists", err)
	}
	got, err := s.GetKey(c, k.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, k) {
		t.Fatalf("GetKey =\n%+v\nwant\n%+v", got, k)
	}

	spendAt := time.Date(2030, 1, 9, 0, 0, 0, 0, time.UTC)
	if _, err := s.ApplySpend(c, []keys.SpendDelta{{Ref: keys.Ref{Kind: keys.KindKey, ID: k.Hash}, Nanos: 1_500_000_000, At: spendAt}}); err != nil {
		t.Fatalf("ApplySpend: %v", err)
	}
	// Update replaces settings but keeps spend and creation time.
	u := keys.Key{Hash: k.Hash, Alias: "renamed", CreatedAt: time.Unix(1, 0), Settings: keys.Settings{Models: []string{"gpt-4o-mini"}, RPMLimit: 5, Budget: keys.Budget{Spend: 999, Duration: "30d"}}}
	want := u
	want.Spend, want.PeriodSpend, want.PeriodStart, want.CreatedAt = 1.5, 1.5, time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), created
	updated, err := s.UpdateKey(c, u)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(updated, want) {
		t.Fatalf("UpdateKey =\n%+v\nwant\n%+v", updated, want)
	}
	if got, _ := newStore(t).GetKey(c, k.Hash); !reflect.DeepEqual(got, want) {
		t.Fatalf("GetKey from another instance =\n%+v\nwant\n%+v", got, want)
	}

	if err := s.Block(c, keys.Ref{Kind: keys.KindKey, ID: k.Hash}, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetKey(c, k.Hash); !got.Blocked {
		t.Fatal("Block: key not blocked")
	}
	if err := s.Block(c, keys.Ref{Kind: keys.KindKey, ID: k.Hash}, false); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetKey(c, k.Hash); got.Blocked {
		t.Fatal("Block(false): key still blocked")
	}
	mustDelete(t, c, s, keys.Ref{Kind: keys.KindKey, ID: k.Hash}, func() error { return errOf(s.GetKey(c, k.Hash)) })
	if err := s.Delete(c, keys.Ref{Kind: keys.KindKey, ID: k.Hash}); !errors.Is(err, keys.ErrNotFound) {
		t.Fatalf("second Delete of the key: %v, want ErrNotFound", err)
	}

	t.Run("defaults", func(t *testing.T) {
		k := keys.Key{Hash: keys.HashSecret(id("sk"))}
		if err := s.CreateKey(c, k); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetKey(c, k.Hash)
		if err != nil {
			t.Fatal(err)
		}
		if got.CreatedAt.IsZero() {
			t.Error("CreatedAt not set")
		}
		got.CreatedAt = time.Time{}
		if !reflect.DeepEqual(got, k) {
			t.Fatalf("GetKey =\n%+v\nwant\n%+v", got, k)
		}
	})
}

func testTeamLifecycle(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	created := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tm := keys.Team{ID: id("team"), Alias: "research", CreatedAt: created, Settings: keys.Settings{Models: []string{"gpt-4o"}, RPMLimit: 1000, TPMLimit: 9, Budget: keys.Budget{MaxBudget: usd(0)}}}
	createdOnce(t, c, "Team", s, s, keys.Admin.Teams, tm, func() (keys.Team, error) { return s.GetTeam(c, tm.ID) })
	if _, err := s.ApplySpend(c, []keys.SpendDelta{{Ref: keys.Ref{Kind: keys.KindTeam, ID: tm.ID}, Nanos: 250_000_000, At: created}}); err != nil {
		t.Fatalf("ApplySpend: %v", err)
	}
	u := keys.Team{ID: tm.ID, Alias: "r2"}
	want := u
	want.Spend, want.CreatedAt = 0.25, created
	if got, err := s.Teams().Update(c, u); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("UpdateTeam = %+v, %v\nwant %+v", got, err, want)
	}
	if err := s.Block(c, keys.Ref{Kind: keys.KindTeam, ID: tm.ID}, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetTeam(c, tm.ID); !got.Blocked {
		t.Fatal("team not blocked")
	}
	mustDelete(t, c, s, keys.Ref{Kind: keys.KindTeam, ID: tm.ID}, func() error { return errOf(s.GetTeam(c, tm.ID)) })
}

func testNotFound(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	h := keys.HashSecret(id("missing"))
	team := id("missing")
	for _, tt := range []struct {
		name string
		call func() error
	}{
		{"GetKey", func() error { _, err := s.GetKey(c, h); return err }},
		{"GetKey raw secret", func() error { _, err := s.GetKey(c, "sk-not-a-hash"); return err }},
		{"UpdateKey", func() error { _, err := s.UpdateKey(c, keys.Key{Hash: h}); return err }},
		{"DeleteKey", func() error { return s.Delete(c, keys.Ref{Kind: keys.KindKey, ID: h}) }},
		{"BlockKey", func() error { return s.Block(c, keys.Ref{Kind: keys.KindKey, ID: h}, true) }},
		{"GetTeam", func() error { _, err := s.GetTeam(c, team); return err }},
		{"GetTeam empty id", func() error { _, err := s.GetTeam(c, ""); return err }},
		{"UpdateTeam", func() error { _, err := s.Teams().Update(c, keys.Team{ID: team}); return err }},
		{"DeleteTeam", func() error { return s.Delete(c, keys.Ref{Kind: keys.KindTeam, ID: team}) }},
		{"BlockTeam", func() error { return s.Block(c, keys.Ref{Kind: keys.KindTeam, ID: team}, true) }},
	} {
		t.Run(tt.name, func(t *testing.T) { absent(t, tt.name, tt.call()) })
	}
	// Spend for records that do not exist is skipped, and creates nothing.
	if _, err := s.ApplySpend(c, []keys.SpendDelta{{Ref: keys.Ref{Kind: keys.KindKey, ID: h}, Nanos: 1}, {Ref: keys.Ref{Kind: keys.KindTeam, ID: team}, Nanos: 1}}); err != nil {
		t.Fatalf("ApplySpend for missing records: %v", err)
	}
	// Nothing was created by the failed writes.
	absent(t, "failed writes created the key", errOf(s.GetKey(c, h)))
	absent(t, "failed writes created the team", errOf(s.GetTeam(c, team)))
}

// errOf is the error of a two-valued call.
func errOf[T any](_ T, err error) error { return err }

// createdOnce creates v through s (of: its kind's Records), then checks
// that a second Create of it through again is ErrExists and that read
// gives v back as written (kind names the record in failures).
func createdOnce[T any](t *testing.T, c context.Context, kind string, s, again Store, of func(keys.Admin) keys.Records[T], v T, read func() (T, error)) {
	t.Helper()
	if err := of(s).Create(c, v); err != nil {
		t.Fatal(err)
	}
	if err := of(again).Create(c, v); !errors.Is(err, keys.ErrExists) {
		t.Fatalf("second Create of a %s: %v, want ErrExists", kind, err)
	}
	if got, err := read(); err != nil || !reflect.DeepEqual(got, v) {
		t.Fatalf("Get%s = %+v, %v\nwant %+v", kind, got, err, v)
	}
}

// absent fails t unless err, of reading a record (what), is ErrNotFound.
func absent(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, keys.ErrNotFound) {
		t.Fatalf("%s: %v, want ErrNotFound", what, err)
	}
}

// mustDelete deletes the record r and checks that get, reading it, then
// finds nothing.
func mustDelete(t *testing.T, c context.Context, s Store, r keys.Ref, get func() error) {
	t.Helper()
	if err := s.Delete(c, r); err != nil {
		t.Fatal(err)
	}
	absent(t, "read after deleting "+r.String(), get())
}

func testInvalid(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	h := keys.HashSecret(id("sk"))
	if err := s.CreateKey(c, keys.Key{Hash: h}); err != nil {
		t.Fatal(err)
	}
	if err := s.Teams().Create(c, keys.Team{ID: "t"}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		call func() error
	}{
		{"raw secret as hash", func() error { return s.CreateKey(c, keys.Key{Hash: "sk-1234"}) }},
		{"upper-case hash", func() error {
			return s.CreateKey(c, keys.Key{Hash: "ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789"})
		}},
		{"negative rpm", func() error {
			return s.CreateKey(c, keys.Key{Hash: keys.HashSecret("x"), Settings: keys.Settings{RPMLimit: -1}})
		}},
		{"negative budget", func() error {
			return s.CreateKey(c, keys.Key{Hash: keys.HashSecret("x"), Settings: keys.Settings{Budget: keys.Budget{MaxBudget: usd(-1)}}})
		}},
		{"NaN budget", func() error {
			_, err := s.UpdateKey(c, keys.Key{Hash: h, Settings: keys.Settings{Budget: keys.Budget{MaxBudget: usd(math.NaN())}}})
			return err
		}},
		{"empty model", func() error {
			_, err := s.UpdateKey(c, keys.Key{Hash: h, Settings: keys.Settings{Models: []string{""}}})
			return err
		}},
		{"negative soft budget", func() error {
			_, err := s.UpdateKey(c, keys.Key{Hash: h, Settings: keys.Settings{Budget: keys.Budget{SoftBudget: usd(-2)}}})
			return err
		}},
		{"bad budget duration", func() error {
			_, err := s.Teams().Update(c, keys.Team{ID: "t", Settings: keys.Settings{Budget: keys.Budget{Duration: "monthly"}}})
			return err
		}},
		{"negative spend", func() error {
			_, err := s.ApplySpend(c, []keys.SpendDelta{{Ref: keys.Ref{Kind: keys.KindKey, ID: h}, Nanos: -1}})
			return err
		}},
		{"negative model budget", func() error {
			_, err := s.UpdateKey(c, keys.Key{Hash: h, Settings: keys.Settings{ModelMaxBudget: map[string]keys.ModelBudget{"m": {Limit: -1}}}})
			return err
		}},
		{"bad model budget period", func() error {
			_, err := s.UpdateKey(c, keys.Key{Hash: h, Settings: keys.Settings{ModelMaxBudget: map[string]keys.ModelBudget{"m": {Limit: 1, Period: "daily"}}}})
			return err
		}},
		{"empty model budget name", func() error {
			_, err := s.UpdateKey(c, keys.Key{Hash: h, Settings: keys.Settings{ModelMaxBudget: map[string]keys.ModelBudget{"": {Limit: 1}}}})
			return err
		}},
		{"empty team id", func() error { return s.Teams().Create(c, keys.Team{}) }},
		{"negative team tpm", func() error {
			_, err := s.Teams().Update(c, keys.Team{ID: "t", Settings: keys.Settings{TPMLimit: -5}})
			return err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, keys.ErrInvalid) {
				t.Fatalf("%v, want ErrInvalid", err)
			}
		})
	}
	if got, _ := s.GetKey(c, h); !reflect.DeepEqual(got.Models, []string(nil)) || got.MaxBudget != nil || got.Spend != 0 {
		t.Fatalf("invalid writes changed the key: %+v", got)
	}
}

func testConcurrentSpend(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	h := keys.HashSecret(id("sk"))
	team := id("team")
	if err := s.CreateKey(c, keys.Key{Hash: h, TeamID: team}); err != nil {
		t.Fatal(err)
	}
	if err := s.Teams().Create(c, keys.Team{ID: team}); err != nil {
		t.Fatal(err)
	}
	// 4 instances x 5 writers x 5 additions: 20 writers contend for the
	// same two records (more than a spend consumer's bounded concurrency).
	const instances, writers, each = 4, 5, 5
	var wg sync.WaitGroup
	for range instances {
		inst := newStore(t)
		for range writers {
			wg.Go(func() {
				for range each {
					if _, err := inst.ApplySpend(c, []keys.SpendDelta{
						{Ref: keys.Ref{Kind: keys.KindKey, ID: h}, Nanos: 500_000_001, At: time.Now()},
						{Ref: keys.Ref{Kind: keys.KindTeam, ID: team}, Nanos: 250_000_003, At: time.Now()},
					}); err != nil {
						t.Errorf("ApplySpend: %v", err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	// Exact to the nano-dollar: 100 x 0.500000001 and 100 x 0.250000003.
	if k, err := s.GetKey(c, h); err != nil || keys.Nanos(k.Spend) != 50_000_000_100 {
		t.Errorf("key spend = %v, %v; want 50.0000001", k.Spend, err)
	}
	if tm, err := s.GetTeam(c, team); err != nil || keys.Nanos(tm.Spend) != 25_000_000_300 {
		t.Errorf("team spend = %v, %v; want 25.0000003", tm.Spend, err)
	}
}

// testTimes: every record kind is stored with its times in UTC at
// millisecond precision (as DynamoDB keeps them), whatever it was given.
func testTimes(t *testing.T, newStore func(t *testing.T) Store) {
	s, c := newStore(t), ctx(t)
	given := time.Date(2030, 5, 6, 7, 8, 9, 123_456_789, time.FixedZone("X", 3600))
	want := given.UTC().Truncate(time.Millisecond)
	team, user, end := id("team"), id("user"), id("customer")
	h := keys.HashSecret(id("sk"))
	for _, err := range []error{
		s.CreateKey(c, keys.Key{Hash: h, CreatedAt: given, UpdatedAt: given, ExpiresAt: given}),
		s.Teams().Create(c, keys.Team{ID: team, CreatedAt: given, UpdatedAt: given}),
		s.Users().Create(c, keys.User{ID: user, CreatedAt: given, UpdatedAt: given}),
		s.AddMember(c, keys.Member{Group: keys.KindTeam, GroupID: team, UserID: user, Role: keys.MemberUser, CreatedAt: given}),
		s.EndUsers().Create(c, keys.EndUser{ID: end, CreatedAt: given, UpdatedAt: given}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	k, err1 := s.GetKey(c, h)
	tm, err2 := s.GetTeam(c, team)
	u, err3 := s.GetUser(c, user)
	m, err4 := s.GetMember(c, keys.KindTeam, team, user)
	e, err5 := s.GetEndUser(c, end)
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]time.Time{
		"key created": k.CreatedAt, "key updated": k.UpdatedAt, "key expires": k.ExpiresAt,
		"team created": tm.CreatedAt, "team updated": tm.UpdatedAt, "user created": u.CreatedAt, "user updated": u.UpdatedAt,
		"member created": m.CreatedAt, "end user created": e.CreatedAt, "end user updated": e.UpdatedAt,
	} {
		if got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}
