// Package models holds the deployments added through the admin API
// (LiteLLM's general_settings.store_model_in_db): the stored record, the
// store port with its memory implementation (ddbmodels is DynamoDB's, and
// modelstest the one conformance suite both pass), the sealing of their
// credentials (seal.go: LiteLLM's salt-key scheme) and the per-instance
// live view that reloads them (live.go).
package models

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
)

// Record is one stored deployment, in LiteLLM's shape: model_name,
// litellm_params and model_info (whose "id" is ID). Params hold every
// secret sealed (Seal): a Record never carries a credential in clear.
type Record struct {
	ID        string
	ModelName string
	Params    map[string]any // litellm_params, secrets sealed
	Info      map[string]any // model_info, without id
	CreatedAt time.Time
	UpdatedAt time.Time
	CreatedBy string
	UpdatedBy string
	// Rev counts the record's writes (1 after Create). Update and Delete
	// are conditioned on it: a write based on a stale read is ErrConflict.
	Rev int64
}

// Store keeps the stored deployments. Every write changes the version, so
// that an instance learns whether anything changed with one cheap read.
type Store interface {
	// Version is the store's generation: it grows with every write.
	Version(ctx context.Context) (int64, error)
	// List returns every record, sorted by ID, and the version read
	// before them (a write between the two shows as a later version).
	List(ctx context.Context) ([]Record, int64, error)
	Get(ctx context.Context, id string) (Record, error)
	// Create stores r with Rev 1; ErrExists if its ID is taken.
	Create(ctx context.Context, r Record) error
	// Update replaces the record r.ID whose Rev is r.Rev, storing Rev+1;
	// ErrNotFound if there is none, ErrConflict if its Rev differs.
	Update(ctx context.Context, r Record) error
	// Delete removes the record id whose Rev is rev (ErrNotFound,
	// ErrConflict as Update).
	Delete(ctx context.Context, id string, rev int64) error
}

// Errors: the store-error vocabulary.
var (
	ErrNotFound = apierr.ErrNotFound
	ErrExists   = apierr.ErrExists
	ErrConflict = apierr.ErrConflict
)

// Memory is a Store in this process (local mode, tests).
type Memory struct {
	mu      sync.Mutex
	version int64
	recs    map[string]Record
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty Memory store.
func NewMemory() *Memory { return &Memory{recs: map[string]Record{}} }

// Version implements Store.
func (m *Memory) Version(context.Context) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.version, nil
}

// List implements Store.
func (m *Memory) List(context.Context) ([]Record, int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Record, 0, len(m.recs))
	for _, id := range slices.Sorted(maps.Keys(m.recs)) {
		out = append(out, m.recs[id].clone())
	}
	return out, m.version, nil
}

// Get implements Store.
func (m *Memory) Get(_ context.Context, id string) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.recs[id]
	if !ok {
		return Record{}, ErrNotFound
	}
	return r.clone(), nil
}

// Create implements Store.
func (m *Memory) Create(_ context.Context, r Record) error {
	if err := r.Validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.recs[r.ID]; ok {
		return ErrExists
	}
	r.Rev = 1
	m.recs[r.ID] = r.clone()
	m.version++
	return nil
}

// Update implements Store.
func (m *Memory) Update(_ context.Context, r Record) error {
	if err := r.Validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.recs[r.ID]
	switch {
	case !ok:
		return ErrNotFound
	case old.Rev != r.Rev:
		return ErrConflict
	}
	r.Rev++
	m.recs[r.ID] = r.clone()
	m.version++
	return nil
}

// Delete implements Store.
func (m *Memory) Delete(_ context.Context, id string, rev int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.recs[id]
	switch {
	case !ok:
		return ErrNotFound
	case old.Rev != rev:
		return ErrConflict
	}
	delete(m.recs, id)
	m.version++
	return nil
}

// Validate checks what every store requires of a record (an id and a
// model name, an id of at most MaxIDLen bytes).
func (r Record) Validate() error {
	switch {
	case r.ID == "":
		return &apierr.InvalidParam{Param: "model_info.id", Reason: "empty"}
	case len(r.ID) > MaxIDLen:
		return &apierr.InvalidParam{Param: "model_info.id", Reason: "longer than 256 bytes"}
	case r.ModelName == "":
		return &apierr.InvalidParam{Param: "model_name", Reason: "empty"}
	}
	return nil
}

// MaxIDLen bounds a deployment id (it is part of DynamoDB keys).
const MaxIDLen = 256

// clone copies r's maps deeply enough that a caller's edit of its copy
// never reaches the store's (JSON values: maps, slices, scalars).
func (r Record) clone() Record {
	r.Params = cloneMap(r.Params)
	r.Info = cloneMap(r.Info)
	return r
}

func cloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return cloneMap(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = cloneValue(e)
		}
		return out
	}
	return v
}
