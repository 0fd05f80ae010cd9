package campaign

import (
	"context"
	"errors"
	"sync"
	"time"
)

// A Store holds a campaign's shared state: one record per cell (its
// CellStatus, whose Owner field is the lease) with a revision that every
// write must name (compare-and-set), the campaign's start, and the best
// skills of finished training cells. A campaign run by one process keeps
// it in memory (NewMemoryStore); several processes serving one campaign
// share one on NATS (NewKVStore).
type Store interface {
	// Seed writes st as the cell's record unless the cell has one.
	Seed(ctx context.Context, st CellStatus) error
	// Put writes st as the cell's record if its revision is still rev,
	// and returns the new revision; another write since is ErrConflict.
	Put(ctx context.Context, st CellStatus, rev uint64) (uint64, error)
	// List returns every cell's record and revision.
	List(ctx context.Context) ([]Record, error)
	// Watch calls rec with every record and beat with every member's
	// beat written from now on (by any process) until ctx ends; it
	// returns once the watch is in place.
	Watch(ctx context.Context, rec func(Record), beat func(Beat)) error
	// Beat writes a member's beat: it is alive, and runs these cells.
	Beat(ctx context.Context, b Beat) error
	// Started returns the campaign's start, setting it to now if unset.
	Started(ctx context.Context, now time.Time) (time.Time, error)
	// PutSkill and Skill store and read a finished cell's best skill
	// (best_skill.md), for eval-only cells run by another process.
	PutSkill(ctx context.Context, cell string, text []byte) error
	Skill(ctx context.Context, cell string) ([]byte, error)
}

// Record is a cell's record in a Store.
type Record struct {
	CellStatus
	Rev uint64
}

// Beat is what a member process writes every third of the lease TTL: it
// is alive, and the cells it runs have spent this much so far. One beat
// for all its cells keeps the campaign's state traffic in proportion to
// its members, not to its running cells.
type Beat struct {
	Member string           `json:"member"`
	Cells  map[string]Spend `json:"cells"`
}

// ErrConflict is a Put whose revision is no longer the record's.
var ErrConflict = errors.New("campaign: the cell's record changed since it was read")

// ErrBusy, wrapped in a run's error, says another process still holds
// the run dir (a member thought gone that is still running the cell): the
// cell goes back to the queue instead of failing.
var ErrBusy = errors.New("campaign: the run dir is held by another process")

// ErrNoSkill is Skill for a cell whose best skill was not stored.
var ErrNoSkill = errors.New("campaign: no best skill stored for the cell")

// memoryStore is the Store of a campaign run by one process.
type memoryStore struct {
	mu       sync.Mutex
	rev      uint64
	recs     map[string]Record
	watchers []func(Record)
	beats    []func(Beat)
	started  time.Time
	skills   map[string][]byte
}

// NewMemoryStore returns a Store that lives in this process.
func NewMemoryStore() Store {
	return &memoryStore{recs: map[string]Record{}, skills: map[string][]byte{}}
}

func (m *memoryStore) Seed(_ context.Context, st CellStatus) error {
	m.mu.Lock()
	if _, ok := m.recs[st.Name]; ok {
		m.mu.Unlock()
		return nil
	}
	m.mu.Unlock()
	_, err := m.Put(context.Background(), st, 0)
	return err
}

func (m *memoryStore) Put(_ context.Context, st CellStatus, rev uint64) (uint64, error) {
	m.mu.Lock()
	if m.recs[st.Name].Rev != rev {
		m.mu.Unlock()
		return 0, ErrConflict
	}
	m.rev++
	r := Record{CellStatus: st, Rev: m.rev}
	m.recs[st.Name] = r
	ws := append([]func(Record){}, m.watchers...)
	m.mu.Unlock()
	for _, w := range ws {
		w(r)
	}
	return r.Rev, nil
}

func (m *memoryStore) List(context.Context) ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Record, 0, len(m.recs))
	for _, r := range m.recs {
		out = append(out, r)
	}
	return out, nil
}

func (m *memoryStore) Watch(_ context.Context, rec func(Record), beat func(Beat)) error {
	m.mu.Lock()
	m.watchers = append(m.watchers, rec)
	m.beats = append(m.beats, beat)
	m.mu.Unlock()
	return nil
}

func (m *memoryStore) Beat(_ context.Context, b Beat) error {
	m.mu.Lock()
	ws := append([]func(Beat){}, m.beats...)
	m.mu.Unlock()
	for _, w := range ws {
		w(b)
	}
	return nil
}

func (m *memoryStore) Started(_ context.Context, now time.Time) (time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started.IsZero() {
		m.started = now
	}
	return m.started, nil
}

func (m *memoryStore) PutSkill(_ context.Context, cell string, text []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.skills[cell] = append([]byte(nil), text...)
	return nil
}

func (m *memoryStore) Skill(_ context.Context, cell string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.skills[cell]
	if !ok {
		return nil, ErrNoSkill
	}
	return b, nil
}
