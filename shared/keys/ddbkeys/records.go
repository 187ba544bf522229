package ddbkeys

import (
	"context"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys"
)

// records is the store's keys.Records of one kind: its own Create (each
// kind its item, counts and transactions), and the Update and List the
// kinds share, an update of the attributes attrs encodes (conditioned on
// the item's existence) and a Scan, unless the kind has its own update.
type records[T interface{ Validate() error }] struct {
	st     *Store
	kind   keys.Kind
	id     func(v T) string
	attrs  func(v T) attrs
	decode func(id string, item ddb.Item) T
	create func(ctx context.Context, v T) error
	update func(ctx context.Context, v T) (T, error) // nil: the shared update of attrs
}

// Create implements keys.Records.
func (r records[T]) Create(ctx context.Context, v T) error { return r.create(ctx, v) }

// Update implements keys.Records.
func (r records[T]) Update(ctx context.Context, v T) (T, error) {
	if r.update != nil {
		return r.update(ctx, v)
	}
	return write(ctx, r.st, v, keys.Ref{Kind: r.kind, ID: r.id(v)}, r.attrs(v), r.decode)
}

// List implements keys.Records.
func (r records[T]) List(ctx context.Context) ([]T, error) { return list(ctx, r.st, r.kind, r.decode) }

// storeRecords are the store's Records of each kind, made once.
type storeRecords struct {
	teams    keys.Records[keys.Team]
	users    keys.Records[keys.User]
	endUsers keys.Records[keys.EndUser]
	orgs     keys.Records[keys.Organization]
	budgets  keys.Records[keys.BudgetRecord]
}

func (st *Store) newRecords() storeRecords {
	return storeRecords{
		// A team's update moves it between organizations' team_ids.
		teams: records[keys.Team]{st: st, kind: keys.KindTeam, decode: decodeTeam, create: st.createTeam, update: st.updateTeam},
		users: records[keys.User]{st: st, kind: keys.KindUser, id: func(u keys.User) string { return u.ID }, decode: decodeUser, create: st.createUser,
			attrs: func(u keys.User) attrs {
				a := userAttrs(u)
				if u.Role == "" { // kept
					delete(a.set, attrUserRole)
				}
				return a
			}},
		endUsers: records[keys.EndUser]{st: st, kind: keys.KindEndUser, id: func(e keys.EndUser) string { return e.ID }, attrs: endUserAttrs,
			decode: decodeEndUser, create: st.createEndUser},
		orgs: records[keys.Organization]{st: st, kind: keys.KindOrg, id: func(o keys.Organization) string { return o.ID }, attrs: orgAttrs,
			decode: decodeOrg, create: st.createOrganization},
		budgets: records[keys.BudgetRecord]{st: st, kind: keys.KindBudget, id: func(b keys.BudgetRecord) string { return b.ID }, attrs: budgetAttrs,
			decode: decodeBudget, create: st.createBudget},
	}
}

// Teams implements keys.Admin.
func (st *Store) Teams() keys.Records[keys.Team] { return st.records.teams }

// Users implements keys.Admin.
func (st *Store) Users() keys.Records[keys.User] { return st.records.users }

// EndUsers implements keys.Admin.
func (st *Store) EndUsers() keys.Records[keys.EndUser] { return st.records.endUsers }

// Organizations implements keys.Admin.
func (st *Store) Organizations() keys.Records[keys.Organization] { return st.records.orgs }

// Budgets implements keys.Admin.
func (st *Store) Budgets() keys.Records[keys.BudgetRecord] { return st.records.budgets }
