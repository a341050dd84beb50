package redis_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd"
	"github.com/idemkey/idemkey/derive/ledger/testserver"
)

// The fleet tests run idemkey as separate processes (this test binary,
// acting as idemkey when asIdemkey is set) against Redis servers of their
// own: a cluster of three primaries and three replicas, a primary with a
// replica, a single server.

const asIdemkey = "IDEMKEY_TEST_REDIS_AS_IDEMKEY"

func TestMain(m *testing.M) {
	if os.Getenv(asIdemkey) == "1" {
		os.Exit(cmd.Run())
	}
	os.Exit(testserver.Main(m))
}

type fleet struct {
	t   *testing.T
	dir string
	url string
	bin string // the idemkey to run: this test binary, or an older build
}

func newFleet(t *testing.T, url string) *fleet {
	return &fleet{t: t, dir: t.TempDir(), url: url, bin: os.Args[0]}
}

type result struct {
	code           int
	stdout, stderr string
}

func (f *fleet) command(args ...string) *exec.Cmd {
	c := exec.Command(f.bin, args...)
	c.Dir = f.dir
	c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + f.dir, "XDG_STATE_HOME=" + f.dir, "XDG_CONFIG_HOME=" + f.dir,
		"LC_ALL=C", asIdemkey + "=1"}
	return c
}

func (f *fleet) wait(c *exec.Cmd) result {
	var out, errb bytes.Buffer
	if c.Stdout == nil {
		c.Stdout, c.Stderr = &out, &errb
	}
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		f.t.Fatalf("%v: %v", c.Args, err)
	}
	return result{code, out.String(), errb.String()}
}

func (f *fleet) run(args ...string) result { return f.wait(f.command(args...)) }

// step runs step i: a line "i" appended to effects.
func (f *fleet) step(i int, extra ...string) result {
	args := append([]string{"run", "--ledger", f.url, "--task", "t" + strconv.Itoa(i), "--tool", "effect"}, extra...)
	return f.run(append(args, "--", "sh", "-c", "echo "+strconv.Itoa(i)+" >> effects")...)
}

// effects counts the lines of effects by step.
func (f *fleet) effects() map[string]int {
	b, err := os.ReadFile(filepath.Join(f.dir, "effects"))
	if err != nil && !os.IsNotExist(err) {
		f.t.Fatal(err)
	}
	m := map[string]int{}
	for _, l := range strings.Fields(string(b)) {
		m[l]++
	}
	return m
}

// ls returns the keys ledger ls lists, with their states.
func (f *fleet) ls() map[string]string {
	r := f.run("ledger", "ls", "--ledger", f.url, "--json")
	if r.code != 0 {
		f.t.Fatalf("ledger ls: exit %d: %s", r.code, r.stderr)
	}
	keys := map[string]string{}
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	for dec.More() {
		var v any
		if err := dec.Decode(&v); err != nil {
			f.t.Fatalf("ledger ls --json: %v\n%s", err, r.stdout)
		}
		var recs []any
		if a, ok := v.([]any); ok {
			recs = a
		} else {
			recs = []any{v}
		}
		for _, rec := range recs {
			if m, ok := rec.(map[string]any); ok {
				keys[fmt.Sprint(m["key"])] = fmt.Sprint(m["state"])
			}
		}
	}
	return keys
}

// parallel runs f(i) for i in [0, n) on workers goroutines.
func parallel(n, workers int, f func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// fleetCluster is a Redis Cluster of three primaries, each with a replica
// (claims wait for it: replicas=auto), every node with an append-only
// file synced at each write.
func fleetCluster(t *testing.T) *testserver.RedisCluster {
	if testing.Short() {
		t.Skip("a cluster of six servers and a few hundred processes")
	}
	return testserver.NewRedisCluster(t, 3, 1, "--appendonly", "yes", "--appendfsync", "always")
}

// TestClusterFleet: on a fleetCluster, 200 distinct steps spread over
// every shard run once each and ledger ls lists them all; 20 workers
// racing one key make one effect.
func TestClusterFleet(t *testing.T) {
	t.Parallel()
	c := fleetCluster(t)
	t.Run("DistinctSteps", func(t *testing.T) {
		f := newFleet(t, c.URL())
		const n = 200
		codes := make([]result, n)
		parallel(n, 8, func(i int) { codes[i] = f.step(i) })
		for i, r := range codes {
			if r.code != 0 {
				t.Fatalf("step %d: exit %d: %s", i, r.code, r.stderr)
			}
			if strings.Contains(r.stderr, "warning") {
				t.Fatalf("step %d warned: %s", i, r.stderr)
			}
		}
		eff := f.effects()
		for i := range n {
			if eff[strconv.Itoa(i)] != 1 {
				t.Fatalf("step %d ran %d times", i, eff[strconv.Itoa(i)])
			}
		}
		if keys := f.ls(); len(keys) != n {
			t.Fatalf("ledger ls lists %d records, want %d", len(keys), n)
		}
		for _, p := range c.Primaries() {
			if n, _ := strconv.Atoi(strings.SplitN(strings.TrimPrefix(p.Info(t, "keyspace")["db0"], "keys="), ",", 2)[0]); n < 20 {
				t.Errorf("primary %s holds %d keys: the steps are not spread over the shards", p.Addr(), n)
			}
		}
		// Run again: every one replays.
		parallel(20, 4, func(i int) {
			if r := f.step(i); r.code != 0 || !strings.Contains(r.stderr, "replayed") {
				t.Errorf("step %d again: exit %d: %s", i, r.code, r.stderr)
			}
		})
		if eff := f.effects(); len(eff) != n || eff["0"] != 1 {
			t.Fatalf("effects after the replays: %v", eff)
		}
		// show, forget and gc reach every shard.
		var first string
		for k := range f.ls() {
			r := f.run("ledger", "show", "--ledger", f.url, "--json", k)
			if r.code != 0 || !strings.Contains(r.stdout, `"succeeded"`) {
				t.Fatalf("ledger show %s: exit %d: %s%s", k, r.code, r.stdout, r.stderr)
			}
			first = k
			break
		}
		if r := f.run("ledger", "forget", "--ledger", f.url, first); r.code != 0 {
			t.Fatalf("ledger forget: exit %d: %s", r.code, r.stderr)
		}
		if keys := f.ls(); len(keys) != n-1 {
			t.Fatalf("after forget: %d records, want %d", len(keys), n-1)
		}
		if r := f.run("ledger", "gc", "--ledger", f.url, "--older-than", "1ms"); r.code != 0 || !strings.Contains(r.stdout+r.stderr, "removed "+strconv.Itoa(n-1)+" records") {
			t.Fatalf("ledger gc: exit %d: %s%s", r.code, r.stdout, r.stderr)
		}
		if keys := f.ls(); len(keys) != 0 {
			t.Fatalf("after gc: %d records", len(keys))
		}
	})
	t.Run("RaceOneKey", func(t *testing.T) {
		f := newFleet(t, c.URL())
		const n = 20
		var cmds []*exec.Cmd
		outs := make([]*bytes.Buffer, n)
		// Each worker waits for the file go before claiming: they start
		// together.
		for i := range n {
			c := f.command("run", "--ledger", f.url, "--task", "race", "--tool", "effect", "--", "sh", "-c", "echo race >> effects; sleep 1")
			c.Args = append([]string{"sh", "-c", `while [ ! -e go ]; do sleep 0.01; done; exec "$0" "$@"`, c.Path}, c.Args[1:]...)
			c.Path = "/bin/sh"
			outs[i] = &bytes.Buffer{}
			c.Stdout, c.Stderr = outs[i], outs[i]
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			cmds = append(cmds, c)
		}
		os.WriteFile(filepath.Join(f.dir, "go"), nil, 0o644)
		ran := 0
		for i, c := range cmds {
			err := c.Wait()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			switch {
			case code == 0 && !strings.Contains(outs[i].String(), "replayed"):
				ran++
			case code == 0, code == 75:
			default:
				t.Errorf("worker %d: exit %d: %s", i, code, outs[i])
			}
		}
		if eff := f.effects(); eff["race"] != 1 || ran != 1 {
			t.Fatalf("20 workers on one key: %d effects, %d ran; want 1", eff["race"], ran)
		}
	})
}

// TestClusterFleetPrimaryKilled: on a fleetCluster of its own (it runs
// beside TestClusterFleet), a primary killed (kill -9) and its replica
// promoted mid-fleet: every step finished before is replayed, and none
// runs twice.
func TestClusterFleetPrimaryKilled(t *testing.T) {
	t.Parallel()
	c := fleetCluster(t)
	f := newFleet(t, c.URL())
	const n = 90
	type done struct {
		r   result
		end time.Time
	}
	results := make([]done, n)
	var killedAt time.Time
	var once sync.Once
	finished := make(chan struct{}, n)
	go func() {
		for range n / 3 {
			<-finished
		}
		once.Do(func() {
			victim := c.Primaries()[0]
			killedAt = time.Now()
			// Steps that ended before this moment are on the replica
			// (the wait for its offset): their completions were not
			// waited for, and one made in the instant before a kill
			// is lost to the failover as unknown, never run again.
			c.KillAndPromote(victim, true)
		})
	}()
	parallel(n, 8, func(i int) {
		r := f.step(i)
		results[i] = done{r, time.Now()}
		finished <- struct{}{}
	})
	once.Do(func() {})
	if killedAt.IsZero() {
		t.Fatal("no primary was killed")
	}
	c.WaitOK()
	again := make([]result, n)
	parallel(n, 8, func(i int) { again[i] = f.step(i) })
	before := 0
	for i, r := range again {
		if d := results[i]; d.r.code == 0 && d.end.Before(killedAt) {
			before++
			if r.code != 0 || !strings.Contains(r.stderr, "replayed") {
				t.Errorf("step %d finished before the failover, then: exit %d: %s", i, r.code, r.stderr)
			}
		}
	}
	for k, v := range f.effects() {
		if v > 1 {
			t.Errorf("step %s ran %d times", k, v)
		}
	}
	if before < n/3 {
		t.Errorf("only %d steps finished before the failover", before)
	}
	t.Logf("%d steps finished before the failover; first runs across it: %v", before, summarize(results, func(d done) int { return d.r.code }))
}

func summarize[T any](xs []T, code func(T) int) map[int]int {
	m := map[int]int{}
	for _, x := range xs {
		m[code(x)]++
	}
	return m
}

// TestReplicaFrozen: a primary whose replica is frozen (SIGSTOP): a
// claim is not acknowledged within replica_timeout, so it is withdrawn
// and the step does not start (exit 75, saying how many replicas
// acknowledged); once the replica is back and the primary killed and the
// replica promoted, the step runs exactly once in total, and replays.
func TestReplicaFrozen(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a primary, a frozen replica and a failover")
	}
	p := testserver.NewRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	r := testserver.NewRedisReplica(t, p, "--appendonly", "yes", "--appendfsync", "always")
	f := newFleet(t, p.URL()+"?replica_timeout=2s")
	if res := f.step(1); res.code != 0 || res.stderr != "" {
		t.Fatalf("with the replica up: exit %d: %s", res.code, res.stderr)
	}
	r.Signal(syscall.SIGSTOP)
	res := f.step(2)
	r.Signal(syscall.SIGCONT)
	if res.code != 75 || !strings.Contains(res.stderr, "could not be made durable") || !strings.Contains(res.stderr, "0 of 1 replica(s) acknowledged it within 2s") || !strings.Contains(res.stderr, "withdrawn") {
		t.Fatalf("with the replica frozen: exit %d: %s", res.code, res.stderr)
	}
	if eff := f.effects(); eff["2"] != 0 {
		t.Fatalf("the unconfirmed step ran: %v", eff)
	}
	// A fresh key's withdrawn claim leaves no record.
	if keys := f.ls(); len(keys) != 1 {
		t.Fatalf("ledger ls after the withdrawal: %v, want step 1's record only", keys)
	}
	// A takeover withdrawn puts back the record it took over: a failed
	// step's retry, not acknowledged, leaves it failed.
	failing := []string{"run", "--ledger", f.url, "--task", "t3", "--tool", "effect", "--", "sh", "-c", "echo 3 >> effects; exit 3"}
	if res := f.run(failing...); res.code != 3 {
		t.Fatalf("failing step: exit %d: %s", res.code, res.stderr)
	}
	r.Signal(syscall.SIGSTOP)
	res = f.run(failing...)
	r.Signal(syscall.SIGCONT)
	if res.code != 75 || !strings.Contains(res.stderr, "could not be made durable") {
		t.Fatalf("retry with the replica frozen: exit %d: %s", res.code, res.stderr)
	}
	states := map[string]int{}
	for _, st := range f.ls() {
		states[st]++
	}
	if eff := f.effects(); eff["3"] != 1 || states["failed"] != 1 || states["succeeded"] != 1 || len(states) != 2 {
		t.Fatalf("after the withdrawn retry: effects %v, states %v; want the failed record back, the step run once", eff, states)
	}
	r.WaitCaughtUp(t, p)
	p.Stop(syscall.SIGKILL)
	if err := r.Client(t).Do(context.Background(), "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	f.url = r.URL()
	if res := f.step(2); res.code != 0 {
		t.Fatalf("on the promoted replica: exit %d: %s", res.code, res.stderr)
	}
	for _, i := range []int{1, 2} {
		if res := f.step(i); res.code != 0 || !strings.Contains(res.stderr, "replayed") {
			t.Fatalf("step %d on the promoted replica: exit %d: %s", i, res.code, res.stderr)
		}
	}
	if eff := f.effects(); eff["1"] != 1 || eff["2"] != 1 || eff["3"] != 1 {
		t.Fatalf("effects: %v, want each step once", eff)
	}
}

// TestTTLNeverRerunsUnknown: with ttl=, a holder killed mid-step (kill
// -9, and its step) leaves an unknown record that never expires: runs
// long after lease plus ttl read it as unknown (76), and the step ran
// once. The server has no persistence: each run warns, once, what a
// restart loses.
func TestTTLNeverRerunsUnknown(t *testing.T) {
	t.Parallel()
	srv := testserver.NewRedis(t)
	f := newFleet(t, srv.URL()+"?ttl=1s")
	c := f.command("run", "--ledger", f.url, "--lease", "1s", "--task", "t", "--tool", "effect", "--", "sh", "-c", "echo $$ > step.pid; echo x >> effects; exec sleep 60")
	var errb bytes.Buffer
	c.Stderr = &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	testserver.WaitFor(t, 30*time.Second, "the step to start", func() bool { return f.effects()["x"] == 1 })
	b, _ := os.ReadFile(filepath.Join(f.dir, "step.pid"))
	stepPid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	c.Process.Kill()
	c.Wait()
	if stepPid > 0 {
		syscall.Kill(stepPid, syscall.SIGKILL)
	}
	if n := strings.Count(errb.String(), "no persistence (appendonly no, no save)"); n != 1 {
		t.Fatalf("the no-persistence warning %d times:\n%s", n, errb.String())
	}
	step := func() result {
		return f.run("run", "--ledger", f.url, "--lease", "1s", "--task", "t", "--tool", "effect", "--", "sh", "-c", "echo $$ > step.pid; echo x >> effects; exec sleep 60")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := step()
		if r.code == 76 {
			break
		}
		if r.code != 75 || time.Now().After(deadline) {
			t.Fatalf("after the kill: exit %d: %s", r.code, r.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Time is what this is about: lease plus ttl, three times over.
	time.Sleep(3 * time.Second)
	if r := step(); r.code != 76 || !strings.Contains(r.stderr, "outcome unknown") {
		t.Fatalf("3 s past lease and ttl: exit %d: %s", r.code, r.stderr)
	}
	if eff := f.effects(); eff["x"] != 1 {
		t.Fatalf("the step ran %d times", eff["x"])
	}
}

// beforeTokens is the last commit of this repository before claim tokens:
// its idemkey compares attempt and state only, and keeps the earlier
// layout (PREFIX r:KEY, a sorted set PREFIX index).
const beforeTokens = "989bdc7212480fbe9051d46de65dfa45bd55996a"

// TestOlderBinaryLockedOut: an idemkey from before claim tokens, left in
// a fleet whose ledger a newer idemkey opened (and so moved to its
// layout), can neither claim (a fresh key, or one that succeeded), nor
// forget, nor list; its holder paused across the upgrade, resumed after
// a newer worker took the key over, cannot renew or complete over that
// claim. The newer idemkey replays what the older one recorded.
func TestOlderBinaryLockedOut(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds an older idemkey")
	}
	old := testserver.Idemkey(t, beforeTokens)
	srv := testserver.NewRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	nf := newFleet(t, srv.URL())
	of := &fleet{t: t, dir: nf.dir, url: nf.url, bin: old}
	if r := of.step(1); r.code != 0 {
		t.Fatalf("older idemkey, step 1: exit %d: %s", r.code, r.stderr)
	}
	// The older holder of step 2, paused mid-step.
	holder := of.command("run", "--ledger", of.url, "--lease", "1s", "--task", "t2", "--tool", "effect", "--",
		"sh", "-c", "touch started2; while [ ! -e go2 ]; do sleep 0.05; done")
	var herr bytes.Buffer
	holder.Stderr = &herr
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	testserver.WaitFor(t, 30*time.Second, "the older holder's step to start", func() bool {
		_, err := os.Stat(filepath.Join(nf.dir, "started2"))
		return err == nil
	})
	holder.Process.Signal(syscall.SIGSTOP)

	// The newer idemkey: the older record replays.
	if r := nf.step(1); r.code != 0 || !strings.Contains(r.stderr, "replayed") {
		t.Fatalf("newer idemkey, step 1 recorded by the older: exit %d: %s", r.code, r.stderr)
	}
	recs := nf.ls()
	var key1, key2 string
	for k, st := range recs {
		switch st {
		case "succeeded":
			key1 = k
		case "running", "unknown":
			key2 = k
		}
	}
	if len(recs) != 2 || key1 == "" || key2 == "" {
		t.Fatalf("ledger ls after the upgrade: %v", recs)
	}
	// The older idemkey is locked out.
	if r := of.step(3); r.code == 0 || of.effects()["3"] != 0 {
		t.Fatalf("older idemkey claimed a fresh key: exit %d: %s", r.code, r.stderr)
	}
	if r := of.step(1); r.code == 0 || of.effects()["1"] != 1 {
		t.Fatalf("older idemkey on step 1: exit %d, effects %v: %s", r.code, of.effects(), r.stderr)
	}
	if r := of.run("ledger", "forget", "--ledger", of.url, key1); r.code == 0 {
		t.Fatalf("older ledger forget: exit 0: %s", r.stderr)
	}
	if r := of.run("ledger", "ls", "--ledger", of.url); r.code == 0 {
		t.Fatalf("older ledger ls: exit 0: %s", r.stdout)
	}
	if r := nf.step(1); r.code != 0 || !strings.Contains(r.stderr, "replayed") {
		t.Fatalf("step 1 after the older forget: exit %d: %s", r.code, r.stderr)
	}
	// A newer worker takes step 2 over once the paused holder's lease ran
	// out; the older holder, resumed, cannot complete over it.
	// The newer worker's run of the same step must not wait: go2 is there
	// for it, and the paused holder is still stopped.
	os.WriteFile(filepath.Join(nf.dir, "go2"), nil, 0o644)
	var took result
	testserver.WaitFor(t, 30*time.Second, "the newer worker's takeover of step 2", func() bool {
		took = nf.run("run", "--ledger", nf.url, "--recover", "retry", "--task", "t2", "--tool", "effect", "--",
			"sh", "-c", "touch started2; while [ ! -e go2 ]; do sleep 0.05; done")
		return took.code != 75
	})
	if took.code != 0 {
		t.Fatalf("newer worker on step 2: exit %d: %s", took.code, took.stderr)
	}
	holder.Process.Signal(syscall.SIGCONT)
	// Its command was running already; what matters is that its outcome
	// is not recorded over the newer claim's.
	if err := holder.Wait(); err == nil && !strings.Contains(herr.String(), "was not recorded") {
		t.Fatalf("the older holder recorded its outcome: exit 0: %s", herr.String())
	}
	r := nf.run("ledger", "show", "--ledger", nf.url, "--json", key2)
	var rec map[string]any
	if json.Unmarshal([]byte(r.stdout), &rec) != nil || rec["state"] != "succeeded" || fmt.Sprint(rec["attempt"]) != "2" {
		t.Fatalf("step 2's record after the older holder resumed: %s %s", r.stdout, r.stderr)
	}
}
