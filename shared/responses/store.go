package responses

import (
	"context"
	"sync"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
)

// DefaultTTL is how long a stored response is kept: 30 days, as OpenAI
// keeps the responses it stores.
const DefaultTTL = 30 * 24 * time.Hour

// Record is one stored response: who made it, where, and what a
// continuation (previous_response_id) or a read needs.
type Record struct {
	ID         string // the id the client sees (EncodeID)
	KeyHash    string // the creating key's hash; "": the master key or an open gateway
	TeamID     string // the creating key's team, whose keys may read it too
	Deployment string // the deployment that served it
	Previous   string // the previous_response_id it continued ("": none)
	Input      []byte // this turn's input items (a JSON array)
	Response   []byte // the response object
	Created    time.Time
	Expires    time.Time
}

// Store keeps responses until they expire.
type Store interface {
	// Put stores r, replacing a record of the same id.
	Put(ctx context.Context, r Record) error
	// Get returns the record of id; apierr.ErrNotFound when there is none
	// or it expired by now.
	Get(ctx context.Context, id string, now time.Time) (Record, error)
	// Delete removes the record of id; apierr.ErrNotFound when there was
	// none.
	Delete(ctx context.Context, id string) error
}

// Memory is the Store of local mode and the tests.
type Memory struct {
	mu   sync.Mutex
	recs map[string]Record
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty memory store.
func NewMemory() *Memory { return &Memory{recs: map[string]Record{}} }

// Put implements Store; expired records are dropped on the way.
func (m *Memory) Put(_ context.Context, r Record) error {
	if r.ID == "" {
		return &apierr.InvalidParam{Param: "id", Reason: "empty"}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.recs)%64 == 0 {
		for id, old := range m.recs {
			if !old.Expires.IsZero() && !r.Created.Before(old.Expires) {
				delete(m.recs, id)
			}
		}
	}
	r.Input, r.Response = clone(r.Input), clone(r.Response)
	m.recs[r.ID] = r
	return nil
}

// Get implements Store.
func (m *Memory) Get(_ context.Context, id string, now time.Time) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.recs[id]
	if !ok || (!r.Expires.IsZero() && !now.Before(r.Expires)) {
		return Record{}, apierr.ErrNotFound
	}
	r.Input, r.Response = clone(r.Input), clone(r.Response)
	return r, nil
}

// Delete implements Store.
func (m *Memory) Delete(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.recs[id]; !ok {
		return apierr.ErrNotFound
	}
	delete(m.recs, id)
	return nil
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}
