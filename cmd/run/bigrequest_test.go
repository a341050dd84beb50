package run_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/derive/ledger"
)

// bigArgs writes arguments whose request (canonical arguments plus the
// command line) is past what a record keeps to show a mismatch.
func bigArgs(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "big.json")
	if err := os.WriteFile(p, []byte(`{"blob":"`+strings.Repeat("z", ledger.MaxKeptRequest)+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunBigRequestNotKept: a request past ledger.MaxKeptRequest is not kept in the record, but its
// fingerprint still decides: the same step replays, another command line
// is refused (125, not run), and the message says why it cannot show what
// differs. On PostgreSQL the empty request also fits its NOT NULL column.
func TestRunBigRequestNotKept(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, run func(args ...string) (int, string, string), marks func() int, dir string) {
		args := bigArgs(t, dir)
		step := []string{"run", "--task", "t1", "--tool", "load", "--args", args, "--", "sh", "-c", "echo a >> " + filepath.Join(dir, "mark")}
		if code, _, stderr := run(step...); code != 0 || marks() != 1 {
			t.Fatalf("first run: exit %d, %d executions, stderr %s", code, marks(), stderr)
		}
		if code, _, stderr := run(step...); code != 0 || marks() != 1 || !strings.Contains(stderr, "replayed") {
			t.Fatalf("second run: exit %d, %d executions, stderr %s", code, marks(), stderr)
		}
		other := append(append([]string(nil), step[:len(step)-1]...), "echo b >> "+filepath.Join(dir, "mark"))
		code, stdout, stderr := run(other...)
		if code != 125 || marks() != 1 || stdout != "" {
			t.Fatalf("another command line: exit %d, %d executions, stdout %q", code, marks(), stdout)
		}
		if !strings.Contains(stderr, "the fingerprints differ (a request past 1048576 bytes is not kept to compare)") {
			t.Fatalf("the message: %s", stderr)
		}
	}
	t.Run("sqlite", func(t *testing.T) {
		r := clitest.NewRig(t)
		check(t, func(args ...string) (int, string, string) {
			res := r.Idemkey(args...)
			return res.Code, string(res.Stdout), string(res.Stderr)
		}, func() int { return r.Lines("mark") }, r.Dir)
	})
	clitest.EachStore(t, func(t *testing.T, s *clitest.Store) {
		fl := clitest.NewFleet(t, s, nil)
		n := 0
		check(t, func(args ...string) (int, string, string) {
			n++
			w := fl.Run("m"+string(rune('a'+n)), args...)
			return w.Code, w.Stdout.String(), w.Stderr.String()
		}, func() int { return len(fl.Lines("mark")) }, fl.Dir)
	})
}
