package ddbkeys

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys"
)

// A forwarding marker's item: pk "moved#<old hash>", kind "moved",
// key_hash (the new hash), created_at (epoch ms) and expires_at (epoch s):
// a regenerated key's forwarding marker (keys.MoveTTL), written in the
// regeneration's transaction; spend for the old hash follows it
// (FollowMoves). Never read as a key. expires_at is the keys table's TTL
// attribute; DynamoDB deletes lazily, so readers compare times themselves.
const (
	attrExpiresAt = "expires_at" // infra/tables.TTLAttribute
	kindMoved     = "moved"
)

func movedPK(hash string) string { return "moved#" + hash }

// moveItem is the forwarding marker a regeneration from oldHash to newHash
// at now leaves (keys.MoveTTL).
func moveItem(oldHash, newHash string, now time.Time) ddb.Item {
	return ddb.Item{
		attrPK:        ddb.S(movedPK(oldHash)),
		attrKind:      ddb.S(kindMoved),
		attrKeyHash:   ddb.S(newHash),
		attrCreated:   ddb.N(now.UnixMilli()),
		attrExpiresAt: ddb.N(now.Add(keys.MoveTTL).Unix()),
	}
}

// decodeMove reads a forwarding marker item.
func decodeMove(item ddb.Item) keys.Move {
	if ddb.String(item, attrKind) != kindMoved {
		return keys.Move{}
	}
	exp, _ := ddb.Int(item, attrExpiresAt)
	return keys.Move{To: ddb.String(item, attrKeyHash), Expires: time.Unix(exp, 0)}
}

// FollowMoves finds where spend for the key refs missing from states goes:
// a key regenerated since left a forwarding marker at its old hash, which
// leads (through at most keys.MaxMoves markers) to the key it is now. It
// reads the spend of those keys into states and returns each missing ref
// that leads to one, mapped to its ref. Without a missing key ref it reads
// nothing.
//
// The caller's write on the target stays conditioned on the target as read
// (SpendUpdate): a key regenerated again meanwhile cancels the write, and
// reading again follows the new marker.
func (st *Store) FollowMoves(ctx context.Context, refs []keys.Ref, states map[keys.Ref]keys.RecordSpend) (map[keys.Ref]keys.Ref, error) {
	at := map[keys.Ref]string{} // missing key ref -> the hash reached so far
	for _, r := range refs {
		if _, ok := states[r]; !ok && r.Kind == keys.KindKey {
			at[r] = r.ID
		}
	}
	var moved map[keys.Ref]keys.Ref
	now := time.Now()
	for hop := 0; hop < keys.MaxMoves && len(at) > 0; hop++ {
		pks := make([]string, 0, len(at))
		seen := map[string]bool{}
		for _, h := range at {
			if !seen[h] {
				seen[h] = true
				pks = append(pks, movedPK(h))
			}
		}
		items, err := st.batchGet(ctx, pks)
		if err != nil {
			return nil, wrap("read forwarding of", fmt.Sprintf("%d keys", len(pks)), err)
		}
		to := map[string]string{}
		for _, item := range items {
			if mv := decodeMove(item); mv.Live(now) {
				from, _ := strings.CutPrefix(ddb.String(item, attrPK), "moved#")
				to[from] = mv.To
			}
		}
		var targets []keys.Ref
		for r, h := range at {
			next, ok := to[h]
			if !ok {
				delete(at, r) // leads nowhere (deleted, or moved too long ago)
				continue
			}
			at[r] = next
			if t := (keys.Ref{Kind: keys.KindKey, ID: next}); !containsRef(states, t) {
				targets = append(targets, t)
			}
		}
		if len(targets) > 0 {
			found, err := st.SpendStates(ctx, targets)
			if err != nil {
				return nil, err
			}
			for t, rs := range found {
				states[t] = rs
			}
		}
		for r, h := range at {
			if t := (keys.Ref{Kind: keys.KindKey, ID: h}); containsRef(states, t) {
				if moved == nil {
					moved = map[keys.Ref]keys.Ref{}
				}
				moved[r] = t
				delete(at, r)
			}
		}
	}
	return moved, nil
}

func containsRef(states map[keys.Ref]keys.RecordSpend, r keys.Ref) bool {
	_, ok := states[r]
	return ok
}
