package keys

import "time"

// Spend seen at once on the serving instance (LiteLLM applies a call's cost
// to its own cache as the call ends). The instance that served a call adds
// its cost to the records it cached (Cached.SpentLocally); every read of
// those records through this instance's cache shows it on top of the spend
// as stored, until the store's spend has caught up with it: the spend
// pipeline records the same cost later, on every instance, exactly once.
//
// No double count: a pending entry remembers the record's lifetime spend as
// stored when its first cost was added (base) and the costs added since
// (added); a read shows max(stored, base+added), so once the store has
// received at least those costs (its own spend, or other instances' in the
// meantime) the stored value alone is shown and the entry is forgotten. A
// read never shows more than the stored spend plus this instance's costs
// not yet recorded; it may show less (another instance's spend arrived
// first), as every instance did before. The period spend is treated the
// same way, in the period the costs were spent in.

// localSpendTTL bounds how long an instance shows a cost the store has not
// received (an event that never arrives: dead-lettered, or recorded on a
// record that was deleted and recreated).
const localSpendTTL = time.Minute

// pending is the cost an instance added to one record and the store has
// not shown yet.
type pending struct {
	base, added        int64     // nano-USD: lifetime spend as stored at the first cost; the costs since
	period             time.Time // the budget period of periodBase and periodAdded (zero: none)
	periodBase, pAdded int64     // nano-USD: the period's spend as stored at its first cost; the costs since
	last               int64     // UnixNano of the latest cost
}

// caughtUp reports whether the store's budget b already shows every cost
// of p, or p is no longer to be shown: too old, or the stored spend went
// below its base (reset by /user/update's spend).
func (p *pending) caughtUp(b *Budget, now int64) bool {
	s := Nanos(b.Spend)
	return s >= p.base+p.added || s < p.base || now-p.last > int64(localSpendTTL)
}

// show adds to b, as read from the store, the costs of p it does not show
// yet (the budget period current at now).
func (p *pending) show(b *Budget, now time.Time) {
	if p.caughtUp(b, now.UnixNano()) {
		return
	}
	b.Spend = USD(p.base + p.added)
	if b.Duration == "" || p.period.IsZero() || !b.PeriodAt(now).Equal(p.period) {
		return
	}
	stored := int64(0)
	if b.PeriodStart.Equal(p.period) {
		stored = Nanos(b.PeriodSpend)
	}
	if v := p.periodBase + p.pAdded; v > stored {
		b.PeriodStart, b.PeriodSpend = p.period, USD(v)
	}
}

// add records a cost of nanos spent at at on the record whose stored
// budget is b (as this instance last read it); it returns the new pending.
func (p pending) add(b *Budget, nanos int64, at time.Time, now int64) pending {
	if p.last == 0 || p.caughtUp(b, now) {
		p = pending{base: Nanos(b.Spend)}
	}
	p.added += nanos
	p.last = now
	if ps := b.PeriodAt(at); !ps.IsZero() {
		if !ps.Equal(p.period) {
			p.period, p.pAdded, p.periodBase = ps, 0, 0
			if b.PeriodStart.Equal(ps) {
				p.periodBase = Nanos(b.PeriodSpend)
			}
		}
		p.pAdded += nanos
	}
	return p
}

// spentLocally adds a cost to the pending entry of id, if this instance
// has read the record (a record it never read has nothing to show it on).
func (rc *readCache[T, P]) spentLocally(id string, nanos int64, at time.Time, now int64) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	e, ok := rc.m[id]
	if !ok || e.err != nil {
		return
	}
	if rc.pend == nil {
		rc.pend = map[string]pending{}
	}
	rc.pend[id] = rc.pend[id].add(&e.b, nanos, at, now)
}

// show adds to b, a record as read, the costs p of it this instance has
// not seen stored yet.
func (c *Cached) show(p pending, b *Budget) {
	if p.last != 0 {
		p.show(b, c.now())
	}
}

// SpentLocally shows a call's cost (nano-USD, spent at at) at once on the
// records this instance served it for: its key (hash), team, user and
// organization ("" for none), read through this cache. The spend pipeline
// still records it; reads show it until the store does.
func (c *Cached) SpentLocally(hash, team, user, org string, nanos int64, at time.Time) {
	if nanos <= 0 {
		return
	}
	now := c.now().UnixNano()
	if hash != "" {
		c.keys.spentLocally(hash, nanos, at, now)
	}
	if team != "" {
		c.teams.spentLocally(team, nanos, at, now)
	}
	if user != "" {
		c.users.spentLocally(user, nanos, at, now)
	}
	if org != "" {
		c.orgs.spentLocally(org, nanos, at, now)
	}
}
