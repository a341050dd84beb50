package ledger_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/idemkey/idemkey/derive/ledger/postgres"
	"github.com/idemkey/idemkey/derive/ledger/redis"
	"github.com/idemkey/idemkey/derive/ledger/sqlite"
	"github.com/idemkey/idemkey/derive/ledger/stores"
	"github.com/idemkey/idemkey/derive/ledger/testserver"
)

func TestMain(m *testing.M) { os.Exit(testserver.Main(m)) }

// holdStore is a real store for the hold loop's tests, with its kernel
// lock per key where it has one.
type holdStore struct {
	name   string
	s      ledger.Store
	locker ledger.KeyLocker
}

func openSQLiteHold(t *testing.T) holdStore {
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return holdStore{name: "sqlite", s: s, locker: stores.FileLocker{KL: s}}
}

func openRedisHold(t *testing.T) holdStore {
	srv := testserver.NewRedis(t)
	s, err := redis.Open(context.Background(), srv.URL(), redis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return holdStore{name: "redis", s: s}
}

func openPostgresHold(t *testing.T) holdStore {
	s, err := postgres.Open(context.Background(), testserver.Postgres(t), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return holdStore{name: "postgres", s: s}
}

// eachStore runs f on SQLite (a kernel lock per key), Redis and
// PostgreSQL (leases), on the three at once: each store is the test's
// own, and f mostly waits (on leases, on the hold loop).
func eachStore(t *testing.T, f func(t *testing.T, hs holdStore)) {
	var wg sync.WaitGroup
	for _, open := range []func(*testing.T) holdStore{openSQLiteHold, openRedisHold, openPostgresHold} {
		hs := open(t)
		wg.Go(func() { t.Run(hs.name, func(t *testing.T) { f(t, hs) }) })
	}
	wg.Wait()
}

func newKey() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "k-" + hex.EncodeToString(b)
}

func holdReq(hs holdStore, key string, lease time.Duration) ledger.HoldRequest {
	return ledger.HoldRequest{
		Claim: ledger.ClaimRequest{
			Record: ledger.Record{Key: key, Task: "t", Tool: "x", Kind: "run", Fingerprint: "fp", Holder: "test"},
			Lease:  lease,
		},
		Locker: hs.locker,
	}
}

func mustHold(t *testing.T, hs holdStore, req ledger.HoldRequest, want ledger.Action) *ledger.Held {
	t.Helper()
	h, err := ledger.Hold(context.Background(), hs.s, req)
	if err != nil {
		t.Fatal(err)
	}
	if h.Action != want {
		t.Fatalf("Hold: %v (record %+v), want %v", h.Action, h.Record, want)
	}
	if (h.Hold != nil) != (want == ledger.ActRun) {
		t.Fatalf("Hold: action %v with hold %v", h.Action, h.Hold)
	}
	return h
}

func get(t *testing.T, hs holdStore, key string) *ledger.Record {
	t.Helper()
	rec, _, err := hs.s.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func out(s string) ledger.Output {
	return ledger.Output{Data: []byte(s), Length: int64(len(s)), SHA256: "-"}
}

func TestHoldRunCompleteReplay(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, hs holdStore) {
		key := newKey()
		h := mustHold(t, hs, holdReq(hs, key, time.Second), ledger.ActRun)
		if h.Hold.Attempt() != 1 || (hs.locker != nil) != (h.Hold.Lock() != nil) {
			t.Fatalf("attempt %d, lock %v", h.Hold.Attempt(), h.Hold.Lock())
		}
		c := h.Hold.Complete(context.Background(), ledger.Outcome{State: ledger.Succeeded, Stdout: out("done\n")})
		if c.Err != nil || c.Record.State != ledger.Succeeded {
			t.Fatalf("Complete: %+v", c)
		}
		if again := h.Hold.Complete(context.Background(), ledger.Outcome{State: ledger.Failed, ExitCode: 1}); !errors.Is(again.Err, ledger.ErrCompleted) {
			t.Fatalf("second Complete: %v, want ErrCompleted", again.Err)
		}
		r := mustHold(t, hs, holdReq(hs, key, time.Second), ledger.ActReplay)
		if string(r.Record.Stdout.Data) != "done\n" || r.Record.State != ledger.Succeeded {
			t.Fatalf("replayed %+v", r.Record)
		}
	})
}

// TestHoldWaitsForBusy: a busy key is Busy at once without Wait; with Wait, the waiter acts on
// the holder's outcome as soon as it is recorded.
func TestHoldWaitsForBusy(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, hs holdStore) {
		key := newKey()
		a := mustHold(t, hs, holdReq(hs, key, time.Second), ledger.ActRun)
		b := mustHold(t, hs, holdReq(hs, key, time.Second), ledger.ActBusy)
		if b.Record == nil || b.Record.State != ledger.Running || b.Waited {
			t.Fatalf("busy record %+v, waited %v", b.Record, b.Waited)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			time.Sleep(300 * time.Millisecond)
			a.Hold.Complete(context.Background(), ledger.Outcome{State: ledger.Succeeded, Stdout: out("a")})
		}()
		req := holdReq(hs, key, time.Second)
		req.Wait = 20 * time.Second
		waiting := 0
		req.Events.Waiting = func(*ledger.Record) { waiting++ }
		w := mustHold(t, hs, req, ledger.ActReplay)
		<-done
		if !w.Waited || waiting != 1 || string(w.Record.Stdout.Data) != "a" {
			t.Fatalf("waited %v (%d events), record %+v", w.Waited, waiting, w.Record)
		}
	})
}

// TestHoldRenewsLease: the lease is renewed while the step runs: a hold longer than several
// leases keeps the key from others.
func TestHoldRenewsLease(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, hs holdStore) {
		if hs.locker != nil {
			t.Skip("a kernel lock has no lease")
		}
		key := newKey()
		lease := 300 * time.Millisecond
		a := mustHold(t, hs, holdReq(hs, key, lease), ledger.ActRun)
		for range 5 {
			time.Sleep(lease / 2)
			mustHold(t, hs, holdReq(hs, key, lease), ledger.ActBusy)
		}
		if err := a.Hold.LostErr(); err != nil {
			t.Fatalf("lost: %v", err)
		}
		if c := a.Hold.Complete(context.Background(), ledger.Outcome{State: ledger.Succeeded}); c.Err != nil {
			t.Fatal(c.Err)
		}
	})
}

// TestHoldLostWhenRecordRemoved: a hold whose record goes away is lost, and says so; its completion
// does not write a record again.
func TestHoldLostWhenRecordRemoved(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, hs holdStore) {
		key := newKey()
		lease := 150 * time.Millisecond
		var lostErr error
		var mu sync.Mutex
		var hold atomic.Pointer[ledger.Holding]
		closedFirst := false
		req := holdReq(hs, key, lease)
		req.Events.Lost = func(err error) {
			mu.Lock()
			lostErr = err
			// A waiter on Lost() must find the event said: it is called
			// before Lost() is closed.
			select {
			case <-hold.Load().Lost():
				closedFirst = true
			default:
			}
			mu.Unlock()
		}
		a := mustHold(t, hs, req, ledger.ActRun)
		hold.Store(a.Hold)
		if _, err := hs.s.Delete(context.Background(), key, nil); err != nil {
			t.Fatal(err)
		}
		select {
		case <-a.Hold.Lost():
		case <-time.After(10 * time.Second):
			t.Fatal("the hold was not lost")
		}
		mu.Lock()
		defer mu.Unlock()
		if closedFirst {
			t.Fatal("Lost() was closed before Events.Lost was called")
		}
		if !errors.Is(a.Hold.LostErr(), ledger.ErrLeaseLost) || !errors.Is(lostErr, ledger.ErrLeaseLost) {
			t.Fatalf("LostErr %v, event %v", a.Hold.LostErr(), lostErr)
		}
		c := a.Hold.Complete(context.Background(), ledger.Outcome{State: ledger.Succeeded})
		if !errors.Is(c.Err, ledger.ErrLeaseLost) || c.Current != nil {
			t.Fatalf("Complete after loss: %+v", c)
		}
		if rec := get(t, hs, key); rec != nil {
			t.Fatalf("a record came back: %+v", rec)
		}
	})
}

// unknownKey leaves a key whose attempt 1 ended unknown.
func unknownKey(t *testing.T, hs holdStore) string {
	t.Helper()
	key := newKey()
	h := mustHold(t, hs, holdReq(hs, key, time.Second), ledger.ActRun)
	c := h.Hold.Complete(context.Background(), ledger.Outcome{State: ledger.Unknown, ExitCode: 137, Reason: "killed by signal 9 (killed)"})
	if c.Err != nil {
		t.Fatal(c.Err)
	}
	return key
}

func TestHoldReconcile(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, hs holdStore) {
		answer := func(v ledger.Verdict, note string) ledger.Reconciler {
			return func(_ context.Context, rec *ledger.Record) ledger.Reconciliation {
				if rec.State != ledger.Unknown || rec.Attempt != 1 {
					t.Errorf("reconcile of %+v", rec)
				}
				return ledger.Reconciliation{Verdict: v, Output: out("pr #7\n"), Note: note}
			}
		}
		t.Run("happened", func(t *testing.T) {
			key := unknownKey(t, hs)
			req := holdReq(hs, key, time.Second)
			req.Reconcile = answer(ledger.Happened, "found it")
			h := mustHold(t, hs, req, ledger.ActReplay)
			rec := get(t, hs, key)
			if rec.State != ledger.Succeeded || rec.Attempt != 1 || string(rec.Stdout.Data) != "pr #7\n" || rec.ExitCode != 0 ||
				rec.Reason != "reconciled as succeeded: the owner says the effect happened: found it (was: killed by signal 9 (killed))" {
				t.Fatalf("settled %+v", rec)
			}
			if h.Reconciled == nil || h.Reconciled.Verdict != ledger.Happened || string(h.Record.Stdout.Data) != "pr #7\n" {
				t.Fatalf("held %+v", h)
			}
			// Settled once: the next hold replays, nothing asked.
			req.Reconcile = func(context.Context, *ledger.Record) ledger.Reconciliation {
				t.Error("asked again")
				return ledger.Reconciliation{}
			}
			mustHold(t, hs, req, ledger.ActReplay)
		})
		t.Run("not happened", func(t *testing.T) {
			key := unknownKey(t, hs)
			req := holdReq(hs, key, time.Second)
			req.Reconcile = answer(ledger.NotHappened, "")
			req.Claim.ReplayFailed = true // reconciled as not happened: it runs all the same
			h := mustHold(t, hs, req, ledger.ActRun)
			defer h.Hold.Close()
			if h.Hold.Attempt() != 2 || h.Previous == nil || h.Previous.State != ledger.Failed ||
				h.Previous.Reason != "reconciled as failed: the owner says the effect did not happen (was: killed by signal 9 (killed))" {
				t.Fatalf("attempt %d after %+v", h.Hold.Attempt(), h.Previous)
			}
		})
		for _, p := range []ledger.Policy{ledger.RecoverFail, ledger.RecoverRetry} {
			t.Run("undecided "+string(p), func(t *testing.T) {
				key := unknownKey(t, hs)
				before := get(t, hs, key)
				req := holdReq(hs, key, time.Second)
				req.Claim.Recover = p
				req.Reconcile = answer(ledger.Undecided, "exit status 2")
				want := ledger.ActUnknown
				if p == ledger.RecoverRetry {
					want = ledger.ActRun
				}
				h := mustHold(t, hs, req, want)
				if h.Reconciled == nil || h.Reconciled.Note != "exit status 2" {
					t.Fatalf("reconciled %+v", h.Reconciled)
				}
				if p == ledger.RecoverRetry {
					if h.Hold.Attempt() != 2 {
						t.Fatalf("attempt %d", h.Hold.Attempt())
					}
					h.Hold.Close()
					return
				}
				after := get(t, hs, key)
				if after.State != ledger.Unknown || after.Reason != before.Reason || after.Holder != before.Holder || after.ExitCode != 137 {
					t.Fatalf("unknown record changed: %+v, was %+v", after, before)
				}
			})
		}
	})
}

// TestHoldReconcileHoldsKey: a reconcile runs under the key's claim: while it runs, another caller
// finds the key busy (it neither reconciles nor runs), however long the
// reconcile takes compared with the lease.
func TestHoldReconcileHoldsKey(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, hs holdStore) {
		key := unknownKey(t, hs)
		lease := time.Second
		started, release := make(chan struct{}), make(chan struct{})
		var asked int
		var mu sync.Mutex
		rc := func(context.Context, *ledger.Record) ledger.Reconciliation {
			mu.Lock()
			asked++
			if asked == 1 {
				close(started)
			}
			mu.Unlock()
			<-release
			return ledger.Reconciliation{Verdict: ledger.Happened, Output: out("ok")}
		}
		req := holdReq(hs, key, lease)
		req.Reconcile = rc
		res := make(chan *ledger.Held, 1)
		go func() {
			h, err := ledger.Hold(context.Background(), hs.s, req)
			if err != nil {
				t.Error(err)
			}
			res <- h
		}()
		select {
		case <-started:
		case h := <-res:
			close(release)
			t.Fatalf("the hold ended without reconciling: %+v", h)
		}
		other := holdReq(hs, key, lease)
		other.Claim.Recover = ledger.RecoverRetry
		other.Reconcile = rc
		for range 3 { // several leases
			time.Sleep(lease)
			mustHold(t, hs, other, ledger.ActBusy)
		}
		close(release)
		if h := <-res; h == nil || h.Action != ledger.ActReplay {
			t.Fatalf("reconciling hold: %+v", h)
		}
		mustHold(t, hs, other, ledger.ActReplay)
		if asked != 1 {
			t.Fatalf("asked %d times", asked)
		}
	})
}
