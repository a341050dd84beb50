package run_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/clitest"
)

// TestFleetFencePausedHolder: holder A (`run --lease
// 3s`) is stopped (SIGSTOP) while its command runs; past its lease,
// `ledger forget KEY` removes its record and B runs the step again. A,
// continued while B's command runs, must not match B's claim: its renewal
// is refused, its command is killed and it exits 76 saying a newer
// attempt holds the key; B finishes and its record (attempt 2: attempt
// numbers never go back) stays. Before claim tokens and the high-water
// mark, B claimed attempt 1 again, A's renewal matched B's record, A's
// command ran to its end and A's completion overwrote B's record.
func TestFleetFencePausedHolder(t *testing.T) {
	t.Parallel()
	clitest.EachStore(t, func(t *testing.T, s *clitest.Store) {
		fl := clitest.NewFleet(t, s, nil)
		// Each worker's command waits for its own release file.
		step := fl.Script("step.sh", `w=$(basename "$XDG_STATE_HOME")
echo "start-$w-$IDEMPOTENCY_ATTEMPT" >> ran
while [ ! -e "release-$w" ]; do sleep 0.05; done
echo "done-$w" >> ran
echo "finished by $w"`)
		// A 3 s lease: A's renewal after SIGCONT has a third of it to be
		// refused by a loaded store (a renewal not answered in time, past
		// a whole lease, is a loss of another kind).
		args := []string{"run", "-v", "--task", "t-fence", "--tool", "deploy", "--lease", "3s", "--", step}
		a := fl.Start("a", args...)
		clitest.WaitFor(t, 20*time.Second, func() bool { return len(fl.Lines("ran")) == 1 })
		// Only idemkey stops: its command runs on, waiting.
		if err := syscall.Kill(a.Cmd.Process.Pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		key := clitest.RunKeyOf(t, a)
		// forget refuses the key ("its holder is alive") until the lease
		// has run out on the store's clock.
		var forget *clitest.Worker
		clitest.WaitFor(t, 30*time.Second, func() bool {
			forget = fl.Run("operator", "ledger", "forget", "--yes", key)
			return !strings.Contains(forget.Stderr.String(), "its holder is alive")
		})
		if forget.Code != 0 {
			t.Fatalf("ledger forget of the paused holder's key: exit %d:\n%s", forget.Code, forget.Stderr.String())
		}
		b := fl.Start("b", args...)
		clitest.WaitFor(t, 20*time.Second, func() bool { return len(fl.Lines("ran")) == 2 })
		syscall.Kill(a.Cmd.Process.Pid, syscall.SIGCONT)
		if c := a.Wait(t, 20*time.Second); c != cli.ExitUnknown {
			t.Fatalf("the paused holder after SIGCONT: exit %d, want 76:\n%s", c, a.Stderr.String())
		}
		if !strings.Contains(a.Stderr.String(), "lease lost: a newer attempt holds the key") {
			t.Fatalf("the paused holder does not say a newer attempt holds the key:\n%s", a.Stderr.String())
		}
		if err := os.WriteFile(filepath.Join(fl.Dir, "release-machine-b"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if c := b.Wait(t, 20*time.Second); c != 0 || b.Stdout.String() != "finished by machine-b\n" {
			t.Fatalf("the newer attempt: exit %d, stdout %q:\n%s", c, b.Stdout.String(), b.Stderr.String())
		}
		// Let A's killed command's shell go, then read the marks.
		os.WriteFile(filepath.Join(fl.Dir, "release-machine-a"), nil, 0o644)
		time.Sleep(300 * time.Millisecond)
		if ran := strings.Join(fl.Lines("ran"), " "); ran != "start-machine-a-1 start-machine-b-2 done-machine-b" {
			t.Fatalf("marks %q: want A (attempt 1) killed unfinished, B (attempt 2) done", ran)
		}
		rec := fl.Show(key)
		if rec["state"] != "succeeded" || rec["attempt"] != float64(2) {
			t.Fatalf("record: %v, want B's attempt 2, succeeded", rec)
		}
		// A third run replays B's outcome.
		if w := fl.Run("c", args...); w.Code != 0 || w.Stdout.String() != "finished by machine-b\n" {
			t.Fatalf("replay: exit %d, stdout %q:\n%s", w.Code, w.Stdout.String(), w.Stderr.String())
		}
	})
}
