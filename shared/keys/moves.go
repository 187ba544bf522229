package keys

import "time"

// Regenerating a key moves its record to the new secret's hash, but spend
// events already built carry the old hash: those in flight, those the queue
// redelivers after a failed batch, those replayed from the dead-letter
// queue. So a regeneration leaves a forwarding marker at the old hash
// (never a key: authentication reads keys only), and ApplySpend follows it
// to the key the old hash became. Without it that spend reached no key and
// the key's budget was bypassed by it.

// MoveTTL is how long a regenerated key's old hash forwards spend. It
// covers every way an event can still arrive (template.yaml): redeliveries
// (visibility timeout 180 s, maxReceiveCount 5), a consumer outage the
// spend queue waits out (it keeps a message 4 days) and a replay from the
// dead-letter queue (14 days). Spend arriving later for the old hash adds
// to no key, as for a deleted one.
const MoveTTL = 18 * 24 * time.Hour

// MaxMoves bounds the forwarding markers followed from one hash: a key
// regenerated again before its older events arrived forwards through a
// chain.
const MaxMoves = 8

// Move is a forwarding marker: the key once at a hash is at To until
// Expires.
type Move struct {
	To      string
	Expires time.Time
}

// Live reports whether the marker still forwards at now.
func (mv Move) Live(now time.Time) bool { return mv.To != "" && now.Before(mv.Expires) }

// Redirect returns deltas with every ref moved names replaced by its
// target, and the refs of the result in their first order, each once (two
// hashes of one key become one record). It returns deltas itself when
// moved is empty.
func Redirect(deltas []SpendDelta, moved map[Ref]Ref) ([]SpendDelta, []Ref) {
	out := deltas
	if len(moved) > 0 {
		out = make([]SpendDelta, len(deltas))
		for i, d := range deltas {
			if to, ok := moved[d.Ref]; ok {
				d.Ref = to
			}
			out[i] = d
		}
	}
	seen := make(map[Ref]bool, len(out))
	refs := make([]Ref, 0, len(out))
	for _, d := range out {
		if !seen[d.Ref] {
			seen[d.Ref] = true
			refs = append(refs, d.Ref)
		}
	}
	return out, refs
}
