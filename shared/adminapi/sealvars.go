package adminapi

import (
	"context"
	"fmt"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/keys"
)

// metaKeys is the keys store through which every write of a key's or a
// team's metadata passes, for the credentials of their logging callbacks
// (metadata callback_vars: keys.SecretVar names):
//   - a credential sent back masked (keys.Redacted, as every record is
//     shown: keys.MaskCallbackVars) keeps the stored value
//     (keys.KeepMasked) instead of replacing the credential with the mask;
//   - with a sealer, credentials are sealed before they are stored
//     (keys.SealCallbackVars), so the tables and the memory store hold them
//     only sealed; the spend consumer opens them when it builds the sink
//     (callbacks.Options.Open).
type metaKeys struct {
	keys.Admin
	s keys.VarSealer // nil: stored as sent
}

// withMeta prepares s's metadata (stored reads the record's stored
// metadata; nil for a new record), then writes the record it belongs to
// with write.
func withMeta[T any](ctx context.Context, k metaKeys, s *keys.Settings, stored func(context.Context) (keys.Settings, error), write func() (T, error)) (T, error) {
	var zero T
	m := s.Metadata
	if keys.HasMasked(m) {
		var old keys.Settings
		if stored != nil {
			var err error
			if old, err = stored(ctx); err != nil {
				return zero, err
			}
		}
		var err error
		if m, err = keys.KeepMasked(m, old.Metadata); err != nil {
			return zero, &apierr.Error{Kind: apierr.InvalidRequest, Message: "metadata: " + err.Error(), Param: "metadata"}
		}
	}
	if k.s != nil {
		var err error
		if m, err = keys.SealCallbackVars(m, k.s); err != nil {
			return zero, fmt.Errorf("metadata: %w", err)
		}
	}
	s.Metadata = m
	return write()
}

// keySettings returns what reads the stored settings of the key at hash.
func (k metaKeys) keySettings(hash string) func(context.Context) (keys.Settings, error) {
	return func(ctx context.Context) (keys.Settings, error) {
		old, err := k.Admin.GetKey(ctx, hash)
		return old.Settings, err
	}
}

func (k metaKeys) CreateKey(ctx context.Context, key keys.Key) error {
	_, err := withMeta(ctx, k, &key.Settings, nil, func() (keys.Key, error) { return key, k.Admin.CreateKey(ctx, key) })
	return err
}

func (k metaKeys) UpdateKey(ctx context.Context, key keys.Key) (keys.Key, error) {
	return withMeta(ctx, k, &key.Settings, k.keySettings(key.Hash), func() (keys.Key, error) { return k.Admin.UpdateKey(ctx, key) })
}

func (k metaKeys) RegenerateKey(ctx context.Context, oldHash string, key keys.Key) (keys.Key, error) {
	return withMeta(ctx, k, &key.Settings, k.keySettings(oldHash), func() (keys.Key, error) { return k.Admin.RegenerateKey(ctx, oldHash, key) })
}

// Teams prepares a team's metadata before its writes.
func (k metaKeys) Teams() keys.Records[keys.Team] { return metaTeams{k.Admin.Teams(), k} }

// metaTeams is the team records of metaKeys.
type metaTeams struct {
	keys.Records[keys.Team]
	k metaKeys
}

func (r metaTeams) Create(ctx context.Context, t keys.Team) error {
	_, err := withMeta(ctx, r.k, &t.Settings, nil, func() (keys.Team, error) { return t, r.Records.Create(ctx, t) })
	return err
}

func (r metaTeams) Update(ctx context.Context, t keys.Team) (keys.Team, error) {
	stored := func(ctx context.Context) (keys.Settings, error) {
		old, err := r.k.Admin.GetTeam(ctx, t.ID)
		return old.Settings, err
	}
	return withMeta(ctx, r.k, &t.Settings, stored, func() (keys.Team, error) { return r.Records.Update(ctx, t) })
}
