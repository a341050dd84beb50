// Package storetest checks a lease store's primitives directly, below the
// rules that package ledgertest exercises: an Insert raced by 64
// goroutines behind a barrier stores one record, a Swap or Renew from a
// stale version matches nothing, and a lease runs out on the store's
// clock (only durations cross the wire), and a versioned Delete of a
// running record waits for its lease to run out.
package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkey/idemkey/derive/ledger"
)

// Run runs the checks as subtests, all at once (each on a store of its
// own, and most of their time is waiting on leases); open returns an
// empty store and may be called concurrently.
func Run(t *testing.T, open func(t *testing.T) ledger.Store) {
	var wg sync.WaitGroup
	for name, check := range map[string]func(*testing.T, ledger.Store){
		"InsertRace64":            insertRace,
		"InsertOrGetRace64":       insertOrGetRace,
		"SwapRace64":              swapRace,
		"StaleVersionFenced":      fenced,
		"LeaseOnStoreClock":       lease,
		"DeleteNeedsExpiredLease": deleteNeedsExpiredLease,
	} {
		wg.Go(func() { t.Run(name, func(t *testing.T) { check(t, open(t)) }) })
	}
	wg.Wait()
}

func rec(key, holder string, attempt int64, state ledger.State) *ledger.Record {
	return &ledger.Record{
		Key: key, Task: "t", Tool: "x", Kind: "run", Fingerprint: "fp", Request: []byte("[]"),
		State: state, Attempt: attempt, Holder: holder, ExitCode: ledger.NoExit,
		StartedAt: time.Now().UTC().Truncate(time.Microsecond),
	}
}

// race runs f(i) in n goroutines released together, and counts trues.
func race(t *testing.T, n int, f func(i int) (bool, error)) (int, []int) {
	var wg sync.WaitGroup
	var ready sync.WaitGroup
	start := make(chan struct{})
	var wins atomic.Int64
	var mu sync.Mutex
	var winners []int
	ready.Add(n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ready.Done()
			<-start
			ok, err := f(i)
			if err != nil {
				t.Errorf("goroutine %d: %v", i, err)
			}
			if ok {
				wins.Add(1)
				mu.Lock()
				winners = append(winners, i)
				mu.Unlock()
			}
		}()
	}
	ready.Wait()
	close(start)
	wg.Wait()
	return int(wins.Load()), winners
}

// insertOrGetRace: 64 InsertOrGet of one key behind a barrier insert one
// record; every other call returns that record (or nothing, when the
// winner's write was not visible to it yet) and never a record of its own;
// afterwards the stored record comes back with its lease state.
func insertOrGetRace(t *testing.T, s ledger.Store) {
	ctx := context.Background()
	ig, ok := s.(ledger.InsertGetter)
	if !ok {
		t.Fatalf("%T does not implement ledger.InsertGetter", s)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	n, winners := race(t, 64, func(i int) (bool, error) {
		inserted, stored, _, err := ig.InsertOrGet(ctx, rec("k-iog", fmt.Sprintf("holder %d", i), 1, ledger.Running), time.Minute)
		if !inserted && stored != nil {
			mu.Lock()
			seen[stored.Holder]++
			mu.Unlock()
		}
		return inserted, err
	})
	if n != 1 {
		t.Fatalf("%d InsertOrGet of one key inserted, want 1", n)
	}
	winner := fmt.Sprintf("holder %d", winners[0])
	for h, c := range seen {
		if h != winner {
			t.Errorf("%d losers were returned the record of %q, want the winner's (%q)", c, h, winner)
		}
	}
	inserted, stored, expired, err := ig.InsertOrGet(ctx, rec("k-iog", "late", 1, ledger.Running), time.Minute)
	if err != nil || inserted || stored == nil || stored.Holder != winner || expired || stored.State != ledger.Running {
		t.Fatalf("InsertOrGet of a stored key: inserted %v, stored %+v, expired %v, err %v; want the winner's live record", inserted, stored, expired, err)
	}
	if ok, _, _, err := ig.InsertOrGet(ctx, rec("k-iog-short", "h", 1, ledger.Running), 200*time.Millisecond); err != nil || !ok {
		t.Fatalf("insert: %v %v", ok, err)
	}
	time.Sleep(400 * time.Millisecond)
	_, stored, expired, err = ig.InsertOrGet(ctx, rec("k-iog-short", "other", 1, ledger.Running), time.Minute)
	if err != nil || stored == nil || stored.Holder != "h" || !expired {
		t.Fatalf("InsertOrGet after the lease ran out: stored %+v, expired %v, err %v; want h's record, expired", stored, expired, err)
	}
}

func insertRace(t *testing.T, s ledger.Store) {
	ctx := context.Background()
	n, winners := race(t, 64, func(i int) (bool, error) {
		return s.Insert(ctx, rec("k-insert", fmt.Sprintf("holder %d", i), 1, ledger.Running), time.Minute)
	})
	if n != 1 {
		t.Fatalf("%d inserts of one key succeeded, want 1", n)
	}
	got, _, err := s.Get(ctx, "k-insert")
	if err != nil || got == nil || got.Holder != fmt.Sprintf("holder %d", winners[0]) {
		t.Fatalf("stored %+v (err %v), want the winner's record (holder %d)", got, err, winners[0])
	}
}

func swapRace(t *testing.T, s ledger.Store) {
	ctx := context.Background()
	if ok, err := s.Insert(ctx, rec("k-swap", "first", 1, ledger.Unknown), 0); !ok || err != nil {
		t.Fatalf("insert: %v %v", ok, err)
	}
	n, winners := race(t, 64, func(i int) (bool, error) {
		return s.Swap(ctx, ledger.Version{Attempt: 1, State: ledger.Unknown}, false,
			rec("k-swap", fmt.Sprintf("taker %d", i), 2, ledger.Running), time.Minute)
	})
	if n != 1 {
		t.Fatalf("%d takeovers from one version succeeded, want 1", n)
	}
	got, _, _ := s.Get(ctx, "k-swap")
	if got.Attempt != 2 || got.Holder != fmt.Sprintf("taker %d", winners[0]) {
		t.Fatalf("stored %+v, want attempt 2 of the winner", got)
	}
}

func fenced(t *testing.T, s ledger.Store) {
	ctx := context.Background()
	s.Insert(ctx, rec("k-fence", "a1", 1, ledger.Running), time.Minute)
	took, err := s.Swap(ctx, ledger.Version{Attempt: 1, State: ledger.Running}, false, rec("k-fence", "a2", 2, ledger.Running), time.Minute)
	if !took || err != nil {
		t.Fatalf("takeover: %v %v", took, err)
	}
	// The first holder, unaware, renews and completes as attempt 1.
	if ok, err := s.Renew(ctx, "k-fence", ledger.Version{Attempt: 1, State: ledger.Running}, time.Minute); ok || err != nil {
		t.Fatalf("stale renew matched: %v %v", ok, err)
	}
	done := rec("k-fence", "a1", 1, ledger.Succeeded)
	done.ExitCode, done.EndedAt = 0, time.Now()
	if ok, err := s.Swap(ctx, ledger.Version{Attempt: 1, State: ledger.Running}, false, done, 0); ok || err != nil {
		t.Fatalf("stale complete matched: %v %v", ok, err)
	}
	if ok, err := s.Delete(ctx, "k-fence", &ledger.Version{Attempt: 1, State: ledger.Running}); ok || err != nil {
		t.Fatalf("stale delete matched: %v %v", ok, err)
	}
	got, _, _ := s.Get(ctx, "k-fence")
	if got == nil || got.Attempt != 2 || got.State != ledger.Running || got.Holder != "a2" {
		t.Fatalf("attempt 2's record changed: %+v", got)
	}
	if ok, err := s.Renew(ctx, "k-fence", ledger.Version{Attempt: 2, State: ledger.Running}, time.Minute); !ok || err != nil {
		t.Fatalf("current renew: %v %v", ok, err)
	}
}

func lease(t *testing.T, s ledger.Store) {
	ctx := context.Background()
	const l = 400 * time.Millisecond
	s.Insert(ctx, rec("k-lease", "a1", 1, ledger.Running), l)
	got, expired, _ := s.Get(ctx, "k-lease")
	if expired || got.LeaseUntil.IsZero() {
		t.Fatalf("fresh lease: expired=%v lease_until=%v", expired, got.LeaseUntil)
	}
	from := ledger.Version{Attempt: 1, State: ledger.Running}
	if ok, _ := s.Swap(ctx, from, true, rec("k-lease", "a2", 2, ledger.Running), l); ok {
		t.Fatal("took over a live lease")
	}
	// Renewed at half the lease, it outlives the first deadline.
	time.Sleep(l / 2)
	if ok, err := s.Renew(ctx, "k-lease", ledger.Version{Attempt: 1, State: ledger.Running}, l); !ok || err != nil {
		t.Fatalf("renew: %v %v", ok, err)
	}
	time.Sleep(l * 3 / 4)
	if _, expired, _ := s.Get(ctx, "k-lease"); expired {
		t.Fatal("a renewed lease ran out at its first deadline")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, expired, err := s.Get(ctx, "k-lease")
		if err != nil {
			t.Fatal(err)
		}
		if expired {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the lease never ran out")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ok, err := s.Swap(ctx, from, true, rec("k-lease", "a2", 2, ledger.Running), l); !ok || err != nil {
		t.Fatalf("takeover of an expired lease: %v %v", ok, err)
	}
	// A finished record has no lease.
	done := rec("k-lease", "a2", 2, ledger.Succeeded)
	done.ExitCode, done.EndedAt = 0, time.Now()
	s.Swap(ctx, ledger.Version{Attempt: 2, State: ledger.Running}, false, done, l)
	got, expired, _ = s.Get(ctx, "k-lease")
	if expired || !got.LeaseUntil.IsZero() || got.State != ledger.Succeeded {
		t.Fatalf("finished record: %+v expired=%v", got, expired)
	}
}

// deleteNeedsExpiredLease: a Delete from a running version removes the
// record only once its lease ran out on the store's clock, and not after
// its holder renewed it (gc and forget saw it expired, then the holder
// woke up).
func deleteNeedsExpiredLease(t *testing.T, s ledger.Store) {
	ctx := context.Background()
	const l = 300 * time.Millisecond
	from := &ledger.Version{Attempt: 1, State: ledger.Running}
	s.Insert(ctx, rec("k-del", "a1", 1, ledger.Running), l)
	if ok, err := s.Delete(ctx, "k-del", from); ok || err != nil {
		t.Fatalf("deleted a live lease's record: %v %v", ok, err)
	}
	waitExpired := func() {
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, expired, err := s.Get(ctx, "k-del")
			if err != nil {
				t.Fatal(err)
			}
			if expired {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the lease never ran out")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitExpired()
	if ok, err := s.Renew(ctx, "k-del", ledger.Version{Attempt: 1, State: ledger.Running}, time.Minute); !ok || err != nil {
		t.Fatalf("renew after expiry, before any takeover: %v %v", ok, err)
	}
	if ok, err := s.Delete(ctx, "k-del", from); ok || err != nil {
		t.Fatalf("deleted a renewed lease's record: %v %v", ok, err)
	}
	if ok, err := s.Renew(ctx, "k-del", ledger.Version{Attempt: 1, State: ledger.Running}, l); !ok || err != nil {
		t.Fatalf("renew: %v %v", ok, err)
	}
	waitExpired()
	if ok, err := s.Delete(ctx, "k-del", from); !ok || err != nil {
		t.Fatalf("delete of an expired lease's record: %v %v", ok, err)
	}
	if got, _, _ := s.Get(ctx, "k-del"); got != nil {
		t.Fatalf("still there: %+v", got)
	}
}
