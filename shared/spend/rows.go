package spend

// Rows adds events up into their daily rows and end-user rows, each row in
// the order of its first event: the memory store keeps one for good, the
// DynamoDB store builds one per transaction.
type Rows struct {
	Daily    []*DailyRow
	EndUsers []*EndUserRow
	daily    map[dailyID]*DailyRow
	endUsers map[endUserID]*EndUserRow
}

type dailyID struct{ day, key, group, provider string }
type endUserID struct{ day, endUser string }

func rowIDs(e *Event) (dailyID, endUserID) {
	day := e.Day()
	return dailyID{day, e.KeyHash, e.ModelGroup, e.Provider}, endUserID{day, e.EndUser}
}

// New reports whether e would open a new daily row, and a new end-user
// row (an event without an end user has none).
func (r *Rows) New(e *Event) (daily, endUser bool) {
	d, eu := rowIDs(e)
	_, hasD := r.daily[d]
	_, hasEU := r.endUsers[eu]
	return !hasD, e.EndUser != "" && !hasEU
}

// Add adds e to its rows. A daily row takes the team, user and
// organization of its latest event.
func (r *Rows) Add(e *Event) {
	if r.daily == nil {
		r.daily, r.endUsers = map[dailyID]*DailyRow{}, map[endUserID]*EndUserRow{}
	}
	d, eu := rowIDs(e)
	row, ok := r.daily[d]
	if !ok {
		row = &DailyRow{Day: d.day, KeyHash: e.KeyHash, ModelGroup: e.ModelGroup, Provider: e.Provider}
		r.daily[d] = row
		r.Daily = append(r.Daily, row)
	}
	row.TeamID, row.UserID, row.OrgID = e.TeamID, e.UserID, e.OrganizationID
	row.Counters.Add(e)
	if e.EndUser == "" {
		return
	}
	er, ok := r.endUsers[eu]
	if !ok {
		er = &EndUserRow{Day: eu.day, EndUser: e.EndUser}
		r.endUsers[eu] = er
		r.EndUsers = append(r.EndUsers, er)
	}
	er.Counters.Add(e)
}
