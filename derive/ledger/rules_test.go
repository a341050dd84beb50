package ledger_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/idemkey/idemkey/derive/ledger/ledgertest"
)

// memStore is the simplest Store that keeps the contract: a map under a
// mutex, with leases and retention on its own clock, and a high-water
// mark of attempts per key that outlives the records. It checks the rules
// and the scenario table themselves (the lease scenarios included); the
// real stores run the same table against real files and servers.
type memStore struct {
	mu       sync.Mutex
	recs     map[string]*ledger.Record
	high     map[string]int64 // the key's highest attempt
	noLeases bool             // liveness is the caller's lock (noLease)
}

func newMem(noLeases bool) *memStore {
	return &memStore{recs: map[string]*ledger.Record{}, high: map[string]int64{}, noLeases: noLeases}
}

func (m *memStore) copyOut(r *ledger.Record) *ledger.Record {
	c := *r
	if !m.noLeases {
		c.ReadAt = time.Now()
	} else {
		c.StoredAt = time.Time{}
	}
	return &c
}

func (m *memStore) Get(_ context.Context, key string) (*ledger.Record, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.recs[key]
	if r == nil {
		return nil, false, nil
	}
	return m.copyOut(r), r.State == ledger.Running && !time.Now().Before(r.LeaseUntil), nil
}

func (m *memStore) put(rec *ledger.Record, lease time.Duration) {
	c := *rec
	c.LeaseUntil = time.Time{}
	if c.State == ledger.Running {
		c.LeaseUntil = time.Now().Add(lease)
	}
	c.StoredAt = time.Now()
	m.recs[rec.Key] = &c
	m.high[rec.Key] = max(m.high[rec.Key], rec.Attempt)
}

func matches(r *ledger.Record, v ledger.Version) bool {
	return r != nil && r.Attempt == v.Attempt && r.State == v.State && r.Token == v.Token
}

func (m *memStore) Insert(_ context.Context, rec *ledger.Record, lease time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.recs[rec.Key] != nil {
		return false, nil
	}
	rec.Attempt = max(rec.Attempt, m.high[rec.Key]+1)
	m.put(rec, lease)
	return true, nil
}

func (m *memStore) Swap(_ context.Context, from ledger.Version, needExpired bool, rec *ledger.Record, lease time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.recs[rec.Key]
	if !matches(r, from) {
		return false, nil
	}
	if needExpired && !(r.State == ledger.Running && !time.Now().Before(r.LeaseUntil)) {
		return false, nil
	}
	m.put(rec, lease)
	return true, nil
}

func (m *memStore) Renew(_ context.Context, key string, from ledger.Version, lease time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.recs[key]
	if !matches(r, from) || r.State != ledger.Running {
		return false, nil
	}
	r.LeaseUntil = time.Now().Add(max(lease, 0))
	return true, nil
}

func (m *memStore) List(_ context.Context, f ledger.Filter) ([]*ledger.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*ledger.Record
	for _, r := range m.recs {
		if (f.Task != "" && r.Task != f.Task) || (f.Tool != "" && r.Tool != f.Tool) || (f.State != "" && r.State != f.State) {
			continue
		}
		c := m.copyOut(r)
		c.Stdout.Data, c.Stderr.Data, c.Meta = nil, nil, nil
		out = append(out, c)
	}
	return out, nil
}

func (m *memStore) Delete(_ context.Context, key string, from *ledger.Version) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.recs[key]
	if r == nil || (from != nil && !matches(r, *from)) {
		return false, nil
	}
	if from != nil && from.State == ledger.Running && !m.noLeases && time.Now().Before(r.LeaseUntil) {
		return false, nil // a live lease: its holder keeps the record
	}
	delete(m.recs, key)
	return true, nil
}

// wipe loses every record and mark, as a TRUNCATE or FLUSHALL would.
func (m *memStore) wipe() {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.recs)
	clear(m.high)
}

func (m *memStore) Close() error { return nil }

func mem(s ledger.Store) *memStore {
	if n, ok := s.(*noLease); ok {
		return n.memStore
	}
	return s.(*memStore)
}

func memWipe(_ *testing.T, s ledger.Store) { mem(s).wipe() }

// memVanish drops the record and keeps its mark, as a store's own expiry.
func memVanish(_ *testing.T, s ledger.Store, key string) {
	m := mem(s)
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.recs, key)
}

func TestRulesWithLeases(t *testing.T) {
	t.Parallel()
	ledgertest.Run(t, func(t *testing.T) ledger.Store { return newMem(false) },
		ledgertest.Caps{Leases: true, ShortLease: 100 * time.Millisecond, Wipe: memWipe, Vanish: memVanish, Isolated: true})
}

func TestRulesWithoutLeases(t *testing.T) {
	t.Parallel()
	// Leases never run out: liveness is the caller's lock.
	ledgertest.Run(t, func(t *testing.T) ledger.Store {
		return &noLease{newMem(true)}
	},
		ledgertest.Caps{Wipe: memWipe, Vanish: memVanish, Isolated: true})
}

type noLease struct{ *memStore }

func (n *noLease) Get(ctx context.Context, key string) (*ledger.Record, bool, error) {
	r, _, err := n.memStore.Get(ctx, key)
	return r, false, err
}

func (n *noLease) Swap(ctx context.Context, from ledger.Version, needExpired bool, rec *ledger.Record, lease time.Duration) (bool, error) {
	if needExpired {
		return false, nil
	}
	return n.memStore.Swap(ctx, from, false, rec, lease)
}

// cramped is a memStore that refuses, for its size, a write of a record
// with more than limit bytes of output.
type cramped struct {
	*memStore
	limit int
}

func (c *cramped) Swap(ctx context.Context, from ledger.Version, needExpired bool, rec *ledger.Record, lease time.Duration) (bool, error) {
	if len(rec.Stdout.Data)+len(rec.Stderr.Data) > c.limit {
		return false, ledger.TooLarge(errors.New("mem: full"))
	}
	return c.memStore.Swap(ctx, from, needExpired, rec, lease)
}

func TestRulesCramped(t *testing.T) {
	t.Parallel()
	ledgertest.Run(t, func(t *testing.T) ledger.Store { return newMem(false) }, ledgertest.Caps{Leases: true, ShortLease: 100 * time.Millisecond, Isolated: true,
		Cramped: func(*testing.T) (ledger.Store, int) { return &cramped{newMem(false), 1000}, 4000 }})
}

// broken is a store whose writes fail as an unreachable store's do.
type broken struct {
	*memStore
	err error
}

func (b *broken) Renew(context.Context, string, ledger.Version, time.Duration) (bool, error) {
	return false, b.err
}

func (b *broken) Swap(context.Context, ledger.Version, bool, *ledger.Record, time.Duration) (bool, error) {
	return false, b.err
}

// TestStoreErrorsPassThrough: a renewal, completion or release that the
// store could not run returns the store's error, never a lease loss (the
// words "lease lost: a newer attempt holds the key" were printed for an
// unreachable store).
func TestStoreErrorsPassThrough(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := newMem(false)
	d, err := ledger.Claim(ctx, m, ledger.ClaimRequest{Record: ledger.Record{Key: "k", Fingerprint: "f"}, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	down := errors.New("cannot reach the ledger at redis://h: connection refused")
	b := &broken{m, down}
	r := *d.Record
	r.State = ledger.Succeeded
	_, cerr := ledger.Complete(ctx, b, &r)
	for what, err := range map[string]error{"renew": ledger.Renew(ctx, b, d.Record, time.Minute), "complete": cerr, "release": ledger.Release(ctx, b, d.Record)} {
		if err != down || errors.Is(err, ledger.ErrLeaseLost) {
			t.Errorf("%s on an unreachable store: %v, want the store's error", what, err)
		}
	}
	// A store error that is not about the size is not retried without
	// the outputs.
	r.Stdout = ledger.Output{Data: []byte("out"), Length: 3}
	if c, err := ledger.Complete(ctx, b, &r); err != down || c.OutputsDropped {
		t.Errorf("complete: %+v %v", c, err)
	}
}

func TestHolderName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"vm pid 1801 pgid 2480 start 1228373 boot fe01298a": "vm pid 1801",
		"vm pid 1801":    "vm pid 1801",
		"host-b pid 200": "host-b pid 200",
		"old idemkey":    "old idemkey",
		"worker 3":       "worker 3",
		"":               "",
		"a b c d e":      "a b c d e",
		"vm pid 7 pgid":  "vm pid 7 pgid",
	} {
		if got := ledger.HolderName(in); got != want {
			t.Errorf("HolderName(%q) = %q, want %q", in, got, want)
		}
	}
}
