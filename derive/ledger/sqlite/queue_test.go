//go:build unix

package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/idemkey/idemkey/derive/ledger"
)

// holdWriter takes the ledger's writer lock as another idemkey process
// would (its own open file description), until the returned func runs.
func holdWriter(t *testing.T, s *Store) func() {
	t.Helper()
	if err := os.MkdirAll(s.LockDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(s.LockDir(), "writer"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	return func() { f.Close() }
}

func running(key string) *ledger.Record {
	return &ledger.Record{Key: key, Task: "t", Tool: "x", Kind: "run", Fingerprint: "f", State: ledger.Running, Attempt: 1, StartedAt: time.Now()}
}

// TestWritersQueue: a write waits for the writer lock, and goes ahead as soon as it is let
// go.
func TestWritersQueue(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "ledger.db"), Options{})
	release := holdWriter(t, s)
	done := make(chan error, 1)
	go func() {
		_, err := s.Insert(context.Background(), running("k"), 0)
		done <- err
	}()
	select {
	case err := <-done:
		release()
		t.Fatalf("the write did not wait for the writer lock (err %v)", err)
	case <-time.After(200 * time.Millisecond):
	}
	release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the write did not go ahead once the writer lock was free")
	}
	if r, _, err := s.Get(context.Background(), "k"); err != nil || r == nil {
		t.Fatalf("record after the queued write: %v, %v", r, err)
	}
}

// TestWriterQueueTimesOut: a writer lock held longer than the busy timeout (by a stopped process,
// say) does not stop the ledger: the write goes on to SQLite's own lock,
// and the abandoned wait lets the lock go once it gets it.
func TestWriterQueueTimesOut(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "ledger.db"), Options{BusyTimeout: 300 * time.Millisecond})
	release := holdWriter(t, s)
	start := time.Now()
	if ok, err := s.Insert(context.Background(), running("k"), 0); err != nil || !ok {
		release()
		t.Fatalf("insert past a held writer lock: %v, %v", ok, err)
	}
	if waited := time.Since(start); waited < 250*time.Millisecond {
		t.Errorf("the write waited %v for the writer lock, want the busy timeout (300ms)", waited)
	}
	release()
	// The abandoned wait takes the lock and closes it: the lock is free
	// again soon after.
	deadline := time.Now().Add(5 * time.Second)
	for {
		f, err := os.OpenFile(filepath.Join(s.LockDir(), "writer"), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		f.Close()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the abandoned wait kept the writer lock")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestWriterQueueStoppedHolder: a writer lock held by a stopped process outside any transaction (before
// BEGIN, after COMMIT) costs a write queuePatience, not the busy timeout:
// with the default 10 s, every write of every other process waited 10 s
// (an idemkey run step, two writes: 20 s) for as long as the holder stayed
// stopped, though SQLite's own lock was free. A wait that runs out still
// leaves SQLite's busy timeout to a holder inside its transaction.
func TestWriterQueueStoppedHolder(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "ledger.db"), Options{BusyTimeout: 10 * time.Second})
	release := holdWriter(t, s)
	defer release()
	start := time.Now()
	if ok, err := s.Insert(context.Background(), running("k"), 0); err != nil || !ok {
		t.Fatalf("insert past a held writer lock: %v, %v", ok, err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("the write waited %v behind a stopped writer-lock holder, want about 1 s (queuePatience), not the busy timeout", waited)
	}
	// The store's later writes do not wait for the stuck lock again (a gc
	// of many records would wait for each): 20 of them take less than 20
	// waits would.
	start = time.Now()
	for i := range 20 {
		if ok, err := s.Insert(context.Background(), running(fmt.Sprint("k", i)), 0); err != nil || !ok {
			t.Fatalf("insert %d past a held writer lock: %v, %v", i, ok, err)
		}
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Errorf("20 writes took %v behind a stuck writer lock: each waited for it again", waited)
	}
	// Once it is free again, writes take turns on it again.
	release()
	// (The abandoned wait takes the freed lock for a moment, then lets go.)
	for i := 0; i < 100 && (i == 0 || s.queueStuck.Load()); i++ {
		if ok, err := s.Insert(context.Background(), running(fmt.Sprint("after", i)), 0); err != nil || !ok {
			t.Fatal(ok, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s.queueStuck.Load() {
		t.Error("the writer lock is free, and the store still skips it")
	}
	release = holdWriter(t, s)
	defer release()
	start = time.Now()
	if ok, err := s.Insert(context.Background(), running("queued"), 0); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if waited := time.Since(start); waited < 500*time.Millisecond {
		t.Errorf("the write waited %v for a held writer lock: it no longer takes turns", waited)
	}
}

// TestCompleteLazyThenFull: the completion commits with synchronous=NORMAL, and the connection is
// back at FULL for every write after it (a claim must be durable).
func TestCompleteLazyThenFull(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "ledger.db"), Options{})
	sync := func() int {
		t.Helper()
		var n int
		if err := s.db.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	const full = 2
	if n := sync(); n != full {
		t.Fatalf("synchronous = %d after open, want %d (FULL)", n, full)
	}
	if _, err := s.Insert(ctx, running("k"), 0); err != nil {
		t.Fatal(err)
	}
	var _ ledger.LazySwapper = s
	done := *running("k")
	done.State, done.ExitCode, done.EndedAt = ledger.Succeeded, 0, time.Now()
	if _, err := ledger.Complete(ctx, s, &done); err != nil {
		t.Fatal(err)
	}
	if n := sync(); n != full {
		t.Fatalf("synchronous = %d after a completion, want %d (FULL)", n, full)
	}
	if r, _, err := s.Get(ctx, "k"); err != nil || r == nil || r.State != ledger.Succeeded {
		t.Fatalf("record after the completion: %+v, %v", r, err)
	}
	// A completion that matches nothing (another attempt) changes nothing.
	stale := done
	stale.Attempt = 7
	if _, err := ledger.Complete(ctx, s, &stale); err != ledger.ErrLeaseLost {
		t.Fatalf("stale completion: %v, want ErrLeaseLost", err)
	}
	if n := sync(); n != full {
		t.Fatalf("synchronous = %d after a stale completion, want %d (FULL)", n, full)
	}
}
