package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/idemkey/idemkey/derive/ledger/testserver"
)

// cli runs idemkey binaries in a hermetic environment of the test's own.
type cli struct {
	t   *testing.T
	bin string
	env []string
	dir string
}

func newCLI(t *testing.T, bin string) *cli {
	dir := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "XDG_STATE_HOME=" + dir + "/state",
		"XDG_CONFIG_HOME=" + dir + "/config", "XDG_CACHE_HOME=" + dir + "/cache", "NO_COLOR=1", "LC_ALL=C",
		"EFFECTS=" + filepath.Join(dir, "effects"), "DIR=" + dir}
	return &cli{t: t, bin: bin, env: env, dir: dir}
}

type result struct {
	code           int
	stdout, stderr string
}

// cmd is the idemkey command with args, and more environment.
func (c *cli) cmd(env []string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	cmd := exec.Command(c.bin, args...)
	cmd.Env = append(append([]string{}, c.env...), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	return cmd, &out, &errb
}

func (c *cli) run(env []string, args ...string) result {
	c.t.Helper()
	cmd, out, errb := c.cmd(env, args...)
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		c.t.Fatalf("%s: %v", args, err)
	}
	return result{cmd.ProcessState.ExitCode(), out.String(), errb.String()}
}

// script writes an executable shell script into the CLI's directory.
func (c *cli) script(name, body string) string {
	p := filepath.Join(c.dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		c.t.Fatal(err)
	}
	return p
}

// lines is the file's lines (none if it is missing).
func (c *cli) lines(name string) []string {
	b, _ := os.ReadFile(filepath.Join(c.dir, name))
	return strings.Fields(string(b))
}

// waitFile waits up to a minute for the file to exist.
func (c *cli) waitFile(name string) {
	c.t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(c.dir, name)); err == nil {
			return
		}
	}
	c.t.Fatalf("%s never appeared", name)
}

func (c *cli) touch(name string) {
	if err := os.WriteFile(filepath.Join(c.dir, name), nil, 0o644); err != nil {
		c.t.Fatal(err)
	}
}

func dbName(t *testing.T, url string) string {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Database
}

func count(lines []string, s string) int {
	n := 0
	for _, l := range lines {
		if l == s {
			n++
		}
	}
	return n
}

// TestDroppedTableCreatedAgain: a ledger table dropped while its marks'
// table stays is created again by the next store that finds it missing,
// by a store already open, and by Init; Schema of a missing table is an
// error, not "version 1"; and through the command line, `run` runs and
// `ledger init` says ready only with the table there.
func TestDroppedTableCreatedAgain(t *testing.T) {
	t.Parallel()
	url := testserver.Postgres(t)
	ctx := context.Background()
	conn := connect(t, url)
	s := open(t, url)
	rec := func(key string) *ledger.Record {
		return &ledger.Record{Key: key, Kind: "run", State: ledger.Running, Attempt: 1, StartedAt: time.Now(), ExitCode: ledger.NoExit}
	}
	if ok, err := s.Insert(ctx, rec("k1"), time.Minute); !ok || err != nil {
		t.Fatal(ok, err)
	}
	drop := func() {
		t.Helper()
		if _, err := conn.Exec(ctx, `DROP TABLE idemkey_ledger`); err != nil {
			t.Fatal(err)
		}
	}
	drop()
	if ok, err := open(t, url).Insert(ctx, rec("k2"), time.Minute); !ok || err != nil {
		t.Fatalf("a new store's claim after the table was dropped: %v %v", ok, err)
	}
	drop()
	if ok, err := s.Insert(ctx, rec("k3"), time.Minute); !ok || err != nil {
		t.Fatalf("an open store's claim after the table was dropped: %v %v", ok, err)
	}
	drop()
	if _, err := s.Schema(ctx); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Schema of a dropped table: %v, want an error wrapping fs.ErrNotExist", err)
	}
	if err := open(t, url).Init(ctx); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Schema(ctx); err != nil || v != 3 {
		t.Fatalf("after Init: schema %d %v", v, err)
	}

	c := newCLI(t, idemkey(t, ""))
	drop()
	r := c.run(nil, "ledger", "init", "--ledger", url)
	var exists bool
	conn.QueryRow(ctx, `SELECT to_regclass('idemkey_ledger') IS NOT NULL`).Scan(&exists)
	if r.code != 0 || !strings.Contains(r.stderr, "ledger ready") || !strings.Contains(r.stderr, "(schema version 3)") || !exists {
		t.Fatalf("ledger init after a drop: exit %d, %q; table there: %v", r.code, r.stderr, exists)
	}
	drop()
	step := c.script("step.sh", `echo ran >> "$EFFECTS"`+"\n")
	if r := c.run(nil, "run", "--ledger", url, "--task", "t", "--tool", "x", "--", step); r.code != 0 || len(c.lines("effects")) != 1 {
		t.Fatalf("run after a drop: exit %d, %q; effects %q", r.code, r.stderr, c.lines("effects"))
	}
}

// TestFailoverMultiHost: a primary with a synchronous streaming standby,
// reached through a multi-host URL with target_session_attrs=read-write.
// Eight steps finish and a ninth is running when the primary stops (-m
// immediate) and the standby is promoted: the URL follows it, the ninth
// completes there, every finished step replays, none runs twice, and the
// ledger commands work on the promoted standby.
func TestFailoverMultiHost(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a primary, a standby and a failover")
	}
	p := testserver.NewPostgres(t)
	db := dbName(t, p.CreateDB(t))
	sb := p.NewStandby(t, "standby1")
	// Set after the base backup: the promoted standby has no synchronous
	// standby of its own to wait for.
	p.SetSynchronousStandbys(t, "standby1")
	p.WaitStandby(t, "standby1", "sync")
	url := testserver.MultiHostURL(db, p, sb)
	c := newCLI(t, idemkey(t, ""))

	r := c.run(nil, "ledger", "init", "--ledger", url)
	if r.code != 0 || !strings.Contains(r.stderr, "ledger ready") || strings.Contains(r.stderr, "warning") {
		t.Fatalf("ledger init through the multi-host URL: exit %d, %q", r.code, r.stderr)
	}
	step := c.script("step.sh", `echo "$1" >> "$EFFECTS"; echo "out $1"`+"\n")
	const n = 8
	for i := 0; i < n; i++ {
		r := c.run(nil, "run", "--ledger", url, "--task", "fo", "--tool", "step", "--", step, strconv.Itoa(i))
		if r.code != 0 || r.stdout != fmt.Sprintf("out %d\n", i) || strings.Contains(r.stderr, "warning") {
			t.Fatalf("step %d: exit %d, %q, %q", i, r.code, r.stdout, r.stderr)
		}
	}
	// A step running across the failover: its lease (long enough for a
	// slow promotion) is renewed on the promoted standby, and it
	// completes there.
	long := c.script("long.sh", `touch "$DIR/started"; while [ ! -e "$DIR/go" ]; do sleep 0.05; done; echo long >> "$EFFECTS"; echo "out long"`+"\n")
	inflight, out, errb := c.cmd(nil, "run", "--lease", "60s", "--ledger", url, "--task", "fo", "--tool", "long", "--", long)
	if err := inflight.Start(); err != nil {
		t.Fatal(err)
	}
	c.waitFile("started")

	p.Stop(syscall.SIGQUIT) // immediate shutdown: no checkpoint, clients cut off
	sb.Promote(t)
	c.touch("go")
	if err := inflight.Wait(); err != nil || out.String() != "out long\n" {
		t.Fatalf("the step running across the failover: %v, %q, %q", err, out, errb)
	}

	for i := 0; i < n; i++ {
		r := c.run(nil, "run", "--ledger", url, "--task", "fo", "--tool", "step", "--", step, strconv.Itoa(i))
		if r.code != 0 || r.stdout != fmt.Sprintf("out %d\n", i) {
			t.Fatalf("step %d after the failover: exit %d, %q, %q (want its replay)", i, r.code, r.stdout, r.stderr)
		}
	}
	if r := c.run(nil, "run", "--ledger", url, "--task", "fo", "--tool", "long", "--", long); r.code != 0 || r.stdout != "out long\n" {
		t.Fatalf("the long step after the failover: exit %d, %q, %q", r.code, r.stdout, r.stderr)
	}
	effects := c.lines("effects")
	for i := 0; i < n; i++ {
		if k := count(effects, strconv.Itoa(i)); k != 1 {
			t.Fatalf("step %d ran %d times: %q", i, k, effects)
		}
	}
	if k := count(effects, "long"); k != 1 {
		t.Fatalf("the long step ran %d times", k)
	}

	// The ledger commands reach the promoted standby too.
	r = c.run(nil, "ledger", "ls", "--json", "--ledger", url)
	var recs []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &recs); r.code != 0 || err != nil || len(recs) != n+1 {
		t.Fatalf("ledger ls after the failover: exit %d, %d records, %q", r.code, len(recs), r.stderr)
	}
	for _, m := range recs {
		if m["state"] != "succeeded" {
			t.Fatalf("after the failover: %v", m)
		}
	}
	key, _ := recs[0]["key"].(string)
	for _, args := range [][]string{{"ledger", "show", key}, {"ledger", "gc", "--older-than", "1h"}, {"ledger", "init"}} {
		if r := c.run(nil, append(args, "--ledger", url)...); r.code != 0 {
			t.Fatalf("%s after the failover: exit %d, %q", args, r.code, r.stderr)
		}
	}
}

// TestAsyncStandbyWarning: with a standby that replicates asynchronously,
// `ledger init` and `run` warn (run once), naming synchronous_standby_names;
// with it set to the standby, no warning, and a claim waits for the
// standby's flush even where the database sets synchronous_commit to
// local; cleared again, the warning is back.
func TestAsyncStandbyWarning(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a primary and an asynchronous standby")
	}
	p := testserver.NewPostgres(t)
	url := p.CreateDB(t)
	sb := p.NewStandby(t, "standby1")
	p.WaitStandby(t, "standby1", "async")
	c := newCLI(t, idemkey(t, ""))
	const warning = "the primary's standby standby1 replicates asynchronously (synchronous_standby_names is empty)"
	step := c.script("step.sh", "true\n")
	check := func(want bool) {
		t.Helper()
		r := c.run(nil, "ledger", "init", "--ledger", url)
		if r.code != 0 || strings.Contains(r.stderr, warning) != want || want && !strings.Contains(r.stderr, "set synchronous_standby_names") {
			t.Fatalf("ledger init: exit %d, %q; want the warning: %v", r.code, r.stderr, want)
		}
		r = c.run(nil, "run", "--ledger", url, "--task", fmt.Sprint(time.Now().UnixNano()), "--tool", "x", "--", step)
		if k := strings.Count(r.stderr, warning); r.code != 0 || want && k != 1 || !want && k != 0 {
			t.Fatalf("run: exit %d, %q; want the warning: %v (once)", r.code, r.stderr, want)
		}
	}
	check(true)
	// The check rides in the first claim's round trip, a batch: in the
	// simple protocol too (one multi-statement query).
	if r := c.run(nil, "run", "--ledger", url+"&default_query_exec_mode=simple_protocol", "--task", "simple", "--tool", "x", "--", step); r.code != 0 || strings.Count(r.stderr, warning) != 1 {
		t.Fatalf("run in the simple protocol: exit %d, %q", r.code, r.stderr)
	}
	// A role that may not read pg_stat_replication's details is warned
	// too: it sees the standby's row, without its sync_state.
	p.Query(t, `CREATE ROLE plain LOGIN`)
	plain := open(t, strings.Replace(url, "postgres@", "plain@", 1))
	if w, err := plain.ReplicationWarning(context.Background()); err != nil || !strings.Contains(w, "replicates asynchronously") {
		t.Fatalf("ReplicationWarning for a role without pg_read_all_stats: %q %v", w, err)
	}

	p.SetSynchronousStandbys(t, "*")
	p.WaitStandby(t, "standby1", "sync")
	check(false)

	// A claim is durable on the synchronous standby before it returns,
	// whatever the database's default: with the standby's WAL receiver
	// stopped, it waits.
	p.Query(t, `ALTER DATABASE `+dbName(t, url)+` SET synchronous_commit = local`)
	s := open(t, url)
	ctx := context.Background()
	walrcv := sb.Query(t, `SELECT pid FROM pg_stat_wal_receiver`)
	pid, err := strconv.Atoi(walrcv)
	if err != nil {
		t.Fatalf("the standby's WAL receiver: %q", walrcv)
	}
	syscall.Kill(pid, syscall.SIGSTOP)
	claimed := make(chan error, 1)
	go func() {
		r := &ledger.Record{Key: "durable", Kind: "run", State: ledger.Running, Attempt: 1, StartedAt: time.Now(), ExitCode: ledger.NoExit}
		ok, err := s.Insert(ctx, r, time.Minute)
		if err == nil && !ok {
			err = errors.New("not inserted")
		}
		claimed <- err
	}()
	select {
	case err := <-claimed:
		syscall.Kill(pid, syscall.SIGCONT)
		t.Fatalf("a claim returned (%v) while the synchronous standby could not flush it", err)
	case <-time.After(time.Second):
	}
	syscall.Kill(pid, syscall.SIGCONT)
	if err := <-claimed; err != nil {
		t.Fatal(err)
	}

	p.SetSynchronousStandbys(t, "")
	p.WaitStandby(t, "standby1", "async")
	check(true)
	if w, err := s.ReplicationWarning(ctx); err != nil || !strings.Contains(w, warning) {
		t.Fatalf("ReplicationWarning: %q %v", w, err)
	}
}
