package run_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/cmd/internal/step"
	"github.com/idemkey/idemkey/derive/ledger/sqlite"
)

// These tests run idemkey as real processes (the test binary, which
// TestMain turns into idemkey when it is called by that name) against a
// real ledger file, with commands that reach a real test owner on
// 127.0.0.1.

func TestRunTwiceReplaysByteForByte(t *testing.T) {
	t.Parallel()
	r := clitest.NewRig(t)
	script := `printf 'out \000\377 line\n'; printf 'err line\n' >&2; echo ran >> ` + r.Path("mark") + `; echo "$IDEMPOTENCY_ATTEMPT $IDEMPOTENCY_KEY"; exit 0`
	args := []string{"run", "--task", "t1", "--tool", "step", "--", "sh", "-c", script}
	first := r.Idemkey(args...)
	if first.Code != 0 || r.Lines("mark") != 1 {
		t.Fatalf("first run: exit %d, %d executions, stderr %q", first.Code, r.Lines("mark"), first.Stderr)
	}
	key := r.CmdKey("t1", "step", "sh", "-c", script)
	if !bytes.Contains(first.Stdout, []byte("1 "+key+"\n")) {
		t.Fatalf("the command did not see IDEMPOTENCY_ATTEMPT=1 and IDEMPOTENCY_KEY=%s: %q", key, first.Stdout)
	}
	if string(first.Stderr) != "err line\n" {
		t.Fatalf("run added to the command's stderr: %q", first.Stderr)
	}
	second := r.Idemkey(append([]string{"run", "-q"}, args[1:]...)...)
	if r.Lines("mark") != 1 {
		t.Fatalf("second run executed the command again")
	}
	if second.Code != first.Code || !bytes.Equal(second.Stdout, first.Stdout) || !bytes.Equal(second.Stderr, first.Stderr) {
		t.Fatalf("replay differs: exit %d/%d stdout %q/%q stderr %q/%q", second.Code, first.Code, second.Stdout, first.Stdout, second.Stderr, first.Stderr)
	}
	third := r.Idemkey(args...)
	if !bytes.Equal(third.Stdout, first.Stdout) || !bytes.HasPrefix(third.Stderr, []byte("idemkey: replayed "+key+": attempt 1, succeeded at ")) ||
		!bytes.HasSuffix(third.Stderr, []byte("err line\n")) {
		t.Fatalf("replay without -q: stdout %q stderr %q", third.Stdout, third.Stderr)
	}

	// A failure's exit code is replayed too, with --replay-failed.
	fail := []string{"run", "-q", "--task", "t1", "--tool", "fail", "--replay-failed", "--", "sh", "-c", "echo x >> " + r.Path("fmark") + "; echo no; exit 7"}
	a, b := r.Idemkey(fail...), r.Idemkey(fail...)
	if a.Code != 7 || b.Code != 7 || !bytes.Equal(a.Stdout, b.Stdout) || r.Lines("fmark") != 1 {
		t.Fatalf("failed replay: exits %d %d, stdout %q %q, %d executions", a.Code, b.Code, a.Stdout, b.Stdout, r.Lines("fmark"))
	}
	// Without it, a failure runs again as the next attempt.
	fail = append(fail[:6], fail[7:]...)
	if c := r.Idemkey(fail...); c.Code != 7 || r.Lines("fmark") != 2 {
		t.Fatalf("failed step not run again: exit %d, %d executions", c.Code, r.Lines("fmark"))
	}
}

func TestRunOtherCommandLineRefused(t *testing.T) {
	t.Parallel()
	r := clitest.NewRig(t)
	if err := os.WriteFile(r.Path("args.json"), []byte(`{"env":"prod"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ok := r.Idemkey("run", "--task", "t1", "--tool", "deploy", "--args", "args.json", "--", "sh", "-c", "echo a >> mark", "deploy", "prod")
	if ok.Code != 0 || r.Lines("mark") != 1 {
		t.Fatalf("first run: %d %s", ok.Code, ok.Stderr)
	}
	res := r.Idemkey("run", "--task", "t1", "--tool", "deploy", "--args", "args.json", "--", "sh", "-c", "echo a >> mark", "deploy", "staging")
	if res.Code != 125 || r.Lines("mark") != 1 || len(res.Stdout) != 0 {
		t.Fatalf("another command line: exit %d, %d executions, stdout %q", res.Code, r.Lines("mark"), res.Stdout)
	}
	if !strings.Contains(string(res.Stderr), `the command line differs at /4: recorded "prod", now "staging"`) {
		t.Fatalf("the message does not show what differs: %s", res.Stderr)
	}
}

func TestRunRaceOneKey(t *testing.T) {
	t.Parallel()
	for _, wait := range []bool{false, true} {
		t.Run(fmt.Sprintf("wait=%v", wait), func(t *testing.T) {
			r := clitest.NewRig(t)
			args := []string{"run", "--task", "t1", "--tool", "race", "-q"}
			if wait {
				args = append(args, "--wait", "60s")
			}
			args = append(args, "--", "sh", "-c", "echo ran >> "+r.Path("mark")+"; sleep 1; echo the result")
			cmds := make([]*exec.Cmd, 32)
			for i := range cmds {
				cmds[i] = r.Cmd(args...)
			}
			busy, replayed := 0, 0
			for i, res := range r.Race(cmds) {
				switch {
				case res.Code == 0 && string(res.Stdout) == "the result\n":
					replayed++
				case res.Code == 75 && !wait && len(res.Stdout) == 0 && strings.Contains(string(res.Stderr), "is in progress elsewhere"):
					busy++
				default:
					t.Errorf("process %d: exit %d, stdout %q, stderr %q", i, res.Code, res.Stdout, res.Stderr)
				}
			}
			if n := r.Lines("mark"); n != 1 {
				t.Fatalf("%d executions, want exactly 1", n)
			}
			if wait && replayed != 32 {
				t.Fatalf("with --wait, %d of 32 got the result", replayed)
			}
			if !wait && busy == 0 {
				t.Fatalf("no process saw the key busy (%d replayed)", replayed)
			}
		})
	}
}

func TestRunDistinctKeysConcurrently(t *testing.T) {
	r := clitest.NewRig(t)
	cmds := make([]*exec.Cmd, 16)
	for i := range cmds {
		cmds[i] = r.Cmd("run", "--task", "t1", "--tool", "many", "--", "sh", "-c", "echo ran >> "+r.Path("mark"), strconv.Itoa(i))
	}
	for i, res := range r.Race(cmds) {
		if res.Code != 0 || len(res.Stderr) != 0 {
			t.Errorf("process %d: exit %d, stderr %q", i, res.Code, res.Stderr)
		}
	}
	if n := r.Lines("mark"); n != 16 {
		t.Fatalf("%d executions, want 16", n)
	}
	ls := r.Idemkey("ledger", "ls", "--json", "--state", "succeeded")
	var recs []clitest.Shown
	if err := json.Unmarshal(ls.Stdout, &recs); err != nil || len(recs) != 16 {
		t.Fatalf("ledger ls: %d records, %v: %s", len(recs), err, ls.Stdout)
	}
}

func TestRunKilledMidStepIsUnknown(t *testing.T) {
	t.Parallel()
	r := clitest.NewRig(t)
	o := clitest.NewEffectOwner(t, true)
	holder, args := r.StartHolder(o)
	// idemkey and its command die: the group is killed.
	_ = syscall.Kill(-holder.Process.Pid, syscall.SIGKILL)
	_ = holder.Wait()
	os.WriteFile(r.Path("release"), nil, 0o644)

	res := r.Until(75, args...)
	if res.Code != 76 {
		t.Fatalf("after the crash: exit %d, want 76: %s", res.Code, res.Stderr)
	}
	if r.Lines("mark") != 1 {
		t.Fatalf("the command ran again under --recover fail")
	}
	for _, want := range []string{"outcome unknown", "attempt 1 ", "idemkey ledger resolve", "holder died"} {
		if !strings.Contains(string(res.Stderr), want) {
			t.Errorf("the report lacks %q: %s", want, res.Stderr)
		}
	}
	key := r.CmdKey("t1", "pay", args[len(args)-3:]...)
	if s := r.Show(key); s.State != "unknown" || s.Attempt != 1 {
		t.Fatalf("record: %+v", s)
	}
	// Still unknown on the next try: nothing settles it but a person or
	// the retry policy.
	if again := r.Idemkey(args...); again.Code != 76 {
		t.Fatalf("second try: exit %d", again.Code)
	}
	// --recover retry: attempt 2 with the same key; the owner dedupes.
	retry := append([]string{"run", "--recover", "retry"}, args[1:]...)
	res = r.Idemkey(retry...)
	if res.Code != 0 || string(res.Stdout) != "done\n" {
		t.Fatalf("retry: exit %d, stdout %q, stderr %s", res.Code, res.Stdout, res.Stderr)
	}
	if b, _ := os.ReadFile(r.Path("mark")); string(b) != "attempt 1\nattempt 2\n" {
		t.Fatalf("attempts: %q", b)
	}
	if req, eff := o.Counts(key); req != 2 || eff != 1 {
		t.Fatalf("owner: %d requests, %d effects for the key, want 2 and 1", req, eff)
	}
	if s := r.Show(key); s.State != "succeeded" || s.Attempt != 2 || s.ExitCode == nil || *s.ExitCode != 0 {
		t.Fatalf("record after retry: %+v", s)
	}
}

func TestRunOrphanKeepsKeyBusy(t *testing.T) {
	t.Parallel()
	r := clitest.NewRig(t)
	o := clitest.NewEffectOwner(t, true)
	holder, args := r.StartHolder(o)
	// Only idemkey dies; its command keeps running with the lock.
	_ = holder.Process.Signal(syscall.SIGKILL)
	_ = holder.Wait()
	for range 3 {
		if res := r.Idemkey(args...); res.Code != 75 {
			t.Fatalf("while the orphan runs: exit %d, want 75: %s", res.Code, res.Stderr)
		}
	}
	os.WriteFile(r.Path("release"), nil, 0o644)
	res := r.Until(75, args...)
	if res.Code != 76 || r.Lines("mark") != 1 {
		t.Fatalf("after the orphan exited: exit %d, %d executions", res.Code, r.Lines("mark"))
	}
}

func TestRunStoppedHolderNotTakenOver(t *testing.T) {
	t.Parallel()
	r := clitest.NewRig(t)
	o := clitest.NewEffectOwner(t, false)
	holder, args := r.StartHolder(o, "--lease", "300ms")
	pgid := holder.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGSTOP)
	// Far longer than the lease and the busy timeout: still busy, under
	// either policy.
	deadline := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(deadline) {
		for _, p := range []string{"fail", "retry"} {
			res := r.Idemkey(append([]string{"run", "--recover", p, "--lease", "300ms"}, args[1:]...)...)
			if res.Code != 75 {
				t.Fatalf("stopped holder taken over (--recover %s): exit %d: %s", p, res.Code, res.Stderr)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(-pgid, syscall.SIGCONT)
	os.WriteFile(r.Path("release"), nil, 0o644)
	if err := holder.Wait(); err != nil {
		t.Fatalf("holder: %v", err)
	}
	res := r.Idemkey(args...)
	if res.Code != 0 || string(res.Stdout) != "done\n" || r.Lines("mark") != 1 {
		t.Fatalf("after the holder finished: exit %d, stdout %q, %d executions", res.Code, res.Stdout, r.Lines("mark"))
	}
	key := r.CmdKey("t1", "pay", args[len(args)-3:]...)
	if req, _ := o.Counts(key); req != 1 {
		t.Fatalf("owner saw %d requests", req)
	}
}

func TestRunCrashBetweenExitAndRecord(t *testing.T) {
	t.Parallel()
	r := clitest.NewRig(t)
	o := clitest.NewEffectOwner(t, true)
	script := `curl -sf -H "Idempotency-Key: $IDEMPOTENCY_KEY" ` + o.URL + `/pay; echo "attempt $IDEMPOTENCY_ATTEMPT" >> ` + r.Path("mark")
	args := []string{"run", "--task", "t1", "--tool", "pay", "--", "sh", "-c", script}
	c := r.Cmd(args...)
	c.Env = append(c.Env, "IDEMKEY_TEST_CRASH_AFTER_EXIT=1")
	res := r.Run(c)
	if ws, ok := c.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || r.Lines("mark") != 1 {
		t.Fatalf("the hook did not crash idemkey after the command: exit %d, %d executions", res.Code, r.Lines("mark"))
	}
	key := r.CmdKey("t1", "pay", "sh", "-c", script)
	if s := r.Show(key); s.Recorded != "running" {
		t.Fatalf("record after the crash: %+v, want running (nothing recorded)", s)
	}
	res = r.Idemkey(args...)
	if res.Code != 76 || r.Lines("mark") != 1 {
		t.Fatalf("after the crash: exit %d, %d executions: %s", res.Code, r.Lines("mark"), res.Stderr)
	}
	if s := r.Show(key); s.State != "unknown" || s.ExitCode != nil {
		t.Fatalf("record: %+v, want unknown with no exit code", s)
	}
	res = r.Idemkey(append([]string{"run", "--recover", "retry"}, args[1:]...)...)
	if res.Code != 0 || r.Lines("mark") != 2 {
		t.Fatalf("retry: exit %d, %d executions", res.Code, r.Lines("mark"))
	}
	if req, eff := o.Counts(key); req != 2 || eff != 1 {
		t.Fatalf("owner: %d requests, %d effects, want 2 and 1", req, eff)
	}
}

func TestRunLedgerDeletedRunsAgain(t *testing.T) {
	t.Parallel()
	r := clitest.NewRig(t)
	o := clitest.NewEffectOwner(t, true)
	script := `curl -sf -H "Idempotency-Key: $IDEMPOTENCY_KEY" ` + o.URL + `/pay; echo ran >> ` + r.Path("mark")
	args := []string{"run", "-q", "--task", "t1", "--tool", "pay", "--", "sh", "-c", script}
	first := r.Idemkey(args...)
	if first.Code != 0 || string(first.Stdout) != "effect 1\n" {
		t.Fatalf("first: %d %q %s", first.Code, first.Stdout, first.Stderr)
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(r.Ledger + suffix)
	}
	second := r.Idemkey(args...)
	if second.Code != 0 || r.Lines("mark") != 2 {
		t.Fatalf("after the ledger was deleted: exit %d, %d executions", second.Code, r.Lines("mark"))
	}
	key := r.CmdKey("t1", "pay", "sh", "-c", script)
	if req, eff := o.Counts(key); req != 2 || eff != 1 {
		t.Fatalf("owner: %d requests, %d effects, want 2 and 1 (the owner's dedupe is what protects the effect)", req, eff)
	}
	if s := r.Show(key); s.Attempt != 1 || s.State != "succeeded" {
		t.Fatalf("record in the new ledger: %+v", s)
	}
}

func TestRunSignalDeathRecordedUnknown(t *testing.T) {
	r := clitest.NewRig(t)
	args := []string{"run", "--task", "t1", "--tool", "sig", "--", "sh", "-c", "echo ran >> " + r.Path("mark") + "; kill -TERM $$"}
	res := r.Idemkey(args...)
	if res.Code != 128+15 {
		t.Fatalf("exit %d, want 143", res.Code)
	}
	res = r.Idemkey(args...)
	if res.Code != 76 || r.Lines("mark") != 1 || !strings.Contains(string(res.Stderr), "killed by signal 15") {
		t.Fatalf("after a signal death: exit %d, %d executions: %s", res.Code, r.Lines("mark"), res.Stderr)
	}
}

func TestRunForwardsSignals(t *testing.T) {
	r := clitest.NewRig(t)
	c := r.Cmd("run", "--task", "t1", "--tool", "fwd", "--", "sh", "-c",
		`trap 'echo got TERM; exit 9' TERM; echo $$ > `+r.Path("pid")+`; touch `+r.Path("mark")+`; i=0; while [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done`)
	var out bytes.Buffer
	c.Stdout = &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	r.WaitFile("mark")
	_ = c.Process.Signal(syscall.SIGTERM)
	_ = c.Wait()
	if code := c.ProcessState.ExitCode(); code != 9 || out.String() != "got TERM\n" {
		t.Fatalf("SIGTERM to idemkey: exit %d, stdout %q, want the command's 9 and its trap's output", code, out.String())
	}
}

func TestRunOutputCapAndTruncatedReplay(t *testing.T) {
	t.Parallel()
	r := clitest.NewRig(t)
	script := `i=0; while [ $i -lt 100 ]; do printf '0123456789'; i=$((i+1)); done; exit 4`
	args := []string{"run", "--task", "t1", "--tool", "big", "--max-output", "64", "--replay-failed", "--", "sh", "-c", script}
	first := r.Idemkey(args...)
	if first.Code != 4 || len(first.Stdout) != 1000 {
		t.Fatalf("live output cut by the cap: exit %d, %d bytes", first.Code, len(first.Stdout))
	}
	second := r.Idemkey(args...)
	if second.Code != 4 || !bytes.Equal(second.Stdout, first.Stdout[:64]) {
		t.Fatalf("truncated replay: exit %d, stdout %q", second.Code, second.Stdout)
	}
	if !strings.Contains(string(second.Stderr), "the recorded stdout was truncated: replayed 64 of its 1000 bytes") {
		t.Fatalf("truncation not said: %s", second.Stderr)
	}
	key := r.CmdKey("t1", "big", "sh", "-c", script)
	s := r.Show(key)
	if !s.Stdout.Truncated || s.Stdout.Length != 1000 || s.Stdout.SHA256 != sha256hex(first.Stdout) {
		t.Fatalf("record: %+v, want the full length and sha256", s.Stdout)
	}
	raw := r.Idemkey("ledger", "show", key, "--stdout")
	if !bytes.Equal(raw.Stdout, first.Stdout[:64]) {
		t.Fatalf("ledger show --stdout: %q", raw.Stdout)
	}
}

func TestRunRetention(t *testing.T) {
	t.Parallel()
	r := clitest.NewRig(t)
	args := []string{"--task", "t1", "--tool", "ret", "--", "sh", "-c", "echo ran >> " + r.Path("mark")}
	r.Idemkey(append([]string{"run"}, args...)...)
	r.Idemkey(append([]string{"run"}, args...)...)
	if r.Lines("mark") != 1 {
		t.Fatal("replay within retention ran the command")
	}
	time.Sleep(20 * time.Millisecond)
	if res := r.Idemkey(append([]string{"run", "--retain", "10ms"}, args...)...); res.Code != 0 || r.Lines("mark") != 2 {
		t.Fatalf("an expired record was not ignored: exit %d, %d executions", res.Code, r.Lines("mark"))
	}
	time.Sleep(20 * time.Millisecond)
	gc := r.Idemkey("ledger", "gc", "--older-than", "10ms")
	if gc.Code != 0 || !strings.Contains(string(gc.Stderr), "removed 1 record older than 10ms") {
		t.Fatalf("gc: exit %d: %s", gc.Code, gc.Stderr)
	}
	key := r.CmdKey("t1", "ret", "sh", "-c", "echo ran >> "+r.Path("mark"))
	if res := r.Idemkey("ledger", "show", key); res.Code != 1 {
		t.Fatalf("record kept by gc: %s", res.Stdout)
	}
}

func TestRunLedgerModes(t *testing.T) {
	t.Parallel()
	r := clitest.NewRig(t)
	r.Idemkey("run", "--task", "t1", "--tool", "m", "--", "true")
	for p, want := range map[string]os.FileMode{filepath.Dir(r.Ledger): 0o700 | os.ModeDir, r.Ledger: 0o600} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode() != want {
			t.Errorf("%s: %v %v, want %v", p, fi.Mode(), err, want)
		}
	}
	// The default place: $XDG_STATE_HOME/idemkey/ledger.db.
	c := r.Cmd("run", "--task", "t1", "--tool", "m", "--", "true")
	c.Env = append(step.WithoutEnv(c.Env, "IDEMKEY_LEDGER"), "XDG_STATE_HOME="+r.Path("xdg"))
	if res := r.Run(c); res.Code != 0 {
		t.Fatal(string(res.Stderr))
	}
	if fi, err := os.Stat(r.Path("xdg/idemkey/ledger.db")); err != nil || fi.Mode() != 0o600 {
		t.Fatalf("default ledger: %v %v", fi, err)
	}
}

func TestRunNetworkFSRefused(t *testing.T) {
	t.Parallel()
	r := clitest.NewRig(t)
	c := r.Cmd("run", "--task", "t1", "--tool", "n", "--", "sh", "-c", "echo ran >> "+r.Path("mark"))
	c.Env = append(c.Env, "IDEMKEY_TEST_FSTYPE=0x6969")
	res := r.Run(c)
	if res.Code != 125 || r.Lines("mark") != 0 || !strings.Contains(string(res.Stderr), "is on a NFS file system") {
		t.Fatalf("NFS: exit %d, %d executions: %s", res.Code, r.Lines("mark"), res.Stderr)
	}
	if _, err := os.Stat(r.Ledger); !os.IsNotExist(err) {
		t.Fatal("a ledger file was created on a refused file system")
	}
}

func TestRunLedgerSchemaVersions(t *testing.T) {
	t.Parallel()
	r := clitest.NewRig(t)
	ctx := context.Background()
	// A ledger as the version-1 schema wrote it, with a succeeded step:
	// opened, migrated, and the step replayed.
	old, err := sqlite.Open(ctx, r.Ledger, sqlite.Options{Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	old.Close()
	args := []string{"run", "-q", "--task", "t1", "--tool", "v", "--", "sh", "-c", "echo ran >> " + r.Path("mark")}
	if res := r.Idemkey(args...); res.Code != 0 {
		t.Fatal(string(res.Stderr))
	}
	db, err := sql.Open("sqlite", r.Ledger)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int
	if err := db.QueryRow(`SELECT version FROM idemkey_schema`).Scan(&v); err != nil || v != sqlite.SchemaVersion {
		t.Fatalf("schema after use: %d %v", v, err)
	}
	// Written by a newer idemkey: refused, not misread.
	if _, err := db.Exec(`UPDATE idemkey_schema SET version = 99`); err != nil {
		t.Fatal(err)
	}
	res := r.Idemkey(args...)
	if res.Code != 125 || r.Lines("mark") != 1 || !strings.Contains(string(res.Stderr), "schema version 99") {
		t.Fatalf("newer schema: exit %d: %s", res.Code, res.Stderr)
	}
}

func sha256hex(b []byte) string {
	h := step.NewRecorder(0)
	h.Write(b)
	return h.Output().SHA256
}

func TestRunBrokenStdoutReachesTheCommand(t *testing.T) {
	t.Parallel()
	// "idemkey run … | head -1": the command sees the broken pipe, as it
	// would without idemkey, and idemkey lives to record how it ended.
	r := clitest.NewRig(t)
	c := r.Cmd("run", "--task", "t1", "--tool", "pipe", "--", "sh", "-c", "while :; do echo y || exit 3; done")
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2)
	if _, err := out.Read(buf); err != nil || string(buf) != "y\n" {
		t.Fatalf("first bytes: %q %v", buf, err)
	}
	out.Close()
	_ = c.Wait()
	if code := c.ProcessState.ExitCode(); code != 3 && code != 128+13 {
		t.Fatalf("exit %d, want the command's own 3 (echo failed) or 141 (SIGPIPE)", code)
	}
	key := r.CmdKey("t1", "pipe", "sh", "-c", "while :; do echo y || exit 3; done")
	if s := r.Show(key); s.Recorded == "running" || s.Stdout.Length < 2 {
		t.Fatalf("record: %+v, want the outcome recorded", s)
	}
}

func TestRunLeaseLost(t *testing.T) {
	t.Parallel()
	for _, policy := range []string{"kill", "continue"} {
		t.Run(policy, func(t *testing.T) {
			r := clitest.NewRig(t)
			// The command starts a child of its own and waits for it.
			script := `sleep 60 & echo $! > ` + r.Path("child") + `; touch ` + r.Path("mark") +
				`; while [ ! -e ` + r.Path("release") + ` ]; do sleep 0.02; done; kill $!; echo finished`
			c := r.Cmd("run", "--task", "t1", "--tool", "lease", "--lease", "150ms", "--on-lease-lost", policy, "--", "sh", "-c", script)
			var out, errb bytes.Buffer
			c.Stdout, c.Stderr = &out, &errb
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			r.WaitFile("mark")
			// A newer attempt takes the key over (as a takeover on a
			// shared store would): the holder's renewal finds another
			// attempt.
			db, err := sql.Open("sqlite", r.Ledger)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`UPDATE records SET attempt = 2, holder = 'elsewhere'`); err != nil {
				t.Fatal(err)
			}
			if policy == "continue" {
				r.WaitFile("child")
				time.Sleep(300 * time.Millisecond) // two renewals at least; not an assertion on time
				os.WriteFile(r.Path("release"), nil, 0o644)
			}
			_ = c.Wait()
			code := c.ProcessState.ExitCode()
			if s := errb.String(); !strings.Contains(s, "idemkey: lease lost: a newer attempt holds the key: attempt 1 of ") || !strings.Contains(s, "(attempt 2 holds it now: running, ") {
				t.Fatalf("no lease-lost report: %q", errb.String())
			}
			var attempt int
			var holder string
			if err := db.QueryRow(`SELECT attempt, holder FROM records`).Scan(&attempt, &holder); err != nil || attempt != 2 || holder != "elsewhere" {
				t.Fatalf("the newer attempt's record was overwritten: %d %q %v", attempt, holder, err)
			}
			if policy == "continue" {
				if code != 0 || out.String() != "finished\n" {
					t.Fatalf("continue: exit %d, stdout %q", code, out.String())
				}
				return
			}
			if code != 76 || strings.Contains(out.String(), "finished") {
				t.Fatalf("kill: exit %d, stdout %q", code, out.String())
			}
			b, _ := os.ReadFile(r.Path("child"))
			child, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			deadline := time.Now().Add(10 * time.Second)
			for child > 0 && syscall.Kill(child, 0) == nil {
				if s, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child)); bytes.Contains(s, []byte(") Z ")) {
					break // a zombie: dead, waiting for init to reap it
				}
				if time.Now().After(deadline) {
					t.Fatalf("the command's child %d survived the lost lease", child)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
