package stores

import (
	"context"
	"fmt"
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
