package run_test

import (
	"os"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
)

// TestReconcileDuplicated: a reconcile command that exits 3 says the
// effect happened more than once: the unknown record becomes succeeded
// with a reason that says duplicated, its output is replayed, a warning
// names it, and the next run replays without asking or running again.
// ledger reconcile reads exit 3 the same way.
func TestReconcileDuplicated(t *testing.T) {
	t.Parallel()
	r := clitest.NewProcs(t)
	step := []string{"run", "--task", "t", "--tool", "pay", "--", "sh", "-c", `echo ran >> ran; kill -9 $$`}
	if p := r.Run(step...); p.Code != 137 {
		t.Fatalf("the step: exit %d:\n%s", p.Code, p.Stderr.String())
	}
	key := r.OnlyKey()
	rc := `echo asked >> asked; echo "charged twice: ch_1, ch_2" >&2; echo ch_1; exit 3`
	args := append([]string{"run", "--reconcile", rc}, step[1:]...)
	p := r.Run(args...)
	if p.Code != 0 || p.Stdout.String() != "ch_1\n" {
		t.Fatalf("exit %d, stdout %q:\n%s", p.Code, p.Stdout.String(), p.Stderr.String())
	}
	for _, want := range []string{
		"idemkey: warning: " + key + ": the owner says the effect happened more than once (duplicated)",
		"idemkey: reconciled " + key + ": the owner says the effect happened more than once (duplicated): charged twice: ch_1, ch_2; recorded as succeeded, its answer replayed\n",
	} {
		if !strings.Contains(p.Stderr.String(), want) {
			t.Fatalf("not said: %q\n%s", want, p.Stderr.String())
		}
	}
	rec := r.Show(key)
	if rec["state"] != "succeeded" || !strings.HasPrefix(rec["reason"].(string), "reconciled as succeeded: the owner says the effect happened more than once (duplicated)") {
		t.Fatalf("record %v", rec)
	}
	p = r.Run(args...)
	asked, _ := os.ReadFile(r.File("asked"))
	ran, _ := os.ReadFile(r.File("ran"))
	if p.Code != 0 || p.Stdout.String() != "ch_1\n" || string(asked) != "asked\n" || string(ran) != "ran\n" {
		t.Fatalf("after: exit %d, %q, asked %q, ran %q", p.Code, p.Stdout.String(), asked, ran)
	}

	// ledger reconcile: the same answer, the same record.
	if p := r.Run("run", "--task", "t", "--tool", "pay2", "--", "sh", "-c", `kill -9 $$`); p.Code != 137 {
		t.Fatalf("the second step: exit %d", p.Code)
	}
	var key2 string
	for _, rec := range r.Records() {
		if rec["tool"] == "pay2" {
			key2 = rec["key"].(string)
		}
	}
	p = r.Run("ledger", "reconcile", key2, "--json", "--reconcile", "echo ch_9; exit 3")
	if p.Code != 0 || !strings.Contains(p.Stdout.String(), `"duplicated":true`) || r.Show(key2)["state"] != "succeeded" {
		t.Fatalf("ledger reconcile: exit %d %s\n%s", p.Code, p.Stdout.String(), p.Stderr.String())
	}
}

// TestReconcileLeftoverDoesNotHoldTheKey: a reconcile command that leaves
// a process behind in a session of its own (setsid) and cannot tell
// (exit 2): what it left is killed with it, so the key is not kept in
// progress: the next run finds the outcome unknown (76), not busy (75).
func TestReconcileLeftoverDoesNotHoldTheKey(t *testing.T) {
	t.Parallel()
	r := clitest.NewProcs(t)
	step := []string{"run", "--task", "t", "--tool", "pay", "--", "sh", "-c", `kill -9 $$`}
	if p := r.Run(step...); p.Code != 137 {
		t.Fatalf("the step: exit %d:\n%s", p.Code, p.Stderr.String())
	}
	rc := `setsid sh -c 'echo $$ > bg.pid; exec sleep 30' >/dev/null 2>&1 < /dev/null & while [ ! -s bg.pid ]; do sleep 0.01; done; exit 2`
	p := r.Run(append([]string{"run", "--reconcile", rc}, step[1:]...)...)
	if p.Code != 76 || !strings.Contains(p.Stderr.String(), "the reconcile command exited 2") {
		t.Fatalf("exit %d:\n%s", p.Code, p.Stderr.String())
	}
	if bg := r.PidIn("bg.pid"); bg == 0 || alive(bg) {
		t.Fatalf("the reconcile's leftover (pid %d) outlived it", bg)
	}
	if p := r.Run(step...); p.Code != 76 {
		t.Fatalf("the next run: exit %d, want 76:\n%s", p.Code, p.Stderr.String())
	}
}
