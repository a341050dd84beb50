package run_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
)

// TestStopSignalStopsTheStepsTree: SIGTERM to idemkey alone, while its
// step waits for a background child of its own. The whole tree is
// stopped before the outcome is recorded: when idemkey has exited (143,
// unknown), the child is gone and never makes its effect, so nothing
// holds the key and resolve settles it.
func TestStopSignalStopsTheStepsTree(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) { stopSignalStopsTheTree(t, sig) })
	}
}

func stopSignalStopsTheTree(t *testing.T, sig syscall.Signal) {
	r := clitest.NewProcs(t)
	step := `( sh -c 'echo $$ > bg.pid; while [ ! -e go ]; do sleep 0.02; done; echo EFFECT >> effects' ) & wait`
	p := r.Start("run", "--task", "t", "--tool", "tree", "--", "sh", "-c", step)
	waitFor(t, "the background child", func() bool { return alive(r.PidIn("bg.pid")) })
	bg := r.PidIn("bg.pid")
	if err := p.Cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	p.Wait(t)
	if p.Code != 128+int(sig) {
		t.Fatalf("exit %d, want %d:\n%s", p.Code, 128+int(sig), p.Stderr.String())
	}
	if alive(bg) {
		t.Fatalf("the step's background child (pid %d) outlived idemkey", bg)
	}
	r.Touch("go")
	key := r.OnlyKey()
	if rec := r.Show(key); rec["state"] != "unknown" || !strings.Contains(rec["reason"].(string), fmt.Sprintf("signal %d", int(sig))) {
		t.Fatalf("record %v", rec)
	}
	// Said, with how to settle it.
	for _, want := range []string{
		fmt.Sprintf("idemkey: outcome unknown: attempt 1 of %s recorded as unknown (idemkey got signal %d (%s) and stopped the command: killed by signal", key, int(sig), sig),
		"hint: check whether the effect happened, then settle it: idemkey ledger resolve " + key + " --as succeeded or --as failed\n",
	} {
		if !strings.Contains(p.Stderr.String(), want) {
			t.Fatalf("not said: %q\n%s", want, p.Stderr.String())
		}
	}
	if q := r.Run("ledger", "resolve", key, "--as", "failed"); q.Code != 0 {
		t.Fatalf("resolve: exit %d: %s", q.Code, q.Stderr.String())
	}
	if r.Exists("effects") {
		t.Fatal("the effect happened after idemkey recorded the step unknown")
	}
}

// TestStepThatShedsItsLockAndEnvironment: a step that closes the lock's
// descriptor and clears its environment (as env -i, sudo or su - do),
// with idemkey killed (-9) while it runs. The step is found by its
// holder, which it cannot shed: the next run, --recover retry included,
// finds the key in progress (75) and starts no second copy; ledger ls
// says running; once the step has ended, the outcome is unknown (76).
func TestStepThatShedsItsLockAndEnvironment(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	r := clitest.NewProcs(t)
	step := []string{"bash", "-c", `exec 100>&-; exec env -i sh -c 'echo $$ >> step.pid; while [ ! -e go ]; do sleep 0.02; done; echo EFFECT >> effects'`}
	args := append([]string{"run", "--task", "t", "--tool", "shed", "--"}, step...)
	p := r.Start(args...)
	waitFor(t, "the step", func() bool { return alive(r.PidIn("step.pid")) })
	if err := p.Cmd.Process.Kill(); err != nil { // idemkey alone
		t.Fatal(err)
	}
	p.Wait(t)
	retry := append([]string{"run", "--task", "t", "--tool", "shed", "--recover", "retry", "--"}, step...)
	for _, a := range [][]string{args, retry} {
		q := r.Run(a...)
		if q.Code != 75 || !strings.Contains(q.Stderr.String(), ", which has died; its step still runs (it holds the key's lock)") {
			t.Fatalf("%v: exit %d, want 75 (in progress):\n%s", a[4:6], q.Code, q.Stderr.String())
		}
	}
	if b := r.PidIn("step.pid"); !alive(b) {
		t.Fatal("the step ended early")
	}
	key := r.OnlyKey()
	if rec := r.Show(key); rec["state"] != "running" {
		t.Fatalf("ledger show while the step runs: %v", rec)
	}
	if q := r.Run("ledger", "resolve", key, "--as", "failed"); q.Code == 0 {
		t.Fatalf("resolve accepted while the step runs:\n%s", q.Stderr.String())
	}
	pid := r.PidIn("step.pid")
	r.Touch("go")
	waitFor(t, "the step's end", func() bool { return !alive(pid) })
	waitFor(t, "the record to read unknown", func() bool { return r.Show(key)["state"] == "unknown" })
	q := r.Run(args...)
	if q.Code != 76 {
		t.Fatalf("after the step: exit %d, want 76:\n%s", q.Code, q.Stderr.String())
	}
	if b, _ := os.ReadFile(r.File("effects")); string(b) != "EFFECT\n" {
		t.Fatalf("effects %q: want one", b)
	}
}
