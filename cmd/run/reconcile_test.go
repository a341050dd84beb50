package run_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/clitest"
)

// The reconcile tests: a step's outcome is left unknown by
// kill -9 at a phase, then settled by asking a reconcile command, a real
// process whose answer comes from a file the test writes.

// reconcileFleet is a fleet with a step and a reconcile command.
type reconcileFleet struct {
	*clitest.Fleet
	step, rc string
	args     []string // run's arguments, without --reconcile
}

func sqliteFleetStore(t *testing.T) *clitest.Store {
	return &clitest.Store{Name: "sqlite", URL: filepath.Join(t.TempDir(), "ledger.db")}
}

func newReconcileFleet(t *testing.T, s *clitest.Store, tool string) *reconcileFleet {
	fl := clitest.NewFleet(t, s, nil)
	rf := &reconcileFleet{Fleet: fl}
	// The step: marks each attempt (its pid first), then hangs while
	// "hang" exists.
	rf.step = fl.Script("step.sh", `echo $$ > step.pid
echo "run-$IDEMPOTENCY_ATTEMPT" >> ran
while [ -e hang ]; do sleep 0.02; done
echo "done-$IDEMPOTENCY_ATTEMPT"
`)
	// The reconcile command: marks each question (with what it was told),
	// then answers as the file "answer" says.
	rf.rc = fl.Script("reconcile.sh", `echo "asked-$IDEMPOTENCY_ATTEMPT-$IDEMKEY_TOOL-$IDEMKEY_TASK" >> asked
cat > stdin-seen
echo $$ > rc.pid
test -z "$IDEMKEY_LEDGER" || { echo "IDEMKEY_LEDGER leaked" >&2; exit 9; }
case "$(cat answer)" in
0) echo "pr #7"; echo "found it by its key" >&2; exit 0;;
1) echo "no such pull request" >&2; exit 1;;
2) echo "the API is down" >&2; exit 2;;
hang) exec sleep 60;;
killed) kill -9 $$;;
wait) touch asking; while [ ! -e release ]; do sleep 0.02; done; echo "pr #8"; exit 0;;
esac
exit 3
`)
	rf.args = []string{"run", "-v", "--task", "t-rec", "--tool", tool, "--lease", "1s"}
	return rf
}

func (rf *reconcileFleet) answer(a string) {
	rf.T.Helper()
	if err := os.WriteFile(filepath.Join(rf.Dir, "answer"), []byte(a), 0o644); err != nil {
		rf.T.Fatal(err)
	}
}

func (rf *reconcileFleet) touch(name string) {
	rf.T.Helper()
	if err := os.WriteFile(filepath.Join(rf.Dir, name), nil, 0o644); err != nil {
		rf.T.Fatal(err)
	}
}

func (rf *reconcileFleet) rm(name string) { os.Remove(filepath.Join(rf.Dir, name)) }

// runArgs are run's arguments with extra before the command.
func (rf *reconcileFleet) runArgs(extra ...string) []string {
	a := append(append(append([]string{}, rf.args...), extra...), "--", rf.step)
	return a
}

func (rf *reconcileFleet) withReconcile(extra ...string) []string {
	return rf.runArgs(append([]string{"--reconcile", rf.rc, "--reconcile-timeout", "3s"}, extra...)...)
}

// crashStep leaves attempt 1 unknown: idemkey is killed (-9, its whole
// process group) while the command runs; the command, in a group of its
// own, then ends. It returns the key once the command and its step holder
// are gone (the holder keeps the key's lock until then: a run started
// before would find the key busy).
func (rf *reconcileFleet) crashStep() string {
	rf.T.Helper()
	rf.touch("hang")
	before := len(rf.Lines("ran"))
	w := rf.Start("crash", rf.runArgs()...)
	clitest.WaitFor(rf.T, 20*time.Second, func() bool { return len(rf.Lines("ran")) == before+1 })
	key := clitest.RunKeyOf(rf.T, w)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(must(os.ReadFile(filepath.Join(rf.Dir, "step.pid"))))))
	holder := stepHolderOf(rf.T, pid)
	syscall.Kill(-w.Cmd.Process.Pid, syscall.SIGKILL)
	w.Wait(rf.T, 20*time.Second)
	rf.rm("hang")
	clitest.WaitFor(rf.T, 20*time.Second, func() bool { return !clitest.Alive(pid) && !clitest.Alive(holder) })
	return key
}

func TestReconcileAnswers(t *testing.T) {
	t.Parallel()
	// crash leaves attempt 1 unknown and waits until every process of the
	// killed group is gone (the record reads unknown, not in progress by
	// a step still holding the key's lock): the next run must find it so.
	crash := func(rf *reconcileFleet) string {
		key := rf.crashStep()
		clitest.WaitFor(t, 20*time.Second, func() bool { return rf.Show(key)["state"] == "unknown" })
		return key
	}
	t.Run("0 happened", func(t *testing.T) {
		rf := newReconcileFleet(t, sqliteFleetStore(t), "deploy")
		key := crash(rf)
		rf.answer("0")
		w := rf.Run("a", rf.withReconcile()...)
		if w.Code != 0 || w.Stdout.String() != "pr #7\n" {
			t.Fatalf("exit %d, stdout %q:\n%s", w.Code, w.Stdout.String(), w.Stderr.String())
		}
		if !strings.Contains(w.Stderr.String(), "idemkey: reconciled "+key+": the owner says the effect happened: found it by its key; recorded as succeeded, its answer replayed\n") {
			t.Fatalf("not said:\n%s", w.Stderr.String())
		}
		if got := strings.Join(rf.Lines("asked"), " "); got != "asked-1-deploy-t-rec" {
			t.Fatalf("asked %q", got)
		}
		if b, _ := os.ReadFile(filepath.Join(rf.Dir, "stdin-seen")); string(b) != `["`+rf.step+`"]` {
			t.Fatalf("the reconcile's standard input: %q, want the canonical arguments", b)
		}
		rec := rf.Show(key)
		if rec["state"] != "succeeded" || rec["attempt"] != float64(1) || !strings.HasPrefix(rec["reason"].(string),
			"reconciled as succeeded: the owner says the effect happened: found it by its key (was: holder died: ") {
			t.Fatalf("record %v", rec)
		}
		// Settled: replayed, nothing asked or run again.
		w = rf.Run("b", rf.withReconcile()...)
		if w.Code != 0 || w.Stdout.String() != "pr #7\n" || len(rf.Lines("asked")) != 1 || len(rf.Lines("ran")) != 1 {
			t.Fatalf("after: exit %d, %q, asked %v, ran %v", w.Code, w.Stdout.String(), rf.Lines("asked"), rf.Lines("ran"))
		}
	})
	t.Run("1 not happened", func(t *testing.T) {
		rf := newReconcileFleet(t, sqliteFleetStore(t), "deploy")
		key := crash(rf)
		rf.answer("1")
		w := rf.Run("a", rf.withReconcile("--replay-failed")...)
		if w.Code != 0 || w.Stdout.String() != "done-2\n" || strings.Join(rf.Lines("ran"), " ") != "run-1 run-2" {
			t.Fatalf("exit %d, stdout %q, ran %v:\n%s", w.Code, w.Stdout.String(), rf.Lines("ran"), w.Stderr.String())
		}
		if !strings.Contains(w.Stderr.String(), "the owner says the effect did not happen: no such pull request; running it as attempt 2\n") {
			t.Fatalf("not said:\n%s", w.Stderr.String())
		}
		if rec := rf.Show(key); rec["state"] != "succeeded" || rec["attempt"] != float64(2) {
			t.Fatalf("record %v", rec)
		}
	})
	for _, tc := range []struct{ answer, why string }{
		{"2", "the reconcile command exited 2: the API is down"},
		{"hang", "the reconcile command timed out after 500ms"},
		{"killed", "the reconcile command was killed by signal 9 (killed)"},
	} {
		t.Run(tc.answer+" undecided", func(t *testing.T) {
			rf := newReconcileFleet(t, sqliteFleetStore(t), "deploy")
			key := crash(rf)
			before := rf.Show(key)
			rf.answer(tc.answer)
			args := rf.runArgs("--reconcile", "exec "+rf.rc, "--reconcile-timeout", "500ms")
			w := rf.Run("a", args...)
			if w.Code != cli.ExitUnknown || !strings.Contains(w.Stderr.String(), "  reconcile: the owner could not tell: "+tc.why+"\n") {
				t.Fatalf("exit %d:\n%s", w.Code, w.Stderr.String())
			}
			// Unknown as the claim found it (its holder dead), attempt 1,
			// its holder's name kept: nothing of the reconcile written.
			after := rf.Show(key)
			if after["state"] != "unknown" || !strings.HasPrefix(after["reason"].(string), "holder died: ") || after["attempt"] != float64(1) || after["holder"] != before["holder"] {
				t.Fatalf("the unknown record changed: %v, was %v", after, before)
			}
			if tc.answer == "hang" {
				// The timed-out command was stopped, its group with it.
				pid, _ := strconv.Atoi(strings.TrimSpace(string(must(os.ReadFile(filepath.Join(rf.Dir, "rc.pid"))))))
				if pid == 0 || syscall.Kill(pid, 0) == nil {
					t.Fatalf("the reconcile command (pid %d) is still running", pid)
				}
			}
			// --recover retry: the step runs again as attempt 2.
			w = rf.Run("b", append(args[:len(args)-2:len(args)-2], "--recover", "retry", "--", rf.step)...)
			if w.Code != 0 || w.Stdout.String() != "done-2\n" || !strings.Contains(w.Stderr.String(), "could not tell: "+tc.why+"; --recover retry: running it as attempt 2\n") {
				t.Fatalf("retry: exit %d, stdout %q:\n%s", w.Code, w.Stdout.String(), w.Stderr.String())
			}
		})
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		return nil
	}
	return b
}

// TestReconcileKilledMidway: idemkey killed (-9) while its reconcile
// command runs. The orphaned command keeps the key's lock, so a second run
// finds the key busy instead of asking again at once; once it has gone,
// the next run asks again and settles.
func TestReconcileKilledMidway(t *testing.T) {
	t.Parallel()
	rf := newReconcileFleet(t, sqliteFleetStore(t), "deploy")
	key := rf.crashStep()
	rf.answer("wait")
	w := rf.Start("a", rf.withReconcile()...)
	clitest.WaitFor(t, 20*time.Second, func() bool { _, err := os.Stat(filepath.Join(rf.Dir, "asking")); return err == nil })
	pid, _ := strconv.Atoi(strings.TrimSpace(string(must(os.ReadFile(filepath.Join(rf.Dir, "rc.pid"))))))
	holder := stepHolderOf(t, pid)
	syscall.Kill(w.Cmd.Process.Pid, syscall.SIGKILL) // idemkey alone
	w.Wait(t, 20*time.Second)
	if rec := rf.Show(key); rec["state"] != "running" || !strings.HasPrefix(rec["reason"].(string), "reconciling: asking the owner") {
		t.Fatalf("while the orphan asks: %v", rec)
	}
	if b := rf.Run("b", rf.withReconcile()...); b.Code != cli.ExitBusy || len(rf.Lines("asked")) != 1 {
		t.Fatalf("with the orphaned reconcile alive: exit %d, asked %v:\n%s", b.Code, rf.Lines("asked"), b.Stderr.String())
	}
	rf.touch("release")
	rf.answer("0")
	// The orphan's holder keeps the key's lock until its tree is gone.
	clitest.WaitFor(t, 20*time.Second, func() bool { return !clitest.Alive(pid) && !clitest.Alive(holder) })
	c := rf.Run("c", rf.withReconcile()...)
	if c.Code != 0 || c.Stdout.String() != "pr #7\n" || len(rf.Lines("asked")) != 2 || len(rf.Lines("ran")) != 1 {
		t.Fatalf("after: exit %d, %q, asked %v, ran %v:\n%s", c.Code, c.Stdout.String(), rf.Lines("asked"), rf.Lines("ran"), c.Stderr.String())
	}
}

// TestReconcileCrashAfterAnswer: idemkey dies after the reconcile answered
// and before the answer was recorded; the next run asks again.
func TestReconcileCrashAfterAnswer(t *testing.T) {
	t.Parallel()
	eachReconcileStore(t, func(t *testing.T, s *clitest.Store) {
		rf := newReconcileFleet(t, s, "deploy")
		key := rf.crashStep()
		if s.Name != "sqlite" {
			time.Sleep(1500 * time.Millisecond) // the killed holder's 1s lease
		}
		rf.answer("0")
		rf.Env = append(rf.Env, "IDEMKEY_TEST_CRASH_AFTER_RECONCILE=1")
		if w := rf.Run("a", rf.withReconcile()...); w.Code != 128+int(syscall.SIGKILL) {
			t.Fatalf("the crash: exit %d:\n%s", w.Code, w.Stderr.String())
		}
		rf.Env = rf.Env[:len(rf.Env)-1]
		if s.Name != "sqlite" {
			time.Sleep(1500 * time.Millisecond) // the reconciling claim's lease
		}
		w := rf.Run("b", rf.withReconcile()...)
		if w.Code != 0 || w.Stdout.String() != "pr #7\n" || len(rf.Lines("asked")) != 2 || len(rf.Lines("ran")) != 1 {
			t.Fatalf("exit %d, %q, asked %v:\n%s", w.Code, w.Stdout.String(), rf.Lines("asked"), w.Stderr.String())
		}
		if rec := rf.Show(key); rec["state"] != "succeeded" {
			t.Fatalf("record %v", rec)
		}
	})
}

func eachReconcileStore(t *testing.T, f func(t *testing.T, s *clitest.Store)) {
	t.Run("sqlite", func(t *testing.T) { f(t, sqliteFleetStore(t)) })
	clitest.EachStore(t, f)
}

// TestReconcileTwoWorkersOneKey: two machines on a shared ledger find one
// unknown key at once; the key is reconciled once (the other waits for it
// and replays the answer), however long the reconcile takes past the
// lease.
func TestReconcileTwoWorkersOneKey(t *testing.T) {
	t.Parallel()
	clitest.EachStore(t, func(t *testing.T, s *clitest.Store) {
		rf := newReconcileFleet(t, s, "deploy")
		rf.crashStep()
		time.Sleep(1500 * time.Millisecond) // the killed holder's 1s lease
		rf.Script("slow.sh", `echo "asked" >> asked-slow
sleep 3
echo "pr #9"
`)
		args := rf.runArgs("--reconcile", filepath.Join(rf.Dir, "slow.sh"), "--wait", "60s")
		a, b := rf.Start("a", args...), rf.Start("b", args...)
		for _, w := range []*clitest.Worker{a, b} {
			if code := w.Wait(t, 60*time.Second); code != 0 || w.Stdout.String() != "pr #9\n" {
				t.Fatalf("exit %d, stdout %q:\n%s", code, w.Stdout.String(), w.Stderr.String())
			}
		}
		if n := len(rf.Lines("asked-slow")); n != 1 || len(rf.Lines("ran")) != 1 {
			t.Fatalf("reconciled %d times, ran %v", n, rf.Lines("ran"))
		}
	})
}

// TestLedgerReconcileAll: an operator settles every stuck step at once;
// each tool's owner answers for its own (0, 1, 2), --dry-run writes
// nothing, and a step whose holder is alive is left alone.
func TestLedgerReconcileAll(t *testing.T) {
	t.Parallel()
	rf := newReconcileFleet(t, sqliteFleetStore(t), "")
	keys := map[string]string{}
	for _, tool := range []string{"a", "b", "c"} {
		rf.args[5] = tool // --tool
		keys[tool] = rf.crashStep()
	}
	rf.Script("by-tool.sh", `cat >/dev/null
case "$IDEMKEY_TOOL" in a) echo "out-a"; exit 0;; b) exit 1;; esac
echo "cannot tell for $IDEMKEY_TOOL" >&2; exit 2
`)
	// A live step of its own: left alone.
	rf.touch("hang")
	live := rf.Start("live", "run", "--task", "t-live", "--tool", "d", "--", rf.step)
	clitest.WaitFor(t, 20*time.Second, func() bool { return len(rf.Lines("ran")) == 4 })
	byTool := filepath.Join(rf.Dir, "by-tool.sh")
	dry := rf.Run("op", "ledger", "reconcile", "--all", "--reconcile", byTool, "--dry-run")
	if dry.Code != 1 || strings.Count(dry.Stdout.String(), "(dry run)\n") != 3 || !strings.Contains(dry.Stdout.String(), keys["a"]+": the owner says the effect happened: would become succeeded (dry run)\n") {
		t.Fatalf("dry run: exit %d:\n%s%s", dry.Code, dry.Stdout.String(), dry.Stderr.String())
	}
	for _, k := range keys {
		// ls and show give the effective state (unknown: the holder is
		// dead); what the store holds must still be the running claim.
		if rec := rf.Show(k); rec["recorded_state"] != "running" || rec["ended_at"] != nil || rec["exit_code"] != nil {
			t.Fatalf("--dry-run wrote %v", rec)
		}
	}
	w := rf.Run("op", "ledger", "reconcile", "--all", "--reconcile", byTool)
	want := []string{
		keys["a"] + ": the owner says the effect happened: succeeded\n",
		keys["b"] + ": the owner says the effect did not happen: failed\n",
		keys["c"] + ": the owner could not tell: the reconcile command exited 2: cannot tell for c: still unknown\n",
	}
	for _, l := range want {
		if !strings.Contains(w.Stdout.String(), l) {
			t.Fatalf("exit %d, no line %q in:\n%s%s", w.Code, l, w.Stdout.String(), w.Stderr.String())
		}
	}
	if w.Code != 1 || strings.Count(w.Stdout.String(), "\n") != 3 {
		t.Fatalf("exit %d (want 1: c is still unknown), lines:\n%s", w.Code, w.Stdout.String())
	}
	for tool, state := range map[string]string{"a": "succeeded", "b": "failed", "c": "unknown"} {
		if rec := rf.Show(keys[tool]); rec["state"] != state {
			t.Fatalf("%s: %v, want %s", tool, rec, state)
		}
	}
	// a replays the reconcile's answer; b runs as attempt 2.
	if r := rf.Run("a2", "run", "--task", "t-rec", "--tool", "a", "--lease", "1s", "--", rf.step); r.Code != 0 || r.Stdout.String() != "out-a\n" {
		t.Fatalf("a after: exit %d, %q", r.Code, r.Stdout.String())
	}
	rf.rm("hang")
	if code := live.Wait(t, 20*time.Second); code != 0 {
		t.Fatalf("the live step: exit %d:\n%s", code, live.Stderr.String())
	}
	// Named keys: one settled, one that has no record (exit 1).
	n := rf.Run("op", "ledger", "reconcile", keys["c"], "nosuchkey", "--reconcile", rf.Script("yes.sh", "cat >/dev/null; echo ok\n"), "--json")
	if n.Code != 1 || !strings.Contains(n.Stdout.String(), `{"key":"`+keys["c"]+`","before":"unknown","after":"succeeded","verdict":"happened","note":"the owner says the effect happened","dry_run":false}`) ||
		!strings.Contains(n.Stdout.String(), `{"key":"nosuchkey","before":"","after":"","note":"no record","dry_run":false}`) {
		t.Fatalf("named: exit %d:\n%s%s", n.Code, n.Stdout.String(), n.Stderr.String())
	}
}

// TestPostReconcile: post --ledger with --reconcile asks the owner about a
// request whose outcome is unknown (its invocation killed with the request
// in flight) and, when it took effect, replays the reconcile's answer
// without sending it again.
func TestPostReconcile(t *testing.T) {
	t.Parallel()
	o := clitest.NewPlanOwner(t, 0) // the first request stalls
	rf := newReconcileFleet(t, sqliteFleetStore(t), "pay")
	args := []string{"post", o.URL + "/pay", "--task", "t-post", "--tool", "pay", "-d", `{"amount":5}`}
	w := rf.Start("a", args...)
	clitest.AwaitArrival(t, o, w)
	syscall.Kill(-w.Cmd.Process.Pid, syscall.SIGKILL)
	w.Wait(t, 20*time.Second)
	rf.answer("0")
	b := rf.Run("b", append(args, "--reconcile", rf.rc)...)
	if b.Code != 0 || b.Stdout.String() != "pr #7\n" || o.Total() != 1 {
		t.Fatalf("exit %d, stdout %q, %d requests:\n%s", b.Code, b.Stdout.String(), o.Total(), b.Stderr.String())
	}
	if !strings.Contains(b.Stderr.String(), "the owner says the request took effect: found it by its key; recorded as succeeded, not sent again") {
		t.Fatalf("not said:\n%s", b.Stderr.String())
	}
	if got, _ := os.ReadFile(filepath.Join(rf.Dir, "stdin-seen")); string(got) != `{"amount":5}` {
		t.Fatalf("the reconcile's standard input: %q", got)
	}
}

// stepHolderOf returns the step holder above the process pid: the
// process whose exit releases the key's lock once pid's tree is gone.
func stepHolderOf(t *testing.T, pid int) int {
	t.Helper()
	for p := pid; p > 1; {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		if err != nil {
			t.Fatal(err)
		}
		if args := strings.Split(string(cmdline), "\x00"); len(args) > 1 && strings.HasPrefix(args[1], "__idemkey-step-holder") {
			return p
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if p, err = strconv.Atoi(f[1]); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("no step holder above pid %d", pid)
	return 0
}
