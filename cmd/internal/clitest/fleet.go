package clitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Owner is a test owner of effects on 127.0.0.1: it counts requests and
// effects per Idempotency-Key; a deduping owner applies a key's effect
// once.
type Owner struct {
	dedupe   bool
	Port     int
	mu       sync.Mutex
	requests map[string]int
	effects  map[string]int
}

// NewOwner starts an Owner on a free port of 127.0.0.1.
func NewOwner(t *testing.T, dedupe bool) *Owner {
	o := &Owner{dedupe: dedupe, requests: map[string]int{}, effects: map[string]int{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o.Port = l.Addr().(*net.TCPAddr).Port
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := r.Header.Get("Idempotency-Key")
		o.mu.Lock()
		o.requests[k]++
		if !o.dedupe || o.effects[k] == 0 {
			o.effects[k]++
		}
		o.mu.Unlock()
		fmt.Fprintln(w, "ok")
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return o
}

// Counts are the owner's requests and effects, over all keys.
func (o *Owner) Counts() (requests, effects int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, n := range o.requests {
		requests += n
	}
	for _, n := range o.effects {
		effects += n
	}
	return
}

// Fleet is a directory of scripts and marks shared by a test's workers.
type Fleet struct {
	T   *testing.T
	Dir string
	Bin string
	Env []string
}

// NewFleet makes a fleet whose workers share the store s (its URL as
// IDEMKEY_LEDGER) and reach the owner o (OWNER_PORT), with effect.sh, a
// step that sends the owner one request with the step's key.
func NewFleet(t *testing.T, s *Store, o *Owner) *Fleet {
	bin, err := exec.LookPath("idemkey")
	if err != nil {
		t.Fatalf("idemkey (the test binary) not on PATH: %v", err)
	}
	dir := t.TempDir()
	fl := &Fleet{T: t, Dir: dir, Bin: bin}
	fl.Env = append(os.Environ(), "IDEMKEY_LEDGER="+s.URL, "NO_COLOR=1")
	if o != nil {
		fl.Env = append(fl.Env, fmt.Sprintf("OWNER_PORT=%d", o.Port))
	}
	// effect.sh: one request to the owner with the step's key (bash's
	// /dev/tcp: no client to install).
	fl.Script("effect.sh", `exec 3<>/dev/tcp/127.0.0.1/$OWNER_PORT
printf 'POST /effect HTTP/1.0\r\nHost: owner\r\nIdempotency-Key: %s\r\nContent-Length: 0\r\n\r\n' "$IDEMPOTENCY_KEY" >&3
cat <&3 >/dev/null
`)
	return fl
}

// Script writes an executable bash script (set -e) into the fleet's
// directory and returns its path.
func (fl *Fleet) Script(name, body string) string {
	p := filepath.Join(fl.Dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/bash\nset -e\n"+body), 0o755); err != nil {
		fl.T.Fatal(err)
	}
	return p
}

// Worker is one idemkey run process ("a machine": its own state
// directory, so no local lock is shared).
type Worker struct {
	Cmd            *exec.Cmd
	Stdout, Stderr bytes.Buffer
	Done           chan struct{}
	Code           int
}

// Start starts one worker, idemkey with args, in a process group of its
// own; the test's cleanup kills what is left of it.
func (fl *Fleet) Start(name string, args ...string) *Worker {
	w := &Worker{Done: make(chan struct{})}
	w.Cmd = exec.Command(fl.Bin, args...)
	state := filepath.Join(fl.Dir, "machine-"+name)
	// A copy: workers start concurrently, and an append to fl.env itself
	// could write into one shared array.
	w.Cmd.Env = append(slices.Clip(fl.Env), "XDG_STATE_HOME="+state, "HOME="+state)
	w.Cmd.Dir = fl.Dir
	w.Cmd.Stdout, w.Cmd.Stderr = &w.Stdout, &w.Stderr
	w.Cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := w.Cmd.Start(); err != nil {
		fl.T.Fatal(err)
	}
	fl.T.Cleanup(func() {
		syscall.Kill(-w.Cmd.Process.Pid, syscall.SIGCONT)
		syscall.Kill(-w.Cmd.Process.Pid, syscall.SIGKILL)
		<-w.Done
	})
	go func() {
		w.Cmd.Wait()
		w.Code = w.Cmd.ProcessState.ExitCode()
		if ws, ok := w.Cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			w.Code = 128 + int(ws.Signal())
		}
		close(w.Done)
	}()
	return w
}

// Wait waits for the worker's exit (failing the test after d).
func (w *Worker) Wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-w.Done:
	case <-time.After(d):
		t.Fatalf("worker %v still running after %v; stderr:\n%s", w.Cmd.Args, d, w.Stderr.String())
	}
	return w.Code
}

// Run runs one worker to its end.
func (fl *Fleet) Run(name string, args ...string) *Worker {
	w := fl.Start(name, args...)
	w.Wait(fl.T, 60*time.Second)
	return w
}

// Lines returns the lines of a marks file the steps append to.
func (fl *Fleet) Lines(name string) []string {
	b, err := os.ReadFile(filepath.Join(fl.Dir, name))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		fl.T.Fatal(err)
	}
	return strings.Fields(string(b))
}

// Show is idemkey ledger show KEY --json.
func (fl *Fleet) Show(key string) map[string]any {
	w := fl.Run("inspector", "ledger", "show", key, "--json")
	if w.Code != 0 {
		fl.T.Fatalf("ledger show %s: exit %d: %s", key, w.Code, w.Stderr.String())
	}
	var m map[string]any
	if err := json.Unmarshal(w.Stdout.Bytes(), &m); err != nil {
		fl.T.Fatalf("ledger show %s: %v\n%s", key, err, w.Stdout.String())
	}
	return m
}

// RunKeyOf is the key idemkey run derives for the step (from -v's line).
func RunKeyOf(t *testing.T, w *Worker) string {
	t.Helper()
	for _, l := range strings.Split(w.Stderr.String(), "\n") {
		if rest, ok := strings.CutPrefix(l, "idemkey: key "); ok {
			k, _, _ := strings.Cut(rest, ",")
			return k
		}
	}
	t.Fatalf("no key in stderr (run with -v):\n%s", w.Stderr.String())
	return ""
}

// WaitFor waits until cond holds, failing the test after d.
func WaitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met after %v", d)
		}
	}
}

// PlanOwner answers requests with the statuses of its plan, in order (201
// beyond it), and counts them per Idempotency-Key. A stall in the plan (0)
// holds the request until release is closed.
type PlanOwner struct {
	*httptest.Server
	Mu      sync.Mutex
	plan    []int
	Keys    map[string]int
	Arrived chan struct{}
	Release chan struct{}
}

// NewPlanOwner starts a PlanOwner on 127.0.0.1 answering with the
// statuses of plan.
func NewPlanOwner(t *testing.T, plan ...int) *PlanOwner {
	o := &PlanOwner{plan: plan, Keys: map[string]int{}, Arrived: make(chan struct{}, 16), Release: make(chan struct{})}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.Mu.Lock()
		o.Keys[r.Header.Get("Idempotency-Key")]++
		n := 0
		for _, c := range o.Keys {
			n += c
		}
		status := http.StatusCreated
		if n <= len(o.plan) {
			status = o.plan[n-1]
		}
		o.Mu.Unlock()
		o.Arrived <- struct{}{}
		if status == 0 {
			<-o.Release
			status = http.StatusCreated
		}
		w.Header().Set("X-Seq", fmt.Sprint(n))
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"request":%d,"status":%d}`+"\n", n, status)
	}))
	t.Cleanup(func() {
		select {
		case <-o.Release:
		default:
			close(o.Release)
		}
		o.Close()
	})
	return o
}

// Count is the number of requests that carried key.
func (o *PlanOwner) Count(key string) int {
	o.Mu.Lock()
	defer o.Mu.Unlock()
	return o.Keys[key]
}

// Total is the number of requests, over all keys.
func (o *PlanOwner) Total() int {
	o.Mu.Lock()
	defer o.Mu.Unlock()
	n := 0
	for _, c := range o.Keys {
		n += c
	}
	return n
}

// AwaitArrival waits for the first request of o, sent by a.
func AwaitArrival(t *testing.T, o *PlanOwner, a *Worker) {
	t.Helper()
	select {
	case <-o.Arrived:
	case <-a.Done:
		t.Fatalf("the post ended before its request arrived: exit %d:\n%s", a.Code, a.Stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("the request never arrived")
	}
}
