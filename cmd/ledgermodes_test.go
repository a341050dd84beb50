package cmd

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestRunLedgerFilesPrivateUnderUmask0: under umask 000, every file the
// ledger makes is still its owner's alone: the database and SQLite's -wal
// and -shm (0600), the lock directory (0700), the writer lock and a key's
// lock (0600). Arguments and outputs can be sensitive, and a lock file
// others could open is a lock others could hold.
func TestRunLedgerFilesPrivateUnderUmask0(t *testing.T) {
	r := newRig(t)
	c := exec.Command("sh", "-c", `umask 000; exec "$0" "$@"`, r.bin, "run", "--task", "t1", "--tool", "m", "--", "true")
	c.Dir, c.Env = r.dir, r.env
	if res := r.run(c); res.code != 0 {
		t.Fatalf("run: exit %d: %s", res.code, res.stderr)
	}
	locks, err := filepath.Glob(r.ledger + ".locks/*.lock")
	if err != nil || len(locks) != 1 {
		t.Fatalf("key lock files: %v %v", locks, err)
	}
	want := map[string]os.FileMode{
		filepath.Dir(r.ledger):     0o700 | os.ModeDir,
		r.ledger:                   0o600,
		r.ledger + "-wal":          0o600,
		r.ledger + "-shm":          0o600,
		r.ledger + ".locks":        0o700 | os.ModeDir,
		r.ledger + ".locks/writer": 0o600,
		locks[0]:                   0o600,
	}
	for p, m := range want {
		fi, err := os.Stat(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if fi.Mode() != m {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode(), m)
		}
	}
}
