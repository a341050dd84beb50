package cmd

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/ledgerflags"
	"github.com/idemkey/idemkey/derive/ledger/sqlite"
)

// These tests run idemkey as real processes (the test binary, which
// TestMain turns into idemkey when it is called by that name) against a
// real ledger file, with commands that reach a real test owner on
// 127.0.0.1.

// effectOwner owns a side effect and counts it per Idempotency-Key. With
// dedupe, a key's effect happens once and later requests with the key get
// the first answer; without, every request is an effect.
type effectOwner struct {
	*httptest.Server
	dedupe bool

	mu       sync.Mutex
	requests map[string]int // key → requests
	effects  map[string]int // key → effects
}

func newEffectOwner(t *testing.T, dedupe bool) *effectOwner {
	o := &effectOwner{dedupe: dedupe, requests: map[string]int{}, effects: map[string]int{}}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		o.mu.Lock()
		o.requests[key]++
		if !o.dedupe || o.effects[key] == 0 {
			o.effects[key]++
		}
		n := o.effects[key]
		o.mu.Unlock()
		fmt.Fprintf(w, "effect %d\n", n)
	}))
	t.Cleanup(o.Close)
	return o
}

func (o *effectOwner) counts(key string) (requests, effects int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.requests[key], o.effects[key]
}

// rig is a directory with an idemkey executable, a ledger and a place for
// the commands' marks.
type rig struct {
	t      *testing.T
	dir    string
	bin    string
	ledger string
	env    []string
}

func newRig(t *testing.T) *rig {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("these tests reach the test owner with curl, which is not installed (scripts/services.sh installs it)")
		}
		t.Skip("these tests reach the test owner with curl, which is not installed")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin", "idemkey")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(exe, bin); err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, dir: dir, bin: bin, ledger: filepath.Join(dir, "state", "ledger.db")}
	r.env = append(ledgerflags.WithoutEnv(os.Environ(), "IDEMKEY_LEDGER", "XDG_CONFIG_HOME", "IDEMKEY_TEST_CRASH_AFTER_EXIT", "IDEMKEY_TEST_FSTYPE"),
		"IDEMKEY_LEDGER="+r.ledger, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "HOME="+dir, "NO_COLOR=1")
	return r
}

func (r *rig) path(name string) string { return filepath.Join(r.dir, name) }

// cmd is idemkey with args, in the rig's directory and environment.
func (r *rig) cmd(args ...string) *exec.Cmd {
	c := exec.Command(r.bin, args...)
	c.Dir = r.dir
	c.Env = append([]string{}, r.env...)
	return c
}

type result struct {
	code           int
	stdout, stderr []byte
}

func (r *rig) run(c *exec.Cmd) result {
	r.t.Helper()
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			r.t.Fatalf("running %v: %v", c.Args, err)
		}
	}
	return result{c.ProcessState.ExitCode(), out.Bytes(), errb.Bytes()}
}

func (r *rig) idemkey(args ...string) result {
	r.t.Helper()
	return r.run(r.cmd(args...))
}

// lines counts the lines of a mark file (one line per execution).
func (r *rig) lines(name string) int {
	b, err := os.ReadFile(r.path(name))
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		r.t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// waitFile waits (bounded) until a command has created name.
func (r *rig) waitFile(name string) {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(r.path(name)); err == nil {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s never appeared", name)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// execLedger runs one statement on the rig's SQLite ledger file behind
// idemkey's back (a takeover by another attempt, a record an older idemkey
// wrote).
func (r *rig) execLedger(query string, args ...any) {
	r.t.Helper()
	db, err := sql.Open("sqlite", r.ledger)
	if err != nil {
		r.t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(query, args...); err != nil {
		r.t.Fatal(err)
	}
}

// waitLine waits (bounded) until a command has written a first whole
// line to name: the shell creates a file it appends to before it writes,
// so a file that exists may still be empty.
func (r *rig) waitLine(name string) {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for r.lines(name) == 0 {
		if time.Now().After(deadline) {
			r.t.Fatalf("%s never got a line", name)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// until runs idemkey until its exit code is not the one given (bounded:
// processes that were killed take a moment to be gone).
func (r *rig) until(not int, args ...string) result {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		res := r.idemkey(args...)
		if res.code != not || time.Now().After(deadline) {
			return res
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type shown struct {
	Key      string  `json:"key"`
	State    string  `json:"state"`
	Recorded string  `json:"recorded_state"`
	Attempt  int     `json:"attempt"`
	Task     string  `json:"task"`
	Tool     string  `json:"tool"`
	ExitCode *int    `json:"exit_code"`
	Started  string  `json:"started_at"`
	Ended    *string `json:"ended_at"`
	Reason   string  `json:"reason"`
	Stdout   struct {
		Length    int64  `json:"length"`
		SHA256    string `json:"sha256"`
		Truncated bool   `json:"truncated"`
	} `json:"stdout"`
}

func (r *rig) show(key string) shown {
	r.t.Helper()
	res := r.idemkey("ledger", "show", key, "--json")
	if res.code != 0 {
		r.t.Fatalf("ledger show: exit %d: %s", res.code, res.stderr)
	}
	var s shown
	if err := json.Unmarshal(res.stdout, &s); err != nil {
		r.t.Fatalf("ledger show --json: %v: %s", err, res.stdout)
	}
	return s
}

func (r *rig) key(args ...string) string {
	r.t.Helper()
	res := r.run(r.cmd(append([]string{"key"}, args...)...))
	if res.code != 0 {
		r.t.Fatalf("key: %s", res.stderr)
	}
	return strings.TrimSpace(string(res.stdout))
}

// cmdKey is the key run derives from a command line.
func (r *rig) cmdKey(task, tool string, argv ...string) string {
	r.t.Helper()
	c := r.cmd("key", "--task", task, "--tool", tool)
	c.Stdin = bytes.NewReader(cli.StringsJSON(argv))
	res := r.run(c)
	if res.code != 0 {
		r.t.Fatalf("key: %s", res.stderr)
	}
	return strings.TrimSpace(string(res.stdout))
}

func TestRunTwiceReplaysByteForByte(t *testing.T) {
	r := newRig(t)
	script := `printf 'out \000\377 line\n'; printf 'err line\n' >&2; echo ran >> ` + r.path("mark") + `; echo "$IDEMPOTENCY_ATTEMPT $IDEMPOTENCY_KEY"; exit 0`
	args := []string{"run", "--task", "t1", "--tool", "step", "--", "sh", "-c", script}
	first := r.idemkey(args...)
	if first.code != 0 || r.lines("mark") != 1 {
		t.Fatalf("first run: exit %d, %d executions, stderr %q", first.code, r.lines("mark"), first.stderr)
	}
	key := r.cmdKey("t1", "step", "sh", "-c", script)
	if !bytes.Contains(first.stdout, []byte("1 "+key+"\n")) {
		t.Fatalf("the command did not see IDEMPOTENCY_ATTEMPT=1 and IDEMPOTENCY_KEY=%s: %q", key, first.stdout)
	}
	if string(first.stderr) != "err line\n" {
		t.Fatalf("run added to the command's stderr: %q", first.stderr)
	}
	second := r.idemkey(append([]string{"run", "-q"}, args[1:]...)...)
	if r.lines("mark") != 1 {
		t.Fatalf("second run executed the command again")
	}
	if second.code != first.code || !bytes.Equal(second.stdout, first.stdout) || !bytes.Equal(second.stderr, first.stderr) {
		t.Fatalf("replay differs: exit %d/%d stdout %q/%q stderr %q/%q", second.code, first.code, second.stdout, first.stdout, second.stderr, first.stderr)
	}
	third := r.idemkey(args...)
	if !bytes.Equal(third.stdout, first.stdout) || !bytes.HasPrefix(third.stderr, []byte("idemkey: replayed "+key+": attempt 1, succeeded at ")) ||
		!bytes.HasSuffix(third.stderr, []byte("err line\n")) {
		t.Fatalf("replay without -q: stdout %q stderr %q", third.stdout, third.stderr)
	}

	// A failure's exit code is replayed too, with --replay-failed.
	fail := []string{"run", "-q", "--task", "t1", "--tool", "fail", "--replay-failed", "--", "sh", "-c", "echo x >> " + r.path("fmark") + "; echo no; exit 7"}
	a, b := r.idemkey(fail...), r.idemkey(fail...)
	if a.code != 7 || b.code != 7 || !bytes.Equal(a.stdout, b.stdout) || r.lines("fmark") != 1 {
		t.Fatalf("failed replay: exits %d %d, stdout %q %q, %d executions", a.code, b.code, a.stdout, b.stdout, r.lines("fmark"))
	}
	// Without it, a failure runs again as the next attempt.
	fail = append(fail[:6], fail[7:]...)
	if c := r.idemkey(fail...); c.code != 7 || r.lines("fmark") != 2 {
		t.Fatalf("failed step not run again: exit %d, %d executions", c.code, r.lines("fmark"))
	}
}

func TestRunOtherCommandLineRefused(t *testing.T) {
	r := newRig(t)
	if err := os.WriteFile(r.path("args.json"), []byte(`{"env":"prod"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ok := r.idemkey("run", "--task", "t1", "--tool", "deploy", "--args", "args.json", "--", "sh", "-c", "echo a >> mark", "deploy", "prod")
	if ok.code != 0 || r.lines("mark") != 1 {
		t.Fatalf("first run: %d %s", ok.code, ok.stderr)
	}
	res := r.idemkey("run", "--task", "t1", "--tool", "deploy", "--args", "args.json", "--", "sh", "-c", "echo a >> mark", "deploy", "staging")
	if res.code != 125 || r.lines("mark") != 1 || len(res.stdout) != 0 {
		t.Fatalf("another command line: exit %d, %d executions, stdout %q", res.code, r.lines("mark"), res.stdout)
	}
	if !strings.Contains(string(res.stderr), `the command line differs at /4: recorded "prod", now "staging"`) {
		t.Fatalf("the message does not show what differs: %s", res.stderr)
	}
}

// barrier starts processes that all wait on a FIFO, and releases them at
// once.
type barrier struct {
	path string
}

func newBarrier(t *testing.T, dir string) *barrier {
	p := filepath.Join(dir, "barrier")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return &barrier{path: p}
}

// wrap makes c wait at the barrier before it execs.
func (b *barrier) wrap(c *exec.Cmd) {
	c.Args = append([]string{"sh", "-c", `read x < "$0"; exec "$@"`, b.path}, c.Args...)
	c.Path = "/bin/sh"
}

func (b *barrier) release(t *testing.T) {
	f, err := os.OpenFile(b.path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func (r *rig) race(cmds []*exec.Cmd) []result {
	r.t.Helper()
	b := newBarrier(r.t, r.dir)
	outs := make([]*bytes.Buffer, len(cmds))
	errs := make([]*bytes.Buffer, len(cmds))
	for i, c := range cmds {
		b.wrap(c)
		outs[i], errs[i] = &bytes.Buffer{}, &bytes.Buffer{}
		c.Stdout, c.Stderr = outs[i], errs[i]
		if err := c.Start(); err != nil {
			r.t.Fatal(err)
		}
	}
	// Opening the FIFO for writing releases every reader at once, once all
	// are waiting: give the shells a moment to reach the read (the
	// assertion does not depend on it).
	time.Sleep(200 * time.Millisecond)
	b.release(r.t)
	res := make([]result, len(cmds))
	for i, c := range cmds {
		_ = c.Wait()
		res[i] = result{c.ProcessState.ExitCode(), outs[i].Bytes(), errs[i].Bytes()}
	}
	return res
}

func TestRunRaceOneKey(t *testing.T) {
	for _, wait := range []bool{false, true} {
		t.Run(fmt.Sprintf("wait=%v", wait), func(t *testing.T) {
			r := newRig(t)
			args := []string{"run", "--task", "t1", "--tool", "race", "-q"}
			if wait {
				args = append(args, "--wait", "60s")
			}
			args = append(args, "--", "sh", "-c", "echo ran >> "+r.path("mark")+"; sleep 1; echo the result")
			cmds := make([]*exec.Cmd, 32)
			for i := range cmds {
				cmds[i] = r.cmd(args...)
			}
			busy, replayed := 0, 0
			for i, res := range r.race(cmds) {
				switch {
				case res.code == 0 && string(res.stdout) == "the result\n":
					replayed++
				case res.code == 75 && !wait && len(res.stdout) == 0 && strings.Contains(string(res.stderr), "is in progress elsewhere"):
					busy++
				default:
					t.Errorf("process %d: exit %d, stdout %q, stderr %q", i, res.code, res.stdout, res.stderr)
				}
			}
			if n := r.lines("mark"); n != 1 {
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
	r := newRig(t)
	cmds := make([]*exec.Cmd, 16)
	for i := range cmds {
		cmds[i] = r.cmd("run", "--task", "t1", "--tool", "many", "--", "sh", "-c", "echo ran >> "+r.path("mark"), strconv.Itoa(i))
	}
	for i, res := range r.race(cmds) {
		if res.code != 0 || len(res.stderr) != 0 {
			t.Errorf("process %d: exit %d, stderr %q", i, res.code, res.stderr)
		}
	}
	if n := r.lines("mark"); n != 16 {
		t.Fatalf("%d executions, want 16", n)
	}
	ls := r.idemkey("ledger", "ls", "--json", "--state", "succeeded")
	var recs []shown
	if err := json.Unmarshal(ls.stdout, &recs); err != nil || len(recs) != 16 {
		t.Fatalf("ledger ls: %d records, %v: %s", len(recs), err, ls.stdout)
	}
}

// startHolder starts a step whose command reaches the owner, marks that it
// started, writes its pid and waits for a release file.
func (r *rig) startHolder(o *effectOwner, extra ...string) (*exec.Cmd, []string) {
	r.t.Helper()
	script := `echo $$ > ` + r.path("pid") + `; curl -sf -H "Idempotency-Key: $IDEMPOTENCY_KEY" ` + o.URL + `/pay >> ` + r.path("owner") +
		`; echo "attempt $IDEMPOTENCY_ATTEMPT" >> ` + r.path("mark") +
		`; while [ ! -e ` + r.path("release") + ` ]; do sleep 0.05; done; echo done`
	args := append([]string{"run", "--task", "t1", "--tool", "pay"}, extra...)
	args = append(args, "--", "sh", "-c", script)
	c := r.cmd(args...)
	// In a process group of its own, as a CI runner starts a job: killing
	// the group kills idemkey and its command.
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.waitLine("mark")
	return c, args
}

func (r *rig) commandPid() int {
	r.t.Helper()
	b, err := os.ReadFile(r.path("pid"))
	if err != nil {
		r.t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		r.t.Fatal(err)
	}
	return pid
}

func TestRunKilledMidStepIsUnknown(t *testing.T) {
	r := newRig(t)
	o := newEffectOwner(t, true)
	holder, args := r.startHolder(o)
	// idemkey and its command die: the group is killed.
	_ = syscall.Kill(-holder.Process.Pid, syscall.SIGKILL)
	_ = holder.Wait()
	os.WriteFile(r.path("release"), nil, 0o644)

	res := r.until(75, args...)
	if res.code != 76 {
		t.Fatalf("after the crash: exit %d, want 76: %s", res.code, res.stderr)
	}
	if r.lines("mark") != 1 {
		t.Fatalf("the command ran again under --recover fail")
	}
	for _, want := range []string{"outcome unknown", "attempt 1 ", "idemkey ledger resolve", "holder died"} {
		if !strings.Contains(string(res.stderr), want) {
			t.Errorf("the report lacks %q: %s", want, res.stderr)
		}
	}
	key := r.cmdKey("t1", "pay", args[len(args)-3:]...)
	if s := r.show(key); s.State != "unknown" || s.Attempt != 1 {
		t.Fatalf("record: %+v", s)
	}
	// Still unknown on the next try: nothing settles it but a person or
	// the retry policy.
	if again := r.idemkey(args...); again.code != 76 {
		t.Fatalf("second try: exit %d", again.code)
	}
	// --recover retry: attempt 2 with the same key; the owner dedupes.
	retry := append([]string{"run", "--recover", "retry"}, args[1:]...)
	res = r.idemkey(retry...)
	if res.code != 0 || string(res.stdout) != "done\n" {
		t.Fatalf("retry: exit %d, stdout %q, stderr %s", res.code, res.stdout, res.stderr)
	}
	if b, _ := os.ReadFile(r.path("mark")); string(b) != "attempt 1\nattempt 2\n" {
		t.Fatalf("attempts: %q", b)
	}
	if req, eff := o.counts(key); req != 2 || eff != 1 {
		t.Fatalf("owner: %d requests, %d effects for the key, want 2 and 1", req, eff)
	}
	if s := r.show(key); s.State != "succeeded" || s.Attempt != 2 || s.ExitCode == nil || *s.ExitCode != 0 {
		t.Fatalf("record after retry: %+v", s)
	}
}

func TestRunOrphanKeepsKeyBusy(t *testing.T) {
	r := newRig(t)
	o := newEffectOwner(t, true)
	holder, args := r.startHolder(o)
	// Only idemkey dies; its command keeps running with the lock.
	_ = holder.Process.Signal(syscall.SIGKILL)
	_ = holder.Wait()
	for range 3 {
		if res := r.idemkey(args...); res.code != 75 {
			t.Fatalf("while the orphan runs: exit %d, want 75: %s", res.code, res.stderr)
		}
	}
	os.WriteFile(r.path("release"), nil, 0o644)
	res := r.until(75, args...)
	if res.code != 76 || r.lines("mark") != 1 {
		t.Fatalf("after the orphan exited: exit %d, %d executions", res.code, r.lines("mark"))
	}
}

func TestRunStoppedHolderNotTakenOver(t *testing.T) {
	r := newRig(t)
	o := newEffectOwner(t, false)
	holder, args := r.startHolder(o, "--lease", "300ms")
	pgid := holder.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGSTOP)
	// Far longer than the lease and the busy timeout: still busy, under
	// either policy.
	deadline := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(deadline) {
		for _, p := range []string{"fail", "retry"} {
			res := r.idemkey(append([]string{"run", "--recover", p, "--lease", "300ms"}, args[1:]...)...)
			if res.code != 75 {
				t.Fatalf("stopped holder taken over (--recover %s): exit %d: %s", p, res.code, res.stderr)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(-pgid, syscall.SIGCONT)
	os.WriteFile(r.path("release"), nil, 0o644)
	if err := holder.Wait(); err != nil {
		t.Fatalf("holder: %v", err)
	}
	res := r.idemkey(args...)
	if res.code != 0 || string(res.stdout) != "done\n" || r.lines("mark") != 1 {
		t.Fatalf("after the holder finished: exit %d, stdout %q, %d executions", res.code, res.stdout, r.lines("mark"))
	}
	key := r.cmdKey("t1", "pay", args[len(args)-3:]...)
	if req, _ := o.counts(key); req != 1 {
		t.Fatalf("owner saw %d requests", req)
	}
}

func TestRunCrashBetweenExitAndRecord(t *testing.T) {
	r := newRig(t)
	o := newEffectOwner(t, true)
	script := `curl -sf -H "Idempotency-Key: $IDEMPOTENCY_KEY" ` + o.URL + `/pay; echo "attempt $IDEMPOTENCY_ATTEMPT" >> ` + r.path("mark")
	args := []string{"run", "--task", "t1", "--tool", "pay", "--", "sh", "-c", script}
	c := r.cmd(args...)
	c.Env = append(c.Env, "IDEMKEY_TEST_CRASH_AFTER_EXIT=1")
	res := r.run(c)
	if ws, ok := c.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || r.lines("mark") != 1 {
		t.Fatalf("the hook did not crash idemkey after the command: exit %d, %d executions", res.code, r.lines("mark"))
	}
	key := r.cmdKey("t1", "pay", "sh", "-c", script)
	if s := r.show(key); s.Recorded != "running" {
		t.Fatalf("record after the crash: %+v, want running (nothing recorded)", s)
	}
	res = r.idemkey(args...)
	if res.code != 76 || r.lines("mark") != 1 {
		t.Fatalf("after the crash: exit %d, %d executions: %s", res.code, r.lines("mark"), res.stderr)
	}
	if s := r.show(key); s.State != "unknown" || s.ExitCode != nil {
		t.Fatalf("record: %+v, want unknown with no exit code", s)
	}
	res = r.idemkey(append([]string{"run", "--recover", "retry"}, args[1:]...)...)
	if res.code != 0 || r.lines("mark") != 2 {
		t.Fatalf("retry: exit %d, %d executions", res.code, r.lines("mark"))
	}
	if req, eff := o.counts(key); req != 2 || eff != 1 {
		t.Fatalf("owner: %d requests, %d effects, want 2 and 1", req, eff)
	}
}

func TestRunLedgerDeletedRunsAgain(t *testing.T) {
	r := newRig(t)
	o := newEffectOwner(t, true)
	script := `curl -sf -H "Idempotency-Key: $IDEMPOTENCY_KEY" ` + o.URL + `/pay; echo ran >> ` + r.path("mark")
	args := []string{"run", "-q", "--task", "t1", "--tool", "pay", "--", "sh", "-c", script}
	first := r.idemkey(args...)
	if first.code != 0 || string(first.stdout) != "effect 1\n" {
		t.Fatalf("first: %d %q %s", first.code, first.stdout, first.stderr)
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(r.ledger + suffix)
	}
	second := r.idemkey(args...)
	if second.code != 0 || r.lines("mark") != 2 {
		t.Fatalf("after the ledger was deleted: exit %d, %d executions", second.code, r.lines("mark"))
	}
	key := r.cmdKey("t1", "pay", "sh", "-c", script)
	if req, eff := o.counts(key); req != 2 || eff != 1 {
		t.Fatalf("owner: %d requests, %d effects, want 2 and 1 (the owner's dedupe is what protects the effect)", req, eff)
	}
	if s := r.show(key); s.Attempt != 1 || s.State != "succeeded" {
		t.Fatalf("record in the new ledger: %+v", s)
	}
}

func TestRunSignalDeathRecordedUnknown(t *testing.T) {
	r := newRig(t)
	args := []string{"run", "--task", "t1", "--tool", "sig", "--", "sh", "-c", "echo ran >> " + r.path("mark") + "; kill -TERM $$"}
	res := r.idemkey(args...)
	if res.code != 128+15 {
		t.Fatalf("exit %d, want 143", res.code)
	}
	res = r.idemkey(args...)
	if res.code != 76 || r.lines("mark") != 1 || !strings.Contains(string(res.stderr), "killed by signal 15") {
		t.Fatalf("after a signal death: exit %d, %d executions: %s", res.code, r.lines("mark"), res.stderr)
	}
}

func TestRunForwardsSignals(t *testing.T) {
	r := newRig(t)
	c := r.cmd("run", "--task", "t1", "--tool", "fwd", "--", "sh", "-c",
		`trap 'echo got TERM; exit 9' TERM; echo $$ > `+r.path("pid")+`; touch `+r.path("mark")+`; i=0; while [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done`)
	var out bytes.Buffer
	c.Stdout = &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	r.waitFile("mark")
	_ = c.Process.Signal(syscall.SIGTERM)
	_ = c.Wait()
	if code := c.ProcessState.ExitCode(); code != 9 || out.String() != "got TERM\n" {
		t.Fatalf("SIGTERM to idemkey: exit %d, stdout %q, want the command's 9 and its trap's output", code, out.String())
	}
}

func TestRunOutputCapAndTruncatedReplay(t *testing.T) {
	r := newRig(t)
	script := `i=0; while [ $i -lt 100 ]; do printf '0123456789'; i=$((i+1)); done; exit 4`
	args := []string{"run", "--task", "t1", "--tool", "big", "--max-output", "64", "--replay-failed", "--", "sh", "-c", script}
	first := r.idemkey(args...)
	if first.code != 4 || len(first.stdout) != 1000 {
		t.Fatalf("live output cut by the cap: exit %d, %d bytes", first.code, len(first.stdout))
	}
	second := r.idemkey(args...)
	if second.code != 4 || !bytes.Equal(second.stdout, first.stdout[:64]) {
		t.Fatalf("truncated replay: exit %d, stdout %q", second.code, second.stdout)
	}
	if !strings.Contains(string(second.stderr), "the recorded stdout was truncated: replayed 64 of its 1000 bytes") {
		t.Fatalf("truncation not said: %s", second.stderr)
	}
	key := r.cmdKey("t1", "big", "sh", "-c", script)
	s := r.show(key)
	if !s.Stdout.Truncated || s.Stdout.Length != 1000 || s.Stdout.SHA256 != sha256hex(first.stdout) {
		t.Fatalf("record: %+v, want the full length and sha256", s.Stdout)
	}
	raw := r.idemkey("ledger", "show", key, "--stdout")
	if !bytes.Equal(raw.stdout, first.stdout[:64]) {
		t.Fatalf("ledger show --stdout: %q", raw.stdout)
	}
}

func TestRunRetention(t *testing.T) {
	r := newRig(t)
	args := []string{"--task", "t1", "--tool", "ret", "--", "sh", "-c", "echo ran >> " + r.path("mark")}
	r.idemkey(append([]string{"run"}, args...)...)
	r.idemkey(append([]string{"run"}, args...)...)
	if r.lines("mark") != 1 {
		t.Fatal("replay within retention ran the command")
	}
	time.Sleep(20 * time.Millisecond)
	if res := r.idemkey(append([]string{"run", "--retain", "10ms"}, args...)...); res.code != 0 || r.lines("mark") != 2 {
		t.Fatalf("an expired record was not ignored: exit %d, %d executions", res.code, r.lines("mark"))
	}
	time.Sleep(20 * time.Millisecond)
	gc := r.idemkey("ledger", "gc", "--older-than", "10ms")
	if gc.code != 0 || !strings.Contains(string(gc.stderr), "removed 1 record older than 10ms") {
		t.Fatalf("gc: exit %d: %s", gc.code, gc.stderr)
	}
	key := r.cmdKey("t1", "ret", "sh", "-c", "echo ran >> "+r.path("mark"))
	if res := r.idemkey("ledger", "show", key); res.code != 1 {
		t.Fatalf("record kept by gc: %s", res.stdout)
	}
}

func TestRunLedgerModes(t *testing.T) {
	r := newRig(t)
	r.idemkey("run", "--task", "t1", "--tool", "m", "--", "true")
	for p, want := range map[string]os.FileMode{filepath.Dir(r.ledger): 0o700 | os.ModeDir, r.ledger: 0o600} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode() != want {
			t.Errorf("%s: %v %v, want %v", p, fi.Mode(), err, want)
		}
	}
	// The default place: $XDG_STATE_HOME/idemkey/ledger.db.
	c := r.cmd("run", "--task", "t1", "--tool", "m", "--", "true")
	c.Env = append(ledgerflags.WithoutEnv(c.Env, "IDEMKEY_LEDGER"), "XDG_STATE_HOME="+r.path("xdg"))
	if res := r.run(c); res.code != 0 {
		t.Fatal(string(res.stderr))
	}
	if fi, err := os.Stat(r.path("xdg/idemkey/ledger.db")); err != nil || fi.Mode() != 0o600 {
		t.Fatalf("default ledger: %v %v", fi, err)
	}
}

func TestRunNetworkFSRefused(t *testing.T) {
	r := newRig(t)
	c := r.cmd("run", "--task", "t1", "--tool", "n", "--", "sh", "-c", "echo ran >> "+r.path("mark"))
	c.Env = append(c.Env, "IDEMKEY_TEST_FSTYPE=0x6969")
	res := r.run(c)
	if res.code != 125 || r.lines("mark") != 0 || !strings.Contains(string(res.stderr), "is on a NFS file system") {
		t.Fatalf("NFS: exit %d, %d executions: %s", res.code, r.lines("mark"), res.stderr)
	}
	if _, err := os.Stat(r.ledger); !os.IsNotExist(err) {
		t.Fatal("a ledger file was created on a refused file system")
	}
}

func TestRunLedgerSchemaVersions(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	// A ledger as the version-1 schema wrote it, with a succeeded step:
	// opened, migrated, and the step replayed.
	old, err := sqlite.Open(ctx, r.ledger, sqlite.Options{Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	old.Close()
	args := []string{"run", "-q", "--task", "t1", "--tool", "v", "--", "sh", "-c", "echo ran >> " + r.path("mark")}
	if res := r.idemkey(args...); res.code != 0 {
		t.Fatal(string(res.stderr))
	}
	db, err := sql.Open("sqlite", r.ledger)
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
	res := r.idemkey(args...)
	if res.code != 125 || r.lines("mark") != 1 || !strings.Contains(string(res.stderr), "schema version 99") {
		t.Fatalf("newer schema: exit %d: %s", res.code, res.stderr)
	}
}

func sha256hex(b []byte) string {
	h := ledgerflags.NewRecorder(0)
	h.Write(b)
	return h.Output().SHA256
}

func TestRunBrokenStdoutReachesTheCommand(t *testing.T) {
	// "idemkey run … | head -1": the command sees the broken pipe, as it
	// would without idemkey, and idemkey lives to record how it ended.
	r := newRig(t)
	c := r.cmd("run", "--task", "t1", "--tool", "pipe", "--", "sh", "-c", "while :; do echo y || exit 3; done")
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
	key := r.cmdKey("t1", "pipe", "sh", "-c", "while :; do echo y || exit 3; done")
	if s := r.show(key); s.Recorded == "running" || s.Stdout.Length < 2 {
		t.Fatalf("record: %+v, want the outcome recorded", s)
	}
}

func TestRunLeaseLost(t *testing.T) {
	for _, policy := range []string{"kill", "continue"} {
		t.Run(policy, func(t *testing.T) {
			r := newRig(t)
			// The command starts a child of its own and waits for it.
			script := `sleep 60 & echo $! > ` + r.path("child") + `; touch ` + r.path("mark") +
				`; while [ ! -e ` + r.path("release") + ` ]; do sleep 0.02; done; kill $!; echo finished`
			c := r.cmd("run", "--task", "t1", "--tool", "lease", "--lease", "150ms", "--on-lease-lost", policy, "--", "sh", "-c", script)
			var out, errb bytes.Buffer
			c.Stdout, c.Stderr = &out, &errb
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			r.waitFile("mark")
			// A newer attempt takes the key over (as a takeover on a
			// shared store would): the holder's renewal finds another
			// attempt.
			db, err := sql.Open("sqlite", r.ledger)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`UPDATE records SET attempt = 2, holder = 'elsewhere'`); err != nil {
				t.Fatal(err)
			}
			if policy == "continue" {
				r.waitFile("child")
				time.Sleep(300 * time.Millisecond) // two renewals at least; not an assertion on time
				os.WriteFile(r.path("release"), nil, 0o644)
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
			b, _ := os.ReadFile(r.path("child"))
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
