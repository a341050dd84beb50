package run_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
)

// TestRunLedgerFilesPrivateUnderUmask0: under umask 000, every file the
// ledger makes is still its owner's alone: the database and SQLite's -wal
// and -shm (0600), the lock directory (0700), the writer lock and a key's
// lock (0600). Arguments and outputs can be sensitive, and a lock file
// others could open is a lock others could hold.
func TestRunLedgerFilesPrivateUnderUmask0(t *testing.T) {
	r := clitest.NewRig(t)
	c := exec.Command("sh", "-c", `umask 000; exec "$0" "$@"`, r.Bin, "run", "--task", "t1", "--tool", "m", "--", "true")
	c.Dir, c.Env = r.Dir, r.Env
	if res := r.Run(c); res.Code != 0 {
		t.Fatalf("run: exit %d: %s", res.Code, res.Stderr)
	}
	locks, err := filepath.Glob(r.Ledger + ".locks/*.lock")
	if err != nil || len(locks) != 1 {
		t.Fatalf("key lock files: %v %v", locks, err)
	}
	want := map[string]os.FileMode{
		filepath.Dir(r.Ledger):     0o700 | os.ModeDir,
		r.Ledger:                   0o600,
		r.Ledger + "-wal":          0o600,
		r.Ledger + "-shm":          0o600,
		r.Ledger + ".locks":        0o700 | os.ModeDir,
		r.Ledger + ".locks/writer": 0o600,
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
