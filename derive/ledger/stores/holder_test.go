package stores

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestHolderGone: a holder of this host whose process has ended is gone;
// this process, a holder of another host and a holder that names no pid
// are not.
func TestHolderGone(t *testing.T) {
	host := strings.Fields(Holder())[0]
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	ended := c.ProcessState.Pid()
	for holder, want := range map[string]bool{
		Holder():                                    false,
		fmt.Sprintf("%s pid %d", host, ended):       true,
		fmt.Sprintf("other-%s pid %d", host, ended): false,
		host + " pid x":                             false,
		host:                                        false,
		"":                                          false,
	} {
		if got := HolderGone(holder); got != want {
			t.Errorf("HolderGone(%q) = %v, want %v", holder, got, want)
		}
	}
}

// TestFileLocker: a SQLite ledger's key lock, taken through FileLocker, is
// nil and no error for a second taker while the first holds it, and
// taken again once the first closed it.
func TestFileLocker(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	var lockers []FileLocker
	for range 2 {
		s, err := OpenSQLite(ctx, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		kl, ok := s.(KeyLocker)
		if !ok {
			t.Fatalf("%T is no KeyLocker", s)
		}
		lockers = append(lockers, FileLocker{KL: kl})
	}
	first, err := lockers[0].TryLock("k")
	if err != nil || first == nil {
		t.Fatalf("first lock: %v, %v", first, err)
	}
	if second, err := lockers[1].TryLock("k"); err != nil || second != nil {
		t.Fatalf("while held: %v, %v; want nil and no error", second, err)
	}
	if other, err := lockers[1].TryLock("other"); err != nil || other == nil {
		t.Fatalf("another key: %v, %v", other, err)
	} else {
		other.Close()
	}
	first.Close()
	again, err := lockers[1].TryLock("k")
	if err != nil || again == nil {
		t.Fatalf("after the first closed it: %v, %v", again, err)
	}
	again.Close()
}

// TestLockCloseFreesIt: a key's lock is free when Close returns, although
// another process still holds a copy of its descriptor (as a child that
// another goroutine is starting does until its exec); a lock whose file
// was handed to a command (LockFile) stays held by the command after
// Close, until the command exits.
func TestLockCloseFreesIt(t *testing.T) {
	ctx := context.Background()
	s, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "ledger.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := FileLocker{KL: s.(KeyLocker)}
	holdCopy := func(f *os.File) *exec.Cmd {
		c := exec.Command("sleep", "60")
		c.ExtraFiles = []*os.File{f}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		return c
	}
	for _, given := range []bool{false, true} {
		key := fmt.Sprintf("k-%v", given)
		lock, err := l.TryLock(key)
		if err != nil || lock == nil {
			t.Fatalf("lock %s: %v, %v", key, lock, err)
		}
		f := lock.(*Lock).f
		if given {
			f = LockFile(lock)
		}
		c := holdCopy(f)
		lock.Close()
		again, err := l.TryLock(key)
		if err != nil {
			t.Fatal(err)
		}
		if given {
			if again != nil {
				t.Fatalf("a lock given to a command was taken while the command runs")
			}
			c.Process.Kill()
			c.Wait()
			if again, err = l.TryLock(key); err != nil || again == nil {
				t.Fatalf("after the command exited: %v, %v", again, err)
			}
		} else if again == nil {
			t.Fatalf("a closed lock stays held by another process's copy of its descriptor")
		}
		again.Close()
	}
}
