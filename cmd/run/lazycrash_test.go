package run_test

import (
	"path/filepath"
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
)

// TestRunCrashAfterLazyComplete: the outcome is committed without waiting
// for the disk (SQLite synchronous=NORMAL, PostgreSQL synchronous_commit
// off), so only a crash of the machine or the server may lose it, never
// one of idemkey: killed (SIGKILL, the store not closed, no checkpoint)
// right after the completion, the record is succeeded, and the next run
// replays it without running the command again, on every store.
func TestRunCrashAfterLazyComplete(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, s *clitest.Store) {
		fl := clitest.NewFleet(t, s, nil)
		step := fl.Script("step.sh", "echo ran >> ran; echo out")
		args := []string{"run", "--task", "t-lazy", "--tool", "x", "-v", "--", step}
		env := fl.Env
		fl.Env = append(env, "IDEMKEY_TEST_CRASH_AFTER_COMPLETE=1")
		first := fl.Run("a", args...)
		fl.Env = env
		if first.Code != 128+9 || first.Stdout.String() != "out\n" {
			t.Fatalf("first run: exit %d (want 137: killed after the completion), stdout %q: %s", first.Code, first.Stdout.String(), first.Stderr.String())
		}
		rec := fl.Show(clitest.RunKeyOf(t, first))
		if rec["state"] != "succeeded" || rec["attempt"] != float64(1) {
			t.Fatalf("record after the crash: %v", rec)
		}
		second := fl.Run("b", args...)
		if second.Code != 0 || second.Stdout.String() != "out\n" || len(fl.Lines("ran")) != 1 {
			t.Fatalf("second run: exit %d, stdout %q, ran %d: %s", second.Code, second.Stdout.String(), len(fl.Lines("ran")), second.Stderr.String())
		}
	}
	t.Run("sqlite", func(t *testing.T) {
		check(t, &clitest.Store{URL: filepath.Join(t.TempDir(), "ledger.db")})
	})
	clitest.EachStore(t, check)
}
