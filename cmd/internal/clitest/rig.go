package clitest

import (
	"bytes"
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
	"github.com/idemkey/idemkey/cmd/internal/step"
)

// StartStepHolder starts idemkey run with script as its command and
// waits for the script's first line in mark; group puts idemkey in a
// process group of its own (as a shell starts a job), else it stays in
// the test's (as in a CI script).
func (r *Rig) StartStepHolder(script string, group bool, extra ...string) (*exec.Cmd, []string) {
	r.T.Helper()
	script = `echo "attempt $IDEMPOTENCY_ATTEMPT" >> ` + r.Path("mark") + "; " + script +
		`; while [ ! -e ` + r.Path("release") + ` ]; do sleep 0.05; done; echo done >> ` + r.Path("ended")
	args := append([]string{"run", "--task", "t1", "--tool", "deploy"}, extra...)
	args = append(args, "--", "bash", "-c", script)
	c := r.Cmd(args...)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: group}
	if err := c.Start(); err != nil {
		r.T.Fatal(err)
	}
	r.WaitLine("mark")
	return c, args
}

// IdemkeyReleasing is idemkey with args, bounded: a run that starts the
// step again (the bug) would wait for release for ever; after 20 s the
// release file is made, and the run ends.
func (r *Rig) IdemkeyReleasing(args ...string) Result {
	r.T.Helper()
	done := make(chan Result, 1)
	go func() { done <- r.Idemkey(args...) }()
	select {
	case res := <-done:
		return res
	case <-time.After(20 * time.Second):
		os.WriteFile(r.Path("release"), nil, 0o644)
		return <-done
	}
}

// EffectOwner owns a side effect and counts it per Idempotency-Key. With
// dedupe, a key's effect happens once and later requests with the key get
// the first answer; without, every request is an effect.
type EffectOwner struct {
	*httptest.Server
	dedupe bool

	mu       sync.Mutex
	requests map[string]int // key → requests
	effects  map[string]int // key → effects
}

// NewEffectOwner starts an EffectOwner on loopback.
func NewEffectOwner(t *testing.T, dedupe bool) *EffectOwner {
	o := &EffectOwner{dedupe: dedupe, requests: map[string]int{}, effects: map[string]int{}}
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

// Counts are the requests and effects of key.
func (o *EffectOwner) Counts(key string) (requests, effects int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.requests[key], o.effects[key]
}

// Rig is a directory with an idemkey executable, a ledger and a place for
// the commands' marks.
type Rig struct {
	T      *testing.T
	Dir    string
	Bin    string
	Ledger string
	Env    []string
}

// NewRig makes a rig in a temporary directory: the test binary linked
// as bin/idemkey, a SQLite ledger under state/ (IDEMKEY_LEDGER) and the
// environment without the caller's ledger or config. Its steps reach
// owners with curl: without it the test ends as Unavailable.
func NewRig(t *testing.T) *Rig {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		Unavailable(t, "these tests reach the test owner with curl, which is not installed")
	}
	dir, bin := binDir(t)
	r := &Rig{T: t, Dir: dir, Bin: bin, Ledger: filepath.Join(dir, "state", "ledger.db")}
	r.Env = append(step.WithoutEnv(os.Environ(), "IDEMKEY_LEDGER", "XDG_CONFIG_HOME", "IDEMKEY_TEST_CRASH_AFTER_EXIT", "IDEMKEY_TEST_FSTYPE"),
		"IDEMKEY_LEDGER="+r.Ledger, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "HOME="+dir, "NO_COLOR=1")
	return r
}

// binDir makes a temporary directory with the test binary linked as
// bin/idemkey (Main makes it idemkey when it is called by that name).
func binDir(t *testing.T) (dir, bin string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	bin = filepath.Join(dir, "bin", "idemkey")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(exe, bin); err != nil {
		t.Fatal(err)
	}
	return dir, bin
}

// Path is the path of name in the rig's directory.
func (r *Rig) Path(name string) string { return filepath.Join(r.Dir, name) }

// Cmd is idemkey with args, in the rig's directory and environment.
func (r *Rig) Cmd(args ...string) *exec.Cmd {
	c := exec.Command(r.Bin, args...)
	c.Dir = r.Dir
	c.Env = append([]string{}, r.Env...)
	return c
}

// Result is what an idemkey process returned: its exit code and output.
type Result struct {
	Code           int
	Stdout, Stderr []byte
}

// Run runs c to its end and returns its Result (failing the test when it
// cannot start).
func (r *Rig) Run(c *exec.Cmd) Result {
	r.T.Helper()
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			r.T.Fatalf("running %v: %v", c.Args, err)
		}
	}
	return Result{c.ProcessState.ExitCode(), out.Bytes(), errb.Bytes()}
}

// Idemkey runs idemkey with args in the rig.
func (r *Rig) Idemkey(args ...string) Result {
	r.T.Helper()
	return r.Run(r.Cmd(args...))
}

// Lines counts the lines of a mark file (one line per execution).
func (r *Rig) Lines(name string) int {
	b, err := os.ReadFile(r.Path(name))
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		r.T.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// WaitFile waits (bounded) until a command has created name.
func (r *Rig) WaitFile(name string) {
	r.T.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(r.Path(name)); err == nil {
			return
		}
		if time.Now().After(deadline) {
			r.T.Fatalf("%s never appeared", name)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ExecLedger runs one statement on the rig's SQLite ledger file behind
// idemkey's back (a takeover by another attempt, a record an older idemkey
// wrote).
func (r *Rig) ExecLedger(query string, args ...any) {
	r.T.Helper()
	db, err := sql.Open("sqlite", r.Ledger)
	if err != nil {
		r.T.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(query, args...); err != nil {
		r.T.Fatal(err)
	}
}

// WaitLine waits (bounded) until a command has written a first whole
// line to name: the shell creates a file it appends to before it writes,
// so a file that exists may still be empty.
func (r *Rig) WaitLine(name string) {
	r.T.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for r.Lines(name) == 0 {
		if time.Now().After(deadline) {
			r.T.Fatalf("%s never got a line", name)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Until runs idemkey until its exit code is not the one given (bounded:
// processes that were killed take a moment to be gone).
func (r *Rig) Until(not int, args ...string) Result {
	r.T.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		res := r.Idemkey(args...)
		if res.Code != not || time.Now().After(deadline) {
			return res
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Shown is a record as ledger show --json prints it.
type Shown struct {
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

// Show is the record of key, from ledger show --json.
func (r *Rig) Show(key string) Shown {
	r.T.Helper()
	res := r.Idemkey("ledger", "show", key, "--json")
	if res.Code != 0 {
		r.T.Fatalf("ledger show: exit %d: %s", res.Code, res.Stderr)
	}
	var s Shown
	if err := json.Unmarshal(res.Stdout, &s); err != nil {
		r.T.Fatalf("ledger show --json: %v: %s", err, res.Stdout)
	}
	return s
}

// Key is the key that idemkey key prints for args.
func (r *Rig) Key(args ...string) string {
	r.T.Helper()
	res := r.Run(r.Cmd(append([]string{"key"}, args...)...))
	if res.Code != 0 {
		r.T.Fatalf("key: %s", res.Stderr)
	}
	return strings.TrimSpace(string(res.Stdout))
}

// CmdKey is the key run derives from a command line.
func (r *Rig) CmdKey(task, tool string, argv ...string) string {
	r.T.Helper()
	c := r.Cmd("key", "--task", task, "--tool", tool)
	c.Stdin = bytes.NewReader(cli.StringsJSON(argv))
	res := r.Run(c)
	if res.Code != 0 {
		r.T.Fatalf("key: %s", res.Stderr)
	}
	return strings.TrimSpace(string(res.Stdout))
}

// Barrier starts processes that all wait on a FIFO, and releases them at
// once. The barrier holds the FIFO open for reading and writing from the
// start, so that a process that opens it never blocks in open, only in its
// read of one line; Release writes one line for each process at once.
type Barrier struct {
	path string
	f    *os.File
}

// NewBarrier makes a barrier's FIFO in dir; the test's cleanup closes it.
func NewBarrier(t *testing.T, dir string) *Barrier {
	p := filepath.Join(dir, "barrier")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &Barrier{path: p, f: f}
}

// Wrap makes c wait at the barrier before it execs; its shell marks that it
// has come to the barrier with a file of its own beside the FIFO.
func (b *Barrier) Wrap(c *exec.Cmd) {
	c.Args = append([]string{"sh", "-c", `: > "$0.$$"; read x < "$0"; exec "$@"`, b.path}, c.Args...)
	c.Path = "/bin/sh"
}

// Arrived waits (bounded) until n wrapped processes have come to the
// barrier.
func (b *Barrier) Arrived(t *testing.T, n int) {
	t.Helper()
	WaitFor(t, 30*time.Second, func() bool {
		m, _ := filepath.Glob(b.path + ".*")
		return len(m) >= n
	})
}

// Release lets n processes at the barrier go at once: one write of a line
// for each (the shell's read takes one line, a byte at a time). A process
// still on its way to its read finds its line there.
func (b *Barrier) Release(t *testing.T, n int) {
	if _, err := b.f.Write(bytes.Repeat([]byte("\n"), n)); err != nil {
		t.Fatal(err)
	}
}

// Race starts cmds behind a barrier, releases them at once and returns
// their results, in order.
func (r *Rig) Race(cmds []*exec.Cmd) []Result {
	r.T.Helper()
	b := NewBarrier(r.T, r.Dir)
	outs := make([]*bytes.Buffer, len(cmds))
	errs := make([]*bytes.Buffer, len(cmds))
	for i, c := range cmds {
		b.Wrap(c)
		outs[i], errs[i] = &bytes.Buffer{}, &bytes.Buffer{}
		c.Stdout, c.Stderr = outs[i], errs[i]
		if err := c.Start(); err != nil {
			r.T.Fatal(err)
		}
	}
	// Each shell marks its arrival just before it opens the FIFO and reads.
	b.Arrived(r.T, len(cmds))
	b.Release(r.T, len(cmds))
	res := make([]Result, len(cmds))
	for i, c := range cmds {
		_ = c.Wait()
		res[i] = Result{c.ProcessState.ExitCode(), outs[i].Bytes(), errs[i].Bytes()}
	}
	return res
}

// StartHolder starts a step whose command reaches the owner, marks that it
// started, writes its pid and waits for a release file.
func (r *Rig) StartHolder(o *EffectOwner, extra ...string) (*exec.Cmd, []string) {
	r.T.Helper()
	script := `echo $$ > ` + r.Path("pid") + `; curl -sf -H "Idempotency-Key: $IDEMPOTENCY_KEY" ` + o.URL + `/pay >> ` + r.Path("owner") +
		`; echo "attempt $IDEMPOTENCY_ATTEMPT" >> ` + r.Path("mark") +
		`; while [ ! -e ` + r.Path("release") + ` ]; do sleep 0.05; done; echo done`
	args := append([]string{"run", "--task", "t1", "--tool", "pay"}, extra...)
	args = append(args, "--", "sh", "-c", script)
	c := r.Cmd(args...)
	// In a process group of its own, as a CI runner starts a job: killing
	// the group kills idemkey and its command.
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		r.T.Fatal(err)
	}
	r.WaitLine("mark")
	return c, args
}

// CommandPid is the pid the StartHolder step wrote.
func (r *Rig) CommandPid() int {
	r.T.Helper()
	b, err := os.ReadFile(r.Path("pid"))
	if err != nil {
		r.T.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		r.T.Fatal(err)
	}
	return pid
}
