package run_test

// Fleet tests: idemkey run in real processes sharing one PostgreSQL or
// Redis ledger (no kernel lock between them, as on separate machines),
// against real servers on loopback that the tests start and stop
// (derive/ledger/testserver), and a test owner on 127.0.0.1 that
// counts effects per Idempotency-Key.

import (
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/derive/ledger/testserver"
)

// TestFleetTwoMachinesOneKey: two processes that share the store and no
// kernel lock race one key: one execution; the other waits for it
// (--wait, on NOTIFY or polling) and replays its output.
func TestFleetTwoMachinesOneKey(t *testing.T) {
	t.Parallel()
	clitest.EachStore(t, func(t *testing.T, s *clitest.Store) {
		fl := clitest.NewFleet(t, s, nil)
		step := fl.Script("step.sh", `echo "$IDEMPOTENCY_KEY" >> ran; sleep 1; echo "done by attempt $IDEMPOTENCY_ATTEMPT"`)
		args := []string{"run", "--task", "t-two", "--tool", "deploy", "--wait", "30s", "--", step}
		a, b := fl.Start("a", args...), fl.Start("b", args...)
		ca, cb := a.Wait(t, 60*time.Second), b.Wait(t, 60*time.Second)
		if ca != 0 || cb != 0 {
			t.Fatalf("exits %d, %d; stderr a:\n%s\nb:\n%s", ca, cb, a.Stderr.String(), b.Stderr.String())
		}
		if ran := fl.Lines("ran"); len(ran) != 1 {
			t.Fatalf("the step ran %d times, want 1", len(ran))
		}
		if a.Stdout.String() != "done by attempt 1\n" || b.Stdout.String() != a.Stdout.String() {
			t.Fatalf("stdout a %q, b %q", a.Stdout.String(), b.Stdout.String())
		}
		if !strings.Contains(a.Stderr.String()+b.Stderr.String(), "replayed") {
			t.Fatalf("neither says it replayed:\n%s\n%s", a.Stderr.String(), b.Stderr.String())
		}
	})
}

// TestFleetRace64OneKey: 64 workers on one key: one execution; every
// other worker exits 75 (busy) or replays the result (0).
func TestFleetRace64OneKey(t *testing.T) {
	t.Parallel()
	clitest.EachStore(t, func(t *testing.T, s *clitest.Store) {
		fl := clitest.NewFleet(t, s, nil)
		step := fl.Script("step.sh", `echo "$IDEMPOTENCY_ATTEMPT" >> ran; sleep 2`)
		var ws []*clitest.Worker
		for i := range 64 {
			ws = append(ws, fl.Start(fmt.Sprint("m", i), "run", "-q", "--task", "t-64", "--tool", "x", "--", step))
		}
		busy := 0
		for _, w := range ws {
			switch c := w.Wait(t, 120*time.Second); c {
			case 0:
			case cli.ExitBusy:
				busy++
			default:
				t.Fatalf("a worker exited %d:\n%s", c, w.Stderr.String())
			}
		}
		if ran := fl.Lines("ran"); len(ran) != 1 {
			t.Fatalf("the step ran %d times among 64 workers, want 1", len(ran))
		}
		if busy == 0 {
			t.Fatalf("no worker found the key busy: the race did not happen")
		}
	})
}

// TestFleetDistinctKeys: 16 workers on 160 distinct keys (10 each, every
// one a process of its own): each key's step runs once; a second pass
// over a sample replays.
func TestFleetDistinctKeys(t *testing.T) {
	t.Parallel()
	clitest.EachStore(t, func(t *testing.T, s *clitest.Store) {
		fl := clitest.NewFleet(t, s, nil)
		step := fl.Script("step.sh", `echo "$IDEMPOTENCY_KEY" >> ran`)
		const keys, workers = 160, 16
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
					w := fl.Run(fmt.Sprint("m", m), "run", "--task", fmt.Sprint("t-", i), "--tool", "x", "--", step)
					if w.Code != 0 {
						mu.Lock()
						failed = append(failed, fmt.Sprintf("key %d: exit %d: %s", i, w.Code, w.Stderr.String()))
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		if len(failed) > 0 {
			t.Fatalf("%d steps failed; first: %s", len(failed), failed[0])
		}
		ran := fl.Lines("ran")
		seen := map[string]int{}
		for _, k := range ran {
			seen[k]++
		}
		if len(ran) != keys || len(seen) != keys {
			t.Fatalf("%d executions of %d distinct keys, want %d of %d", len(ran), len(seen), keys, keys)
		}
		for i := 0; i < keys; i += 16 {
			if w := fl.Run("again", "run", "-q", "--task", fmt.Sprint("t-", i), "--tool", "x", "--", step); w.Code != 0 {
				t.Fatalf("second pass, key %d: exit %d", i, w.Code)
			}
		}
		if n := len(fl.Lines("ran")); n != keys {
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
	t.Parallel()
	clitest.EachStore(t, func(t *testing.T, s *clitest.Store) {
		o := clitest.NewOwner(t, true)
		fl := clitest.NewFleet(t, s, o)
		step := fl.Script("step.sh", `./effect.sh
echo "start $IDEMPOTENCY_ATTEMPT" >> ran
if [ "$IDEMPOTENCY_ATTEMPT" = 1 ]; then sleep 30; else sleep 0.5; fi
echo "done-$IDEMPOTENCY_ATTEMPT" >> ran
echo "attempt $IDEMPOTENCY_ATTEMPT finished"`)
		// A lease long enough that the busy check below ends before it
		// runs out on a loaded machine; the takeover waits for it.
		args := []string{"run", "-v", "--task", "t-lease", "--tool", "pay", "--lease", "5s", "--recover", "retry", "--", step}
		a := fl.Start("a", args...)
		clitest.WaitFor(t, 10*time.Second, func() bool { return len(fl.Lines("ran")) > 0 })
		// Only idemkey stops: its command (own process group) runs on.
		if err := syscall.Kill(a.Cmd.Process.Pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		// Before the lease runs out on the store's clock, the key is busy.
		if w := fl.Run("b0", args...); w.Code != cli.ExitBusy {
			t.Fatalf("while the lease is live: exit %d, want 75:\n%s", w.Code, w.Stderr.String())
		}
		// Once the lease has run out on the store's clock, a second worker
		// takes over (until then each try is refused, 75, and runs nothing).
		b := fl.Run("b", args...)
		for deadline := time.Now().Add(30 * time.Second); b.Code == cli.ExitBusy && time.Now().Before(deadline); {
			time.Sleep(200 * time.Millisecond)
			b = fl.Run("b", args...)
		}
		if b.Code != 0 || b.Stdout.String() != "attempt 2 finished\n" {
			t.Fatalf("takeover: exit %d, stdout %q:\n%s", b.Code, b.Stdout.String(), b.Stderr.String())
		}
		syscall.Kill(a.Cmd.Process.Pid, syscall.SIGCONT)
		if c := a.Wait(t, 20*time.Second); c != cli.ExitUnknown {
			t.Fatalf("first holder after SIGCONT: exit %d, want 76:\n%s", c, a.Stderr.String())
		}
		if !strings.Contains(a.Stderr.String(), "lease lost") {
			t.Fatalf("first holder's stderr does not say its lease was lost:\n%s", a.Stderr.String())
		}
		time.Sleep(300 * time.Millisecond)
		ran := strings.Join(fl.Lines("ran"), " ")
		if ran != "start 1 start 2 done-2" {
			t.Fatalf("marks %q: want attempt 1 killed before it finished, attempt 2 done", ran)
		}
		rec := fl.Show(clitest.RunKeyOf(t, a))
		if rec["state"] != "succeeded" || rec["attempt"] != float64(2) {
			t.Fatalf("record after the first holder's end: %v", rec)
		}
		if req, eff := o.Counts(); req != 2 || eff != 1 {
			t.Fatalf("owner: %d requests, %d effects; want 2 and 1", req, eff)
		}
	})
}

// TestFleetStoreRestart: the store crashes (SIGKILL) and restarts while a
// step runs: the outcome is recorded, or reported as unknown; never lost
// (the step would run again) and never succeeded when it failed.
func TestFleetStoreRestart(t *testing.T) {
	t.Parallel()
	clitest.EachOwnStore(t, func(t *testing.T, s *clitest.Store) {
		for _, tc := range []struct {
			name, body string
			code       int
			state      string
		}{
			{"succeeds", `echo x >> ran; sleep 2; echo fine`, 0, "succeeded"},
			{"fails", `echo x >> ran; sleep 2; exit 3`, 3, "failed"},
		} {
			fl := clitest.NewFleet(t, s, nil)
			step := fl.Script(tc.name+".sh", tc.body)
			args := []string{"run", "-v", "--task", "t-restart", "--tool", tc.name, "--lease", "3s", "--", step}
			w := fl.Start("a", args...)
			clitest.WaitFor(t, 10*time.Second, func() bool { return len(fl.Lines("ran")) > 0 })
			s.Restart(t, 500*time.Millisecond)
			code := w.Wait(t, 30*time.Second)
			rec := fl.Show(clitest.RunKeyOf(t, w))
			switch {
			case code == tc.code && rec["state"] == tc.state:
				// Recorded across the restart.
			case code == cli.ExitUnknown || rec["state"] == "unknown" || rec["state"] == "running":
				// Reported unknown (a running record whose lease ran out is
				// unknown to the next claim).
			default:
				t.Fatalf("%s: exit %d, record %v: want exit %d and %s, or unknown\n%s", tc.name, code, rec, tc.code, tc.state, w.Stderr.String())
			}
			if rec["state"] == "succeeded" && tc.state != "succeeded" {
				t.Fatalf("%s: recorded as succeeded", tc.name)
			}
			// The step is not run again as if it had never run.
			again := fl.Run("b", append([]string{"run", "-q", "--replay-failed"}, args[2:]...)...)
			if n := len(fl.Lines("ran")); n != 1 {
				t.Fatalf("%s: the step ran %d times (second run exit %d)", tc.name, n, again.Code)
			}
		}
	})
}

// TestFleetStoreLost: the store goes away for good during a step: the
// renewals fail, and when the lease runs out the holder treats it as lost:
// it kills its command and exits 76 (it never reports success).
func TestFleetStoreLost(t *testing.T) {
	t.Parallel()
	clitest.EachOwnStore(t, func(t *testing.T, s *clitest.Store) {
		fl := clitest.NewFleet(t, s, nil)
		step := fl.Script("step.sh", `echo started >> ran; sleep 20; echo finished >> ran`)
		w := fl.Start("a", "run", "--task", "t-lost", "--tool", "x", "--lease", "2s", "--", step)
		clitest.WaitFor(t, 10*time.Second, func() bool { return len(fl.Lines("ran")) > 0 })
		s.Stop()
		t0 := time.Now()
		if c := w.Wait(t, 30*time.Second); c != cli.ExitUnknown {
			t.Fatalf("exit %d, want 76:\n%s", c, w.Stderr.String())
		}
		if d := time.Since(t0); d > 15*time.Second {
			t.Fatalf("the lease was treated as lost only after %v", d)
		}
		if !strings.Contains(w.Stderr.String(), "lease lost") {
			t.Fatalf("stderr does not say the lease was lost:\n%s", w.Stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
		if ran := strings.Join(fl.Lines("ran"), " "); ran != "started" {
			t.Fatalf("marks %q: the command was not killed", ran)
		}
	})
}

// TestFleetLedgerEmptied: the ledger emptied between two runs (TRUNCATE,
// FLUSHDB): the step runs again, and the deduping owner still applies one
// effect: the ledger is a cache in front of the owner's dedupe.
func TestFleetLedgerEmptied(t *testing.T) {
	t.Parallel()
	clitest.EachStore(t, func(t *testing.T, s *clitest.Store) {
		o := clitest.NewOwner(t, true)
		fl := clitest.NewFleet(t, s, o)
		step := fl.Script("step.sh", `./effect.sh; echo x >> ran`)
		args := []string{"run", "-q", "--task", "t-empty", "--tool", "charge", "--", step}
		fl.Run("a", args...)
		if w := fl.Run("a", args...); w.Code != 0 || len(fl.Lines("ran")) != 1 {
			t.Fatalf("replay: exit %d, ran %d", w.Code, len(fl.Lines("ran")))
		}
		s.Empty(t)
		if w := fl.Run("b", args...); w.Code != 0 {
			t.Fatalf("after emptying: exit %d: %s", w.Code, w.Stderr.String())
		}
		if n := len(fl.Lines("ran")); n != 2 {
			t.Fatalf("after emptying the ledger the step ran %d times in all, want 2", n)
		}
		if req, eff := o.Counts(); req != 2 || eff != 1 {
			t.Fatalf("owner: %d requests, %d effects; want 2 and 1", req, eff)
		}
	})
}

// TestFleetUnreachable: a store that does not answer: the command never
// runs, one clear error without the password, exit 125.
func TestFleetUnreachable(t *testing.T) {
	t.Parallel()
	port, err := testserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	for _, url := range []string{
		fmt.Sprintf("postgres://worker:s3cret-pw@127.0.0.1:%d/db?connect_timeout=3", port),
		fmt.Sprintf("postgres://worker@127.0.0.1:%d/db?password=s3cret-pw&connect_timeout=3", port),
		fmt.Sprintf("redis://:s3cret-pw@127.0.0.1:%d/0", port),
	} {
		fl := clitest.NewFleet(t, &clitest.Store{URL: url}, nil)
		step := fl.Script("step.sh", `echo x >> ran`)
		w := fl.Run("a", "run", "-v", "--task", "t", "--tool", "x", "--", step)
		if w.Code != cli.ExitRunFailed {
			t.Fatalf("%s: exit %d, want 125:\n%s", url, w.Code, w.Stderr.String())
		}
		if len(fl.Lines("ran")) != 0 {
			t.Fatalf("%s: the command ran without its claim recorded", url)
		}
		errs := w.Stderr.String()
		if strings.Contains(errs, "s3cret") || !strings.Contains(errs, "idemkey: error: ") || !strings.Contains(errs, "cannot reach the ledger") || w.Stdout.Len() != 0 {
			t.Fatalf("%s: stderr:\n%s\nstdout %q", url, errs, w.Stdout.String())
		}
	}
}

// TestFleetRedisEviction: a Redis whose maxmemory-policy may evict keys:
// run warns on stderr and still runs the step.
func TestFleetRedisEviction(t *testing.T) {
	t.Parallel()
	s := clitest.RedisStore(t, "--maxmemory-policy", "allkeys-lru")
	fl := clitest.NewFleet(t, s, nil)
	step := fl.Script("step.sh", `echo x >> ran; echo out`)
	w := fl.Run("a", "run", "--task", "t", "--tool", "x", "--", step)
	if w.Code != 0 || w.Stdout.String() != "out\n" {
		t.Fatalf("exit %d, stdout %q", w.Code, w.Stdout.String())
	}
	if !strings.Contains(w.Stderr.String(), "idemkey: warning: ") || !strings.Contains(w.Stderr.String(), "maxmemory-policy is allkeys-lru") {
		t.Fatalf("no eviction warning:\n%s", w.Stderr.String())
	}
	// noeviction: no warning, and run adds nothing to the command's stderr.
	s2 := clitest.RedisStore(t)
	fl2 := clitest.NewFleet(t, s2, nil)
	w = fl2.Run("a", "run", "--task", "t", "--tool", "x", "--", fl2.Script("step.sh", `echo out`))
	if w.Code != 0 || w.Stderr.Len() != 0 {
		t.Fatalf("noeviction: exit %d, stderr %q", w.Code, w.Stderr.String())
	}
}

// TestFleetPostgresSimpleProtocol: a ledger URL in simple-protocol mode
// (as behind PgBouncer in transaction mode): run, replay, busy and the
// ledger commands work, and the table is made by ledger init.
func TestFleetPostgresSimpleProtocol(t *testing.T) {
	t.Parallel()
	s := clitest.PGStore(t)
	// (trust authentication ignores the password: it is there to be hidden)
	s.URL += "&default_query_exec_mode=simple_protocol&table=fleet_steps&password=s3cret-pw"
	fl := clitest.NewFleet(t, s, nil)
	if w := fl.Run("a", "ledger", "init"); w.Code != 0 || !strings.Contains(w.Stderr.String(), "schema version 3") {
		t.Fatalf("ledger init: exit %d: %s", w.Code, w.Stderr.String())
	}
	step := fl.Script("step.sh", `echo x >> ran; echo "attempt $IDEMPOTENCY_ATTEMPT"`)
	args := []string{"run", "-v", "--task", "t-simple", "--tool", "x", "--", step}
	first := fl.Run("a", args...)
	second := fl.Run("b", args...)
	if first.Code != 0 || second.Code != 0 || second.Stdout.String() != "attempt 1\n" || len(fl.Lines("ran")) != 1 {
		t.Fatalf("run then replay: exits %d %d, stdout %q, ran %d\n%s", first.Code, second.Code, second.Stdout.String(), len(fl.Lines("ran")), second.Stderr.String())
	}
	rec := fl.Show(clitest.RunKeyOf(t, first))
	if rec["state"] != "succeeded" || rec["attempt"] != float64(1) {
		t.Fatalf("record %v", rec)
	}
	if errs := first.Stderr.String() + second.Stderr.String(); strings.Contains(errs, "s3cret") || !strings.Contains(errs, "password=xxxxx") {
		t.Fatalf("-v shows the ledger URL unredacted:\n%s", errs)
	}
	w := fl.Run("c", "ledger", "ls", "--task", "t-simple", "--json")
	if w.Code != 0 || !strings.Contains(w.Stdout.String(), clitest.RunKeyOf(t, first)) {
		t.Fatalf("ledger ls: exit %d: %s %s", w.Code, w.Stdout.String(), w.Stderr.String())
	}
}

// TestFleetTLS: sslmode is honoured (a server that rejects plain TCP:
// sslmode=disable fails, verify-full against the server's CA works, and
// against another CA fails), and rediss:// speaks TLS, verifying the
// server against the CAs Go trusts (SSL_CERT_FILE adds one).
func TestFleetTLS(t *testing.T) {
	t.Parallel()
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
			fl := clitest.NewFleet(t, &clitest.Store{URL: base + "?" + tc.query}, nil)
			w := fl.Run("a", "run", "--task", "t-tls", "--tool", "x", "--", fl.Script("step.sh", "echo x >> ran"))
			if w.Code != tc.code || (tc.code == 0) != (len(fl.Lines("ran")) == 1) {
				t.Errorf("%s: exit %d (want %d), ran %d: %s", tc.query, w.Code, tc.code, len(fl.Lines("ran")), w.Stderr.String())
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
			fl := clitest.NewFleet(t, &clitest.Store{URL: tc.url}, nil)
			fl.Env = append(fl.Env, "SSL_CERT_FILE="+tc.certFile)
			w := fl.Run("a", "run", "--task", "t-tls", "--tool", "x", "--", fl.Script("step.sh", "echo x >> ran"))
			if w.Code != tc.code || (tc.code == 0) != (len(fl.Lines("ran")) == 1) {
				t.Errorf("%s with %s: exit %d (want %d), ran %d: %s", tc.url, tc.certFile, w.Code, tc.code, len(fl.Lines("ran")), w.Stderr.String())
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
	t.Parallel()
	clitest.EachStore(t, func(t *testing.T, s *clitest.Store) {
		o := clitest.NewOwner(t, false)
		fl := clitest.NewFleet(t, s, o)
		args := []string{"post", fmt.Sprintf("http://127.0.0.1:%d/pay", o.Port), "--task", "t-post", "--tool", "pay",
			"-d", `{"amount":100}`, "--ledger=" + s.URL}
		a := fl.Run("a", args...)
		b := fl.Run("b", args...)
		if a.Code != 0 || b.Code != 0 || a.Stdout.String() != "ok\n" || b.Stdout.String() != "ok\n" {
			t.Fatalf("exits %d %d, stdout %q %q:\n%s", a.Code, b.Code, a.Stdout.String(), b.Stdout.String(), b.Stderr.String())
		}
		if !strings.Contains(b.Stderr.String(), "replayed from the ledger") {
			t.Fatalf("second post did not replay:\n%s", b.Stderr.String())
		}
		if req, _ := o.Counts(); req != 1 {
			t.Fatalf("owner saw %d requests, want 1", req)
		}
	})
}
