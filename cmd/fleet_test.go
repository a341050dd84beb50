package cmd

// Fleet tests: idemkey run in real processes sharing one PostgreSQL or
// Redis ledger (no kernel lock between them, as on separate machines),
// against real servers on loopback that the tests start and stop
// (derive/ledger/testserver), and a test owner on 127.0.0.1 that
// counts effects per Idempotency-Key.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	goredis "github.com/redis/go-redis/v9"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/derive/ledger/testserver"
)

// fleetStore is one shared store under test.
type fleetStore struct {
	name string
	url  string
	// stop crashes the server (SIGKILL) for good.
	stop func()
	// empty removes every record (TRUNCATE, FLUSHDB).
	empty func(t *testing.T)
	// restart crashes the server (SIGKILL) and starts it again after
	// down.
	restart func(t *testing.T, down time.Duration)
}

func pgStore(t *testing.T) *fleetStore {
	c := testserver.NewPostgres(t)
	url := c.CreateDB(t)
	return &fleetStore{
		name: "postgres", url: url,
		empty: func(t *testing.T) {
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			if _, err := conn.Exec(ctx, "TRUNCATE idemkey_ledger"); err != nil {
				t.Fatal(err)
			}
		},
		stop: func() { c.Stop(syscall.SIGKILL) },
		restart: func(t *testing.T, down time.Duration) {
			c.Stop(syscall.SIGKILL)
			time.Sleep(down)
			c.Start(t)
		},
	}
}

func redisStore(t *testing.T, extra ...string) *fleetStore {
	// Persistence as the README asks of a ledger: every write fsynced to
	// the append-only file before it is acknowledged.
	r := testserver.NewRedis(t, append([]string{"--appendonly", "yes", "--appendfsync", "always"}, extra...)...)
	return &fleetStore{
		name: "redis", url: r.URL(),
		empty: func(t *testing.T) {
			opt, _ := goredis.ParseURL(r.URL())
			c := goredis.NewClient(opt)
			defer c.Close()
			if err := c.FlushDB(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
		},
		stop: func() { r.Stop(syscall.SIGKILL) },
		restart: func(t *testing.T, down time.Duration) {
			r.Stop(syscall.SIGKILL)
			time.Sleep(down)
			r.Start(t)
		},
	}
}

// eachStore runs f on PostgreSQL and on Redis.
func eachStore(t *testing.T, f func(t *testing.T, s *fleetStore)) {
	t.Run("postgres", func(t *testing.T) { f(t, pgStore(t)) })
	t.Run("redis", func(t *testing.T) { f(t, redisStore(t)) })
}

// owner is a test owner of effects on 127.0.0.1: it counts requests and
// effects per Idempotency-Key; a deduping owner applies a key's effect
// once.
type owner struct {
	dedupe   bool
	port     int
	mu       sync.Mutex
	requests map[string]int
	effects  map[string]int
}

func newOwner(t *testing.T, dedupe bool) *owner {
	o := &owner{dedupe: dedupe, requests: map[string]int{}, effects: map[string]int{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o.port = l.Addr().(*net.TCPAddr).Port
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

func (o *owner) counts() (requests, effects int) {
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

// fleet is a directory of scripts and marks shared by a test's workers.
type fleet struct {
	t   *testing.T
	dir string
	bin string
	env []string
}

func newFleet(t *testing.T, s *fleetStore, o *owner) *fleet {
	bin, err := exec.LookPath("idemkey")
	if err != nil {
		t.Fatalf("idemkey (the test binary) not on PATH: %v", err)
	}
	dir := t.TempDir()
	fl := &fleet{t: t, dir: dir, bin: bin}
	fl.env = append(os.Environ(), "IDEMKEY_LEDGER="+s.url, "NO_COLOR=1")
	if o != nil {
		fl.env = append(fl.env, fmt.Sprintf("OWNER_PORT=%d", o.port))
	}
	// effect.sh: one request to the owner with the step's key (bash's
	// /dev/tcp: no client to install).
	fl.script("effect.sh", `exec 3<>/dev/tcp/127.0.0.1/$OWNER_PORT
printf 'POST /effect HTTP/1.0\r\nHost: owner\r\nIdempotency-Key: %s\r\nContent-Length: 0\r\n\r\n' "$IDEMPOTENCY_KEY" >&3
cat <&3 >/dev/null
`)
	return fl
}

func (fl *fleet) script(name, body string) string {
	p := filepath.Join(fl.dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/bash\nset -e\n"+body), 0o755); err != nil {
		fl.t.Fatal(err)
	}
	return p
}

// worker is one idemkey run process ("a machine": its own state
// directory, so no local lock is shared).
type worker struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan struct{}
	code           int
}

func (fl *fleet) start(name string, args ...string) *worker {
	w := &worker{done: make(chan struct{})}
	w.cmd = exec.Command(fl.bin, args...)
	state := filepath.Join(fl.dir, "machine-"+name)
	// A copy: workers start concurrently, and an append to fl.env itself
	// could write into one shared array.
	w.cmd.Env = append(slices.Clip(fl.env), "XDG_STATE_HOME="+state, "HOME="+state)
	w.cmd.Dir = fl.dir
	w.cmd.Stdout, w.cmd.Stderr = &w.stdout, &w.stderr
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := w.cmd.Start(); err != nil {
		fl.t.Fatal(err)
	}
	fl.t.Cleanup(func() {
		syscall.Kill(-w.cmd.Process.Pid, syscall.SIGCONT)
		syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
		<-w.done
	})
	go func() {
		w.cmd.Wait()
		w.code = w.cmd.ProcessState.ExitCode()
		if ws, ok := w.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			w.code = 128 + int(ws.Signal())
		}
		close(w.done)
	}()
	return w
}

// wait waits for the worker's exit (failing the test after d).
func (w *worker) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-w.done:
	case <-time.After(d):
		t.Fatalf("worker %v still running after %v; stderr:\n%s", w.cmd.Args, d, w.stderr.String())
	}
	return w.code
}

// run runs one worker to its end.
func (fl *fleet) run(name string, args ...string) *worker {
	w := fl.start(name, args...)
	w.wait(fl.t, 60*time.Second)
	return w
}

// lines returns the lines of a marks file the steps append to.
func (fl *fleet) lines(name string) []string {
	b, err := os.ReadFile(filepath.Join(fl.dir, name))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		fl.t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// show is idemkey ledger show KEY --json.
func (fl *fleet) show(key string) map[string]any {
	w := fl.run("inspector", "ledger", "show", key, "--json")
	if w.code != 0 {
		fl.t.Fatalf("ledger show %s: exit %d: %s", key, w.code, w.stderr.String())
	}
	var m map[string]any
	if err := json.Unmarshal(w.stdout.Bytes(), &m); err != nil {
		fl.t.Fatalf("ledger show %s: %v\n%s", key, err, w.stdout.String())
	}
	return m
}

// keyOf is the key idemkey run derives for the step (from -v's line).
func runKeyOf(t *testing.T, w *worker) string {
	t.Helper()
	for _, l := range strings.Split(w.stderr.String(), "\n") {
		if rest, ok := strings.CutPrefix(l, "idemkey: key "); ok {
			k, _, _ := strings.Cut(rest, ",")
			return k
		}
	}
	t.Fatalf("no key in stderr (run with -v):\n%s", w.stderr.String())
	return ""
}

// TestFleetTwoMachinesOneKey: two processes that share the store and no
// kernel lock race one key: one execution; the other waits for it
// (--wait, on NOTIFY or polling) and replays its output.
func TestFleetTwoMachinesOneKey(t *testing.T) {
	eachStore(t, func(t *testing.T, s *fleetStore) {
		fl := newFleet(t, s, nil)
		step := fl.script("step.sh", `echo "$IDEMPOTENCY_KEY" >> ran; sleep 1; echo "done by attempt $IDEMPOTENCY_ATTEMPT"`)
		args := []string{"run", "--task", "t-two", "--tool", "deploy", "--wait", "30s", "--", step}
		a, b := fl.start("a", args...), fl.start("b", args...)
		ca, cb := a.wait(t, 60*time.Second), b.wait(t, 60*time.Second)
		if ca != 0 || cb != 0 {
			t.Fatalf("exits %d, %d; stderr a:\n%s\nb:\n%s", ca, cb, a.stderr.String(), b.stderr.String())
		}
		if ran := fl.lines("ran"); len(ran) != 1 {
			t.Fatalf("the step ran %d times, want 1", len(ran))
		}
		if a.stdout.String() != "done by attempt 1\n" || b.stdout.String() != a.stdout.String() {
			t.Fatalf("stdout a %q, b %q", a.stdout.String(), b.stdout.String())
		}
		if !strings.Contains(a.stderr.String()+b.stderr.String(), "replayed") {
			t.Fatalf("neither says it replayed:\n%s\n%s", a.stderr.String(), b.stderr.String())
		}
	})
}

// TestFleetRace64OneKey: 64 workers on one key: one execution; every
// other worker exits 75 (busy) or replays the result (0).
func TestFleetRace64OneKey(t *testing.T) {
	eachStore(t, func(t *testing.T, s *fleetStore) {
		fl := newFleet(t, s, nil)
		step := fl.script("step.sh", `echo "$IDEMPOTENCY_ATTEMPT" >> ran; sleep 2`)
		var ws []*worker
		for i := range 64 {
			ws = append(ws, fl.start(fmt.Sprint("m", i), "run", "-q", "--task", "t-64", "--tool", "x", "--", step))
		}
		busy := 0
		for _, w := range ws {
			switch c := w.wait(t, 120*time.Second); c {
			case 0:
			case cli.ExitBusy:
				busy++
			default:
				t.Fatalf("a worker exited %d:\n%s", c, w.stderr.String())
			}
		}
		if ran := fl.lines("ran"); len(ran) != 1 {
			t.Fatalf("the step ran %d times among 64 workers, want 1", len(ran))
		}
		if busy == 0 {
			t.Fatalf("no worker found the key busy: the race did not happen")
		}
	})
}

// TestFleetDistinctKeys: 16 workers on 500 distinct keys: each key's step
// runs once; a second pass over a sample replays.
func TestFleetDistinctKeys(t *testing.T) {
	eachStore(t, func(t *testing.T, s *fleetStore) {
		fl := newFleet(t, s, nil)
		step := fl.script("step.sh", `echo "$IDEMPOTENCY_KEY" >> ran`)
		const keys, workers = 500, 16
		next := make(chan int)
		go func() {
			for i := range keys {
				next <- i
			}
			close(next)
		}()
		var wg sync.WaitGroup
		var mu sync.Mutex
		var failed []string
		for m := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					w := fl.run(fmt.Sprint("m", m), "run", "--task", fmt.Sprint("t-", i), "--tool", "x", "--", step)
					if w.code != 0 {
						mu.Lock()
						failed = append(failed, fmt.Sprintf("key %d: exit %d: %s", i, w.code, w.stderr.String()))
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		if len(failed) > 0 {
			t.Fatalf("%d steps failed; first: %s", len(failed), failed[0])
		}
		ran := fl.lines("ran")
		seen := map[string]int{}
		for _, k := range ran {
			seen[k]++
		}
		if len(ran) != keys || len(seen) != keys {
			t.Fatalf("%d executions of %d distinct keys, want %d of %d", len(ran), len(seen), keys, keys)
		}
		for i := 0; i < keys; i += 50 {
			if w := fl.run("again", "run", "-q", "--task", fmt.Sprint("t-", i), "--tool", "x", "--", step); w.code != 0 {
				t.Fatalf("second pass, key %d: exit %d", i, w.code)
			}
		}
		if n := len(fl.lines("ran")); n != keys {
			t.Fatalf("the second pass ran steps again: %d executions", n)
		}
	})
}

// TestFleetLeaseExpiry: the holder stopped (SIGSTOP) past its 2 s lease:
// a second worker takes over as attempt 2 (--recover retry); on SIGCONT
// the first holder's renewal is rejected, its command is killed and it
// exits 76; attempt 2's record stays; the deduping owner saw two requests
// with one key and applied one effect.
func TestFleetLeaseExpiry(t *testing.T) {
	eachStore(t, func(t *testing.T, s *fleetStore) {
		o := newOwner(t, true)
		fl := newFleet(t, s, o)
		step := fl.script("step.sh", `./effect.sh
echo "start $IDEMPOTENCY_ATTEMPT" >> ran
if [ "$IDEMPOTENCY_ATTEMPT" = 1 ]; then sleep 30; else sleep 0.5; fi
echo "done-$IDEMPOTENCY_ATTEMPT" >> ran
echo "attempt $IDEMPOTENCY_ATTEMPT finished"`)
		args := []string{"run", "-v", "--task", "t-lease", "--tool", "pay", "--lease", "2s", "--recover", "retry", "--", step}
		a := fl.start("a", args...)
		waitFor(t, 10*time.Second, func() bool { return len(fl.lines("ran")) > 0 })
		// Only idemkey stops: its command (own process group) runs on.
		if err := syscall.Kill(a.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		// Before the lease runs out on the store's clock, the key is busy.
		if w := fl.run("b0", args...); w.code != cli.ExitBusy {
			t.Fatalf("while the lease is live: exit %d, want 75:\n%s", w.code, w.stderr.String())
		}
		time.Sleep(2500 * time.Millisecond)
		b := fl.run("b", args...)
		if b.code != 0 || b.stdout.String() != "attempt 2 finished\n" {
			t.Fatalf("takeover: exit %d, stdout %q:\n%s", b.code, b.stdout.String(), b.stderr.String())
		}
		syscall.Kill(a.cmd.Process.Pid, syscall.SIGCONT)
		if c := a.wait(t, 20*time.Second); c != cli.ExitUnknown {
			t.Fatalf("first holder after SIGCONT: exit %d, want 76:\n%s", c, a.stderr.String())
		}
		if !strings.Contains(a.stderr.String(), "lease lost") {
			t.Fatalf("first holder's stderr does not say its lease was lost:\n%s", a.stderr.String())
		}
		time.Sleep(300 * time.Millisecond)
		ran := strings.Join(fl.lines("ran"), " ")
		if ran != "start 1 start 2 done-2" {
			t.Fatalf("marks %q: want attempt 1 killed before it finished, attempt 2 done", ran)
		}
		rec := fl.show(runKeyOf(t, a))
		if rec["state"] != "succeeded" || rec["attempt"] != float64(2) {
			t.Fatalf("record after the first holder's end: %v", rec)
		}
		if req, eff := o.counts(); req != 2 || eff != 1 {
			t.Fatalf("owner: %d requests, %d effects; want 2 and 1", req, eff)
		}
	})
}

func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met after %v", d)
		}
	}
}

// TestFleetStoreRestart: the store crashes (SIGKILL) and restarts while a
// step runs: the outcome is recorded, or reported as unknown; never lost
// (the step would run again) and never succeeded when it failed.
func TestFleetStoreRestart(t *testing.T) {
	eachStore(t, func(t *testing.T, s *fleetStore) {
		for _, tc := range []struct {
			name, body string
			code       int
			state      string
		}{
			{"succeeds", `echo x >> ran; sleep 2; echo fine`, 0, "succeeded"},
			{"fails", `echo x >> ran; sleep 2; exit 3`, 3, "failed"},
		} {
			fl := newFleet(t, s, nil)
			step := fl.script(tc.name+".sh", tc.body)
			args := []string{"run", "-v", "--task", "t-restart", "--tool", tc.name, "--lease", "3s", "--", step}
			w := fl.start("a", args...)
			waitFor(t, 10*time.Second, func() bool { return len(fl.lines("ran")) > 0 })
			s.restart(t, 500*time.Millisecond)
			code := w.wait(t, 30*time.Second)
			rec := fl.show(runKeyOf(t, w))
			switch {
			case code == tc.code && rec["state"] == tc.state:
				// Recorded across the restart.
			case code == cli.ExitUnknown || rec["state"] == "unknown" || rec["state"] == "running":
				// Reported unknown (a running record whose lease ran out is
				// unknown to the next claim).
			default:
				t.Fatalf("%s: exit %d, record %v: want exit %d and %s, or unknown\n%s", tc.name, code, rec, tc.code, tc.state, w.stderr.String())
			}
			if rec["state"] == "succeeded" && tc.state != "succeeded" {
				t.Fatalf("%s: recorded as succeeded", tc.name)
			}
			// The step is not run again as if it had never run.
			again := fl.run("b", append([]string{"run", "-q", "--replay-failed"}, args[2:]...)...)
			if n := len(fl.lines("ran")); n != 1 {
				t.Fatalf("%s: the step ran %d times (second run exit %d)", tc.name, n, again.code)
			}
		}
	})
}

// TestFleetStoreLost: the store goes away for good during a step: the
// renewals fail, and when the lease runs out the holder treats it as lost:
// it kills its command and exits 76 (it never reports success).
func TestFleetStoreLost(t *testing.T) {
	eachStore(t, func(t *testing.T, s *fleetStore) {
		fl := newFleet(t, s, nil)
		step := fl.script("step.sh", `echo started >> ran; sleep 20; echo finished >> ran`)
		w := fl.start("a", "run", "--task", "t-lost", "--tool", "x", "--lease", "2s", "--", step)
		waitFor(t, 10*time.Second, func() bool { return len(fl.lines("ran")) > 0 })
		s.stop()
		t0 := time.Now()
		if c := w.wait(t, 30*time.Second); c != cli.ExitUnknown {
			t.Fatalf("exit %d, want 76:\n%s", c, w.stderr.String())
		}
		if d := time.Since(t0); d > 15*time.Second {
			t.Fatalf("the lease was treated as lost only after %v", d)
		}
		if !strings.Contains(w.stderr.String(), "lease lost") {
			t.Fatalf("stderr does not say the lease was lost:\n%s", w.stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
		if ran := strings.Join(fl.lines("ran"), " "); ran != "started" {
			t.Fatalf("marks %q: the command was not killed", ran)
		}
	})
}

// TestFleetLedgerEmptied: the ledger emptied between two runs (TRUNCATE,
// FLUSHDB): the step runs again, and the deduping owner still applies one
// effect: the ledger is a cache in front of the owner's dedupe.
func TestFleetLedgerEmptied(t *testing.T) {
	eachStore(t, func(t *testing.T, s *fleetStore) {
		o := newOwner(t, true)
		fl := newFleet(t, s, o)
		step := fl.script("step.sh", `./effect.sh; echo x >> ran`)
		args := []string{"run", "-q", "--task", "t-empty", "--tool", "charge", "--", step}
		fl.run("a", args...)
		if w := fl.run("a", args...); w.code != 0 || len(fl.lines("ran")) != 1 {
			t.Fatalf("replay: exit %d, ran %d", w.code, len(fl.lines("ran")))
		}
		s.empty(t)
		if w := fl.run("b", args...); w.code != 0 {
			t.Fatalf("after emptying: exit %d: %s", w.code, w.stderr.String())
		}
		if n := len(fl.lines("ran")); n != 2 {
			t.Fatalf("after emptying the ledger the step ran %d times in all, want 2", n)
		}
		if req, eff := o.counts(); req != 2 || eff != 1 {
			t.Fatalf("owner: %d requests, %d effects; want 2 and 1", req, eff)
		}
	})
}

// TestFleetUnreachable: a store that does not answer: the command never
// runs, one clear error without the password, exit 125.
func TestFleetUnreachable(t *testing.T) {
	port, err := testserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	for _, url := range []string{
		fmt.Sprintf("postgres://worker:s3cret-pw@127.0.0.1:%d/db?connect_timeout=3", port),
		fmt.Sprintf("postgres://worker@127.0.0.1:%d/db?password=s3cret-pw&connect_timeout=3", port),
		fmt.Sprintf("redis://:s3cret-pw@127.0.0.1:%d/0", port),
	} {
		fl := newFleet(t, &fleetStore{url: url}, nil)
		step := fl.script("step.sh", `echo x >> ran`)
		w := fl.run("a", "run", "-v", "--task", "t", "--tool", "x", "--", step)
		if w.code != cli.ExitRunFailed {
			t.Fatalf("%s: exit %d, want 125:\n%s", url, w.code, w.stderr.String())
		}
		if len(fl.lines("ran")) != 0 {
			t.Fatalf("%s: the command ran without its claim recorded", url)
		}
		errs := w.stderr.String()
		if strings.Contains(errs, "s3cret") || !strings.Contains(errs, "idemkey: error: ") || !strings.Contains(errs, "cannot reach the ledger") || w.stdout.Len() != 0 {
			t.Fatalf("%s: stderr:\n%s\nstdout %q", url, errs, w.stdout.String())
		}
	}
}

// TestFleetRedisEviction: a Redis whose maxmemory-policy may evict keys:
// run warns on stderr and still runs the step.
func TestFleetRedisEviction(t *testing.T) {
	s := redisStore(t, "--maxmemory-policy", "allkeys-lru")
	fl := newFleet(t, s, nil)
	step := fl.script("step.sh", `echo x >> ran; echo out`)
	w := fl.run("a", "run", "--task", "t", "--tool", "x", "--", step)
	if w.code != 0 || w.stdout.String() != "out\n" {
		t.Fatalf("exit %d, stdout %q", w.code, w.stdout.String())
	}
	if !strings.Contains(w.stderr.String(), "idemkey: warning: ") || !strings.Contains(w.stderr.String(), "maxmemory-policy is allkeys-lru") {
		t.Fatalf("no eviction warning:\n%s", w.stderr.String())
	}
	// noeviction: no warning, and run adds nothing to the command's stderr.
	s2 := redisStore(t)
	fl2 := newFleet(t, s2, nil)
	w = fl2.run("a", "run", "--task", "t", "--tool", "x", "--", fl2.script("step.sh", `echo out`))
	if w.code != 0 || w.stderr.Len() != 0 {
		t.Fatalf("noeviction: exit %d, stderr %q", w.code, w.stderr.String())
	}
}

// TestFleetPostgresSimpleProtocol: a ledger URL in simple-protocol mode
// (as behind PgBouncer in transaction mode): run, replay, busy and the
// ledger commands work, and the table is made by ledger init.
func TestFleetPostgresSimpleProtocol(t *testing.T) {
	s := pgStore(t)
	// (trust authentication ignores the password: it is there to be hidden)
	s.url += "&default_query_exec_mode=simple_protocol&table=fleet_steps&password=s3cret-pw"
	fl := newFleet(t, s, nil)
	if w := fl.run("a", "ledger", "init"); w.code != 0 || !strings.Contains(w.stderr.String(), "schema version 2") {
		t.Fatalf("ledger init: exit %d: %s", w.code, w.stderr.String())
	}
	step := fl.script("step.sh", `echo x >> ran; echo "attempt $IDEMPOTENCY_ATTEMPT"`)
	args := []string{"run", "-v", "--task", "t-simple", "--tool", "x", "--", step}
	first := fl.run("a", args...)
	second := fl.run("b", args...)
	if first.code != 0 || second.code != 0 || second.stdout.String() != "attempt 1\n" || len(fl.lines("ran")) != 1 {
		t.Fatalf("run then replay: exits %d %d, stdout %q, ran %d\n%s", first.code, second.code, second.stdout.String(), len(fl.lines("ran")), second.stderr.String())
	}
	rec := fl.show(runKeyOf(t, first))
	if rec["state"] != "succeeded" || rec["attempt"] != float64(1) {
		t.Fatalf("record %v", rec)
	}
	if errs := first.stderr.String() + second.stderr.String(); strings.Contains(errs, "s3cret") || !strings.Contains(errs, "password=xxxxx") {
		t.Fatalf("-v shows the ledger URL unredacted:\n%s", errs)
	}
	w := fl.run("c", "ledger", "ls", "--task", "t-simple", "--json")
	if w.code != 0 || !strings.Contains(w.stdout.String(), runKeyOf(t, first)) {
		t.Fatalf("ledger ls: exit %d: %s %s", w.code, w.stdout.String(), w.stderr.String())
	}
}

// TestFleetTLS: sslmode is honoured (a server that rejects plain TCP:
// sslmode=disable fails, verify-full against the server's CA works, and
// against another CA fails), and rediss:// speaks TLS, verifying the
// server against the CAs Go trusts (SSL_CERT_FILE adds one).
func TestFleetTLS(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		c, cert := testserver.NewPostgresTLS(t)
		url := c.CreateDB(t)
		base, _, _ := strings.Cut(url, "?")
		other := otherCA(t)
		for _, tc := range []struct {
			query string
			code  int
		}{
			{"sslmode=verify-full&sslrootcert=" + cert.CA, 0},
			{"sslmode=require", 0},
			{"sslmode=disable", cli.ExitRunFailed},
			{"sslmode=verify-full&sslrootcert=" + other, cli.ExitRunFailed},
		} {
			fl := newFleet(t, &fleetStore{url: base + "?" + tc.query}, nil)
			w := fl.run("a", "run", "--task", "t-tls", "--tool", "x", "--", fl.script("step.sh", "echo x >> ran"))
			if w.code != tc.code || (tc.code == 0) != (len(fl.lines("ran")) == 1) {
				t.Errorf("%s: exit %d (want %d), ran %d: %s", tc.query, w.code, tc.code, len(fl.lines("ran")), w.stderr.String())
			}
		}
	})
	t.Run("redis", func(t *testing.T) {
		r, cert := testserver.NewRedisTLS(t)
		plain := strings.Replace(r.URL(), "rediss://", "redis://", 1)
		for _, tc := range []struct {
			url, certFile string
			code          int
		}{
			{r.URL(), cert.CA, 0},
			{r.URL(), otherCA(t), cli.ExitRunFailed},
			{plain, cert.CA, cli.ExitRunFailed},
		} {
			fl := newFleet(t, &fleetStore{url: tc.url}, nil)
			fl.env = append(fl.env, "SSL_CERT_FILE="+tc.certFile)
			w := fl.run("a", "run", "--task", "t-tls", "--tool", "x", "--", fl.script("step.sh", "echo x >> ran"))
			if w.code != tc.code || (tc.code == 0) != (len(fl.lines("ran")) == 1) {
				t.Errorf("%s with %s: exit %d (want %d), ran %d: %s", tc.url, tc.certFile, w.code, tc.code, len(fl.lines("ran")), w.stderr.String())
			}
		}
	})
}

// otherCA is a CA file that did not sign the test servers' certificates.
func otherCA(t *testing.T) string {
	return testserver.SelfSigned(t, t.TempDir()).CA
}

// TestFleetPostLedger: post --ledger=URL on two machines: the second
// replays the saved response, and the owner sees one request.
func TestFleetPostLedger(t *testing.T) {
	eachStore(t, func(t *testing.T, s *fleetStore) {
		o := newOwner(t, false)
		fl := newFleet(t, s, o)
		args := []string{"post", fmt.Sprintf("http://127.0.0.1:%d/pay", o.port), "--task", "t-post", "--tool", "pay",
			"-d", `{"amount":100}`, "--ledger=" + s.url}
		a := fl.run("a", args...)
		b := fl.run("b", args...)
		if a.code != 0 || b.code != 0 || a.stdout.String() != "ok\n" || b.stdout.String() != "ok\n" {
			t.Fatalf("exits %d %d, stdout %q %q:\n%s", a.code, b.code, a.stdout.String(), b.stdout.String(), b.stderr.String())
		}
		if !strings.Contains(b.stderr.String(), "replayed from the ledger") {
			t.Fatalf("second post did not replay:\n%s", b.stderr.String())
		}
		if req, _ := o.counts(); req != 1 {
			t.Fatalf("owner saw %d requests, want 1", req)
		}
	})
}
