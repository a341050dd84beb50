package clitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Procs runs idemkey in real processes, each watched until it ends: a
// directory with an idemkey executable (the test binary, called by that
// name: Main runs idemkey then) and an environment with a SQLite ledger
// in the directory.
type Procs struct {
	T      *testing.T
	Dir    string
	Bin    string
	Ledger string
	Env    []string
}

// NewProcs makes a Procs: IDEMKEY_* settings, HOME and XDG_CONFIG_HOME
// are its own, the ledger at Dir/state/ledger.db.
func NewProcs(t *testing.T) *Procs {
	t.Helper()
	dir, bin := binDir(t)
	r := &Procs{T: t, Dir: dir, Bin: bin, Ledger: filepath.Join(dir, "state", "ledger.db")}
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(name, "IDEMKEY_") && name != "XDG_CONFIG_HOME" && name != "HOME" {
			r.Env = append(r.Env, kv)
		}
	}
	r.Env = append(r.Env, "IDEMKEY_LEDGER="+r.Ledger, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "HOME="+dir, "NO_COLOR=1")
	return r
}

// Proc is an idemkey process of a test.
type Proc struct {
	Cmd            *exec.Cmd
	Stdout, Stderr bytes.Buffer
	// Code is its exit code, 128+N when killed by signal N (once done).
	Code int
	done chan struct{}
}

// Start starts idemkey with args in the rig's directory.
func (r *Procs) Start(args ...string) *Proc {
	r.T.Helper()
	p := &Proc{done: make(chan struct{})}
	p.Cmd = exec.Command(r.Bin, args...)
	p.Cmd.Dir, p.Cmd.Env = r.Dir, r.Env
	p.Cmd.Stdout, p.Cmd.Stderr = &p.Stdout, &p.Stderr
	if err := p.Cmd.Start(); err != nil {
		r.T.Fatal(err)
	}
	go func() {
		_ = p.Cmd.Wait()
		p.Code = p.Cmd.ProcessState.ExitCode()
		if ws, ok := p.Cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			p.Code = 128 + int(ws.Signal())
		}
		close(p.done)
	}()
	r.T.Cleanup(func() { _ = p.Cmd.Process.Kill(); <-p.done })
	return p
}

// Wait waits for p to end.
func (p *Proc) Wait(t *testing.T) *Proc {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("idemkey %v did not end:\n%s", p.Cmd.Args[1:], p.Stderr.String())
	}
	return p
}

// Run runs idemkey with args and waits for it.
func (r *Procs) Run(args ...string) *Proc {
	r.T.Helper()
	return r.Start(args...).Wait(r.T)
}

// File is the path of name in the rig's directory.
func (r *Procs) File(name string) string { return filepath.Join(r.Dir, name) }

// Exists reports whether name exists in the rig's directory.
func (r *Procs) Exists(name string) bool {
	_, err := os.Stat(r.File(name))
	return err == nil
}

// Touch creates name in the rig's directory.
func (r *Procs) Touch(name string) {
	r.T.Helper()
	if err := os.WriteFile(r.File(name), nil, 0o644); err != nil {
		r.T.Fatal(err)
	}
}

// PidIn is the process id written in name (0 if none yet).
func (r *Procs) PidIn(name string) int {
	b, _ := os.ReadFile(r.File(name))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// Show is 'idemkey ledger show KEY --json'.
func (r *Procs) Show(key string) map[string]any {
	r.T.Helper()
	p := r.Run("ledger", "show", key, "--json")
	var m map[string]any
	if err := json.Unmarshal(p.Stdout.Bytes(), &m); err != nil {
		r.T.Fatalf("ledger show %s: exit %d, %v\n%s%s", key, p.Code, err, p.Stdout.String(), p.Stderr.String())
	}
	return m
}

// Records is 'idemkey ledger ls --json'.
func (r *Procs) Records() []map[string]any {
	r.T.Helper()
	p := r.Run("ledger", "ls", "--json")
	var recs []map[string]any
	if err := json.Unmarshal(p.Stdout.Bytes(), &recs); err != nil {
		r.T.Fatalf("ledger ls: exit %d, %v\n%s%s", p.Code, err, p.Stdout.String(), p.Stderr.String())
	}
	return recs
}

// OnlyKey is the key of the ledger's one record.
func (r *Procs) OnlyKey() string {
	r.T.Helper()
	recs := r.Records()
	if len(recs) != 1 {
		r.T.Fatalf("%d records, want 1: %v", len(recs), recs)
	}
	return recs[0]["key"].(string)
}

// Alive reports whether the process pid runs (a zombie does not).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	if err != nil {
		p, err := os.FindProcess(pid)
		return err == nil && p.Signal(syscall.Signal(0)) == nil
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || len(b) < i+3 || b[i+2] != 'Z'
}

// WaitUntil waits until cond holds (or fails the test after a minute,
// naming what it waited for).
func WaitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
