package keys

import "context"

// Cached's Records: the store's, each write then forgetting what this
// instance read of the record, and of the records the kind's writes change
// beside it (created, updated).

// cachedRecords writes through the store's Records of one kind.
type cachedRecord[T any, P record[T]] struct {
	c     *Cached
	store Records[T]
	// created and updated forget, after a Create or an Update, what else
	// it may change (nil: nothing).
	created, updated func()
}

// Create implements Records.
func (r cachedRecord[T, P]) Create(ctx context.Context, v T) error {
	defer run(r.created)
	defer r.c.drop(P(&v).ref())
	return r.store.Create(ctx, v)
}

// Update implements Records.
func (r cachedRecord[T, P]) Update(ctx context.Context, v T) (T, error) {
	defer run(r.updated)
	return after(r.c, func() (T, error) { return r.store.Update(ctx, v) }, P(&v).ref())
}

// List implements Records.
func (r cachedRecord[T, P]) List(ctx context.Context) ([]T, error) { return r.store.List(ctx) }

// run runs f, if any.
func run(f func()) {
	if f != nil {
		f()
	}
}

// cachedRecords are Cached's Records of each kind, made once.
type cachedRecords struct {
	teams    Records[Team]
	users    Records[User]
	endUsers Records[EndUser]
	orgs     Records[Organization]
	budgets  Records[BudgetRecord]
}

func (c *Cached) newRecords() cachedRecords {
	return cachedRecords{
		// A team's writes change the Teams of the organizations it
		// leaves and joins.
		teams: cachedRecord[Team, *Team]{c: c, store: c.store.Teams(), created: c.orgs.clear, updated: c.orgs.clear},
		users: cachedRecord[User, *User]{c: c, store: c.store.Users()},
		// A new end user ends "no end user exists" (HasEndUsers).
		endUsers: cachedRecord[EndUser, *EndUser]{c: c, store: c.store.EndUsers(), created: c.dropPresent},
		orgs:     cachedRecord[Organization, *Organization]{c: c, store: c.store.Organizations()},
		budgets:  cachedRecord[BudgetRecord, *BudgetRecord]{c: c, store: c.store.Budgets()},
	}
}

// Teams implements Admin.
func (c *Cached) Teams() Records[Team] { return c.records.teams }

// Users implements Admin.
func (c *Cached) Users() Records[User] { return c.records.users }

// EndUsers implements Admin.
func (c *Cached) EndUsers() Records[EndUser] { return c.records.endUsers }

// Organizations implements Admin.
func (c *Cached) Organizations() Records[Organization] { return c.records.orgs }

// Budgets implements Admin.
func (c *Cached) Budgets() Records[BudgetRecord] { return c.records.budgets }
