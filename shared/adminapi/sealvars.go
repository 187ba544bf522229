package adminapi

import (
	"context"
	"fmt"

	"github.com/sluice-gw/sluice/shared/keys"
)

// sealingKeys is the keys store with the credentials of keys' and teams'
// logging callbacks (metadata callback_vars: keys.SecretVar names) sealed
// before they are stored (keys.SealCallbackVars), so the tables and the
// memory store hold them only sealed; the spend consumer opens them when
// it builds the sink (callbacks.Options.Open). Every write of a key's or a
// team's metadata passes here. What is shown is masked anyway
// (keys.MaskCallbackVars).
type sealingKeys struct {
	keys.Admin
	s keys.VarSealer
}

// sealed seals s's callback credentials, then writes the record they
// belong to with write.
func sealed[T any](k sealingKeys, s *keys.Settings, write func() (T, error)) (T, error) {
	m, err := keys.SealCallbackVars(s.Metadata, k.s)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("metadata: %w", err)
	}
	s.Metadata = m
	return write()
}

func (k sealingKeys) CreateKey(ctx context.Context, key keys.Key) error {
	_, err := sealed(k, &key.Settings, func() (keys.Key, error) { return key, k.Admin.CreateKey(ctx, key) })
	return err
}

func (k sealingKeys) UpdateKey(ctx context.Context, key keys.Key) (keys.Key, error) {
	return sealed(k, &key.Settings, func() (keys.Key, error) { return k.Admin.UpdateKey(ctx, key) })
}

func (k sealingKeys) RegenerateKey(ctx context.Context, oldHash string, key keys.Key) (keys.Key, error) {
	return sealed(k, &key.Settings, func() (keys.Key, error) { return k.Admin.RegenerateKey(ctx, oldHash, key) })
}

// Teams seals a team's callback credentials before its writes.
func (k sealingKeys) Teams() keys.Records[keys.Team] { return sealingTeams{k.Admin.Teams(), k} }

// sealingTeams is the team records of sealingKeys.
type sealingTeams struct {
	keys.Records[keys.Team]
	k sealingKeys
}

func (r sealingTeams) Create(ctx context.Context, t keys.Team) error {
	_, err := sealed(r.k, &t.Settings, func() (keys.Team, error) { return t, r.Records.Create(ctx, t) })
	return err
}

func (r sealingTeams) Update(ctx context.Context, t keys.Team) (keys.Team, error) {
	return sealed(r.k, &t.Settings, func() (keys.Team, error) { return r.Records.Update(ctx, t) })
}
