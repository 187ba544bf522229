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

// All walks r's records in one order: key, team, user, team membership,
// end user, organization. It allocates nothing; a nil r has none.
func (r *Records) All(yield func(Record) bool) {
	if r == nil {
		return
	}
	if k := r.Key; k != nil && !yield(Record{Kind: KindKey, Settings: &k.Settings, id: k.Hash}) {
		return
	}
	if t := r.Team; t != nil && !yield(Record{Kind: KindTeam, Settings: &t.Settings, id: t.ID}) {
		return
	}
	if u := r.User; u != nil && !yield(Record{Kind: KindUser, Settings: &u.Settings, id: u.ID}) {
		return
	}
	if m := r.Member; m != nil && !yield(Record{Kind: KindMember, Settings: &m.Settings, id: m.GroupID, user: m.UserID}) {
		return
	}
	if e := r.EndUser; e != nil && !yield(Record{Kind: KindEndUser, Settings: &e.Settings, id: e.ID}) {
		return
	}
	if o := r.Org; o != nil {
		yield(Record{Kind: KindOrg, Settings: &o.Settings, id: o.ID})
	}
}
