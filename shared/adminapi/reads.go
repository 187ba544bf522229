package adminapi

import (
	"context"
	"errors"

	"github.com/sluice-gw/sluice/shared/keys"
)

// Reads of records that may be absent: a record deleted meanwhile, or
// named by a list that may hold stale ids, is left out, not an error.

// found returns v, whether it exists, and err unless it is ErrNotFound.
func found[T any](v T, err error) (T, bool, error) {
	if errors.Is(err, keys.ErrNotFound) {
		return v, false, nil
	}
	return v, err == nil, err
}

// existing reads each of ids with get and returns the records that exist,
// in the order of ids.
func existing[T any](ctx context.Context, ids []string, get func(ctx context.Context, id string) (T, error)) ([]T, error) {
	var out []T
	for _, id := range ids {
		v, ok, err := found(get(ctx, id))
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, v)
		}
	}
	return out, nil
}
