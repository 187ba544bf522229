package keyauth

import "github.com/sluice-gw/sluice/shared/keys"

// Records are a principal's optional records: what a key authenticates as
// (Authenticate fills all but EndUser) and the request's end user. All
// walks them in one order; keyauth's checks and the gateway's stages
// (model access, admission, strict budgets, spend) read them through it.
type Records struct {
	Key     *keys.Key          // the virtual key, if one was used
	Team    *keys.Team         // the key's team, if it has one
	User    *keys.User         // the key's user, if it has one and the user exists
	Member  *keys.Member       // the user's membership of the key's team, if it exists
	EndUser *keys.EndUser      // the request's end user ("user"), if registered (the gateway's)
	Org     *keys.Organization // the organization of the key's team, if it has one (org.go)
}

// Kind is the kind of one of the records, in All's order.
type Kind uint8

// Kinds.
const (
	KindKey Kind = iota
	KindTeam
	KindUser
	KindMember
	KindEndUser
	KindOrg
)

// Kinds is the number of kinds, for tables indexed by Kind.
const Kinds = int(KindOrg) + 1

var scopes = [Kinds]string{"key", "team", "user", "team_member", "end_user", "organization"}

// Scope names the kind as refusals and metrics do ("key", "team", "user",
// "team_member", "end_user", "organization").
func (k Kind) Scope() string { return scopes[k] }

// A Record is one of the records as the checks read it: its kind and its
// settings (models, aliases, limits, budget).
type Record struct {
	Kind     Kind
	Settings *keys.Settings
	id       string // the record's id; a membership's team
	user     string // a membership's user
}

// ID is the record's id (a membership's is keys.MemberID, built only when
// asked for).
func (r Record) ID() string {
	if r.Kind == KindMember {
		return keys.MemberID(r.id, r.user)
	}
	return r.id
}

// At is the record of kind k, if r has one.
func (r *Records) At(k Kind) (Record, bool) {
	switch k {
	case KindKey:
		if r.Key != nil {
			return Record{Kind: k, Settings: &r.Key.Settings, id: r.Key.Hash}, true
		}
	case KindTeam:
		if r.Team != nil {
			return Record{Kind: k, Settings: &r.Team.Settings, id: r.Team.ID}, true
		}
	case KindUser:
		if r.User != nil {
			return Record{Kind: k, Settings: &r.User.Settings, id: r.User.ID}, true
		}
	case KindMember:
		if r.Member != nil {
			return Record{Kind: k, Settings: &r.Member.Settings, id: r.Member.GroupID, user: r.Member.UserID}, true
		}
	case KindEndUser:
		if r.EndUser != nil {
			return Record{Kind: k, Settings: &r.EndUser.Settings, id: r.EndUser.ID}, true
		}
	case KindOrg:
		if r.Org != nil {
			return Record{Kind: k, Settings: &r.Org.Settings, id: r.Org.ID}, true
		}
	}
	return Record{}, false
}

// All walks r's records in one order: key, team, user, team membership,
// end user, organization. It allocates nothing; a nil r has none.
func (r *Records) All(yield func(Record) bool) {
	if r == nil {
		return
	}
	for k := range Kind(Kinds) {
		if rec, ok := r.At(k); ok && !yield(rec) {
			return
		}
	}
}
