package cmd

import (
	"path/filepath"
	"testing"
)

// TestRunCrashAfterLazyComplete: the outcome is committed without waiting
// for the disk (SQLite synchronous=NORMAL, PostgreSQL synchronous_commit
// off), so only a crash of the machine or the server may lose it, never
// one of idemkey: killed (SIGKILL, the store not closed, no checkpoint)
// right after the completion, the record is succeeded, and the next run
// replays it without running the command again, on every store.
func TestRunCrashAfterLazyComplete(t *testing.T) {
	check := func(t *testing.T, s *fleetStore) {
		fl := newFleet(t, s, nil)
		step := fl.script("step.sh", "echo ran >> ran; echo out")
		args := []string{"run", "--task", "t-lazy", "--tool", "x", "-v", "--", step}
		env := fl.env
		fl.env = append(env, "IDEMKEY_TEST_CRASH_AFTER_COMPLETE=1")
		first := fl.run("a", args...)
		fl.env = env
		if first.code != 128+9 || first.stdout.String() != "out\n" {
			t.Fatalf("first run: exit %d (want 137: killed after the completion), stdout %q: %s", first.code, first.stdout.String(), first.stderr.String())
		}
		rec := fl.show(runKeyOf(t, first))
		if rec["state"] != "succeeded" || rec["attempt"] != float64(1) {
			t.Fatalf("record after the crash: %v", rec)
		}
		second := fl.run("b", args...)
		if second.code != 0 || second.stdout.String() != "out\n" || len(fl.lines("ran")) != 1 {
			t.Fatalf("second run: exit %d, stdout %q, ran %d: %s", second.code, second.stdout.String(), len(fl.lines("ran")), second.stderr.String())
		}
	}
	t.Run("sqlite", func(t *testing.T) {
		check(t, &fleetStore{url: filepath.Join(t.TempDir(), "ledger.db")})
	})
	eachStore(t, check)
}
