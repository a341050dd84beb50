package ledger_test

// The ledger subcommands on the three stores: a SQLite file, and PostgreSQL
// and Redis servers on loopback (derive/ledger/testserver). Records are
// written through the store itself where a test needs times a step could
// not give them (a record ten days old).

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/idemkey/idemkey/derive/ledger/postgres"
	"github.com/idemkey/idemkey/derive/ledger/redis"
	"github.com/idemkey/idemkey/derive/ledger/sqlite"
	"github.com/idemkey/idemkey/derive/ledger/stores"
)

// ledgerStore is one ledger under test: its spec for --ledger, and the
// store opened directly.
type ledgerStore struct {
	spec  string
	store ledger.Store
}

// eachLedgerStore runs f on a new SQLite file, PostgreSQL database and Redis
// server.
func eachLedgerStore(t *testing.T, f func(t *testing.T, s *ledgerStore)) {
	ctx := context.Background()
	open := func(t *testing.T, spec string, st ledger.Store, err error) *ledgerStore {
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return &ledgerStore{spec: spec, store: st}
	}
	t.Run("sqlite", func(t *testing.T) {
		spec := filepath.Join(t.TempDir(), "ledger.db")
		st, err := sqlite.Open(ctx, spec, sqlite.Options{})
		f(t, open(t, spec, st, err))
	})
	if testing.Short() {
		return
	}
	t.Run("postgres", func(t *testing.T) {
		spec := clitest.PGStore(t).URL
		st, err := postgres.Open(ctx, spec, postgres.Options{})
		f(t, open(t, spec, st, err))
	})
	t.Run("redis", func(t *testing.T) {
		spec := clitest.RedisStore(t).URL
		st, err := redis.Open(ctx, spec, redis.Options{})
		f(t, open(t, spec, st, err))
	})
}

type ledgerResult struct {
	code           int
	stdout, stderr string
}

// ledger runs idemkey ledger ARGS… in-process on the store, with env as
// the whole environment (and IDEMKEY_LEDGER set to the store).
func (s *ledgerStore) ledger(t *testing.T, env map[string]string, args ...string) ledgerResult {
	t.Helper()
	getenv := func(k string) string {
		if k == "IDEMKEY_LEDGER" {
			return s.spec
		}
		if k == "HOME" {
			return t.TempDir()
		}
		return env[k]
	}
	o := clitest.Streams{Getenv: getenv}.Run(t, append([]string{"ledger"}, args...)...)
	return ledgerResult{o.Code, o.Stdout, o.Stderr}
}

// put writes a finished record that ended age ago.
func (s *ledgerStore) put(t *testing.T, key string, state ledger.State, age time.Duration) {
	t.Helper()
	end := time.Now().Add(-age)
	rec := &ledger.Record{Key: key, Task: "t1", Tool: "x", Kind: "run", Fingerprint: "f", Request: []byte("{}"),
		State: state, Attempt: 1, Holder: "h pid 1", ExitCode: 0, StartedAt: end.Add(-time.Second), EndedAt: end}
	if state != ledger.Succeeded {
		rec.ExitCode = 1
	}
	ctx := context.Background()
	if ok, err := s.store.Insert(ctx, rec, time.Minute); err != nil || !ok {
		t.Fatalf("insert %s: %v %v", key, ok, err)
	}
	// PostgreSQL and Redis age a record on their own clock, from their
	// time of its last write: set that too.
	var err error
	switch st := s.store.(type) {
	case *postgres.Store:
		var conn *pgx.Conn
		if conn, err = pgx.Connect(ctx, s.spec); err == nil {
			_, err = conn.Exec(ctx, `UPDATE `+st.Table()+` SET stored_at = $2 WHERE key = $1`, key, end)
			conn.Close(ctx)
		}
	case *redis.Store:
		err = st.Client().HSet(ctx, st.RecordKey(key), "stored", end.UnixMicro()).Err()
	}
	if err != nil {
		t.Fatalf("backdate %s: %v", key, err)
	}
}

func (r ledgerResult) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		t.Fatalf("not one JSON object (exit %d): %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	return m
}

// TestLedgerGCFollowsRetention: gc without --older-than removes what
// run ignores (its --retain: flag, IDEMKEY_RETAIN or the config file),
// not a fixed 7 days; show's and ls's "expired" follow it too. With
// IDEMKEY_RETAIN=30d, gc removed a ten-day-old record that run would
// still replay, so the step ran again.
func TestLedgerGCFollowsRetention(t *testing.T) {
	eachLedgerStore(t, func(t *testing.T, s *ledgerStore) {
		s.put(t, "k10d", ledger.Succeeded, 10*24*time.Hour)
		s.put(t, "k40d", ledger.Succeeded, 40*24*time.Hour)
		month := map[string]string{"IDEMKEY_RETAIN": "30d"}
		if m := s.ledger(t, month, "show", "k10d", "--json").json(t); m["expired"] != false {
			t.Errorf("retain 30d: a ten-day-old record shows expired=%v", m["expired"])
		}
		if m := s.ledger(t, month, "show", "k40d", "--json").json(t); m["expired"] != true {
			t.Errorf("retain 30d: a forty-day-old record shows expired=%v", m["expired"])
		}
		if r := s.ledger(t, month, "show", "k10d"); strings.Contains(r.stdout, "expired") {
			t.Errorf("retain 30d: show says a ten-day-old record is expired:\n%s", r.stdout)
		}
		if r := s.ledger(t, month, "gc", "--json"); r.code != 0 || r.stdout != "{\"removed\":1}\n" {
			t.Fatalf("gc with IDEMKEY_RETAIN=30d: exit %d, %q, want the forty-day-old record removed only\n%s", r.code, r.stdout, r.stderr)
		}
		if r := s.ledger(t, nil, "show", "k10d"); r.code != 0 {
			t.Fatalf("the ten-day-old record is gone: %s", r.stderr)
		}
		// Kept for ever (retain 0): gc without --older-than removes nothing
		// and says why.
		if r := s.ledger(t, map[string]string{"IDEMKEY_RETAIN": "0"}, "gc"); r.code != 0 || !strings.Contains(r.stderr, "nothing removed") {
			t.Fatalf("gc with IDEMKEY_RETAIN=0: exit %d\n%s", r.code, r.stderr)
		}
		// The default retention, 7d; --older-than still decides when given.
		if r := s.ledger(t, nil, "gc", "--older-than", "11d", "--json"); r.stdout != "{\"removed\":0}\n" {
			t.Fatalf("gc --older-than 11d: %q %s", r.stdout, r.stderr)
		}
		if r := s.ledger(t, nil, "gc", "--json"); r.stdout != "{\"removed\":1}\n" {
			t.Fatalf("gc (retain 7d): %q %s", r.stdout, r.stderr)
		}
		if r := s.ledger(t, map[string]string{"IDEMKEY_RETAIN": "forever"}, "gc"); r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "IDEMKEY_RETAIN") {
			t.Fatalf("gc with IDEMKEY_RETAIN=forever: exit %d, %q\n%s", r.code, r.stdout, r.stderr)
		}
	})
}

// TestLedgerJSONValid: every --json answer is one valid JSON document,
// whatever the key or path holds. forget and init quoted with Go's
// strconv.Quote, whose \U000e0001 and \x1b escapes are not JSON (a
// --prefix may hold U+E0001, a path ESC or a byte that is not UTF-8).
func TestLedgerJSONValid(t *testing.T) {
	t.Parallel()
	key := "\U000E0001p\u2028-" + strings.Repeat("ab", 32)
	eachLedgerStore(t, func(t *testing.T, s *ledgerStore) {
		s.put(t, key, ledger.Failed, time.Hour)
		for _, args := range [][]string{{"ls"}, {"show", key}, {"forget", key}, {"gc", "--older-than", "0s"}, {"init"}} {
			r := s.ledger(t, nil, append(args, "--json")...)
			if r.code != 0 || !json.Valid([]byte(r.stdout)) || strings.Count(r.stdout, "\n") != 1 {
				t.Errorf("ledger %s --json: exit %d, not one valid JSON line: %q\n%s", args[0], r.code, r.stdout, r.stderr)
			}
		}
	})
	spec := filepath.Join(t.TempDir(), "a\x1b[31m\xffb.db")
	s := &ledgerStore{spec: spec}
	r := s.ledger(t, nil, "init", "--json")
	var m map[string]string
	if err := json.Unmarshal([]byte(r.stdout), &m); r.code != 0 || err != nil || !strings.HasSuffix(m["ledger"], "a\x1b[31m\uFFFDb.db") {
		t.Fatalf("init --json of %q: exit %d, %v: %q\n%s", spec, r.code, err, r.stdout, r.stderr)
	}
}

// putRunning writes a running record with a lease (stores with leases).
func (s *ledgerStore) putRunning(t *testing.T, key string, lease time.Duration) {
	t.Helper()
	rec := &ledger.Record{Key: key, Task: "t1", Tool: "x", Kind: "run", Fingerprint: "f", Request: []byte("{}"),
		State: ledger.Running, Attempt: 1, Holder: "h pid 1", ExitCode: ledger.NoExit, StartedAt: time.Now()}
	if ok, err := s.store.Insert(context.Background(), rec, lease); err != nil || !ok {
		t.Fatalf("insert %s: %v %v", key, ok, err)
	}
}

// TestLedgerResolveForgetStates: resolve and forget by state, on each
// store: a running record with a live holder is refused (exit 1, the
// record unchanged); one whose holder is dead (its lock free, its lease
// run out) is settled; a known outcome is refused; --reason is kept; the
// usage errors exit 2 with nothing on stdout.
func TestLedgerResolveForgetStates(t *testing.T) {
	eachLedgerStore(t, func(t *testing.T, s *ledgerStore) {
		_, leases := s.store.(stores.KeyLocker)
		leases = !leases
		if leases {
			s.putRunning(t, "alive", time.Minute)
			for _, args := range [][]string{{"resolve", "alive", "--as", "failed"}, {"forget", "alive"}} {
				if r := s.ledger(t, nil, args...); r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "holder is alive") {
					t.Errorf("%s of a live running record: exit %d %q\n%s", args[0], r.code, r.stdout, r.stderr)
				}
			}
			if m := s.ledger(t, nil, "show", "alive", "--json").json(t); m["state"] != "running" {
				t.Errorf("the live record changed: %v", m)
			}
			s.putRunning(t, "dead", time.Millisecond)
			time.Sleep(20 * time.Millisecond)
		} else {
			// No process holds the key's lock: the holder is dead.
			s.putRunning(t, "dead", 0)
		}
		r := s.ledger(t, nil, "resolve", "dead", "--as", "succeeded", "--reason", "deploy v2 is live", "--json")
		m := r.json(t)
		if r.code != 0 || m["state"] != "succeeded" || m["exit_code"] != float64(0) || !strings.Contains(m["reason"].(string), "deploy v2 is live") {
			t.Fatalf("resolve of a dead running record: exit %d %v\n%s", r.code, m, r.stderr)
		}
		if r := s.ledger(t, nil, "resolve", "dead", "--as", "failed"); r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "is succeeded, not unknown") {
			t.Errorf("resolve twice: exit %d %q\n%s", r.code, r.stdout, r.stderr)
		}
		for _, args := range [][]string{{"resolve", "dead"}, {"resolve", "dead", "--as", "unknown"}, {"resolve", "dead", "--as", "running"}, {"show", ""}, {"resolve", "", "--as", "failed"}, {"forget", ""}} {
			if r := s.ledger(t, nil, args...); r.code != 2 || r.stdout != "" {
				t.Errorf("ledger %q: exit %d %q, want a usage error\n%s", args, r.code, r.stdout, r.stderr)
			}
		}
		if r := s.ledger(t, nil, "resolve", "dead"); !strings.Contains(r.stderr, "error: resolve needs --as succeeded or --as failed\n") {
			t.Errorf("resolve without --as:\n%s", r.stderr)
		}
		if r := s.ledger(t, nil, "show", ""); !strings.Contains(r.stderr, "error: the KEY argument is empty\n") {
			t.Errorf("show of an empty key:\n%s", r.stderr)
		}
		if r := s.ledger(t, nil, "forget", "dead", "--json"); r.code != 0 || r.json(t)["forgotten"] != true {
			t.Errorf("forget: exit %d\n%s", r.code, r.stderr)
		}
		if r := s.ledger(t, nil, "forget", "dead"); r.code != 1 || r.stdout != "" {
			t.Errorf("forget twice: exit %d %q", r.code, r.stdout)
		}
	})
}

// TestLedgerInitPathShown: ledger init names its ledger on stderr
// without passing a path's control characters to the terminal (an ESC
// sequence in a path was printed as it is); the same for the line that
// says a ledger does not exist.
func TestLedgerInitPathShown(t *testing.T) {
	t.Parallel()
	s := &ledgerStore{spec: filepath.Join(t.TempDir(), "a\x1b[31mb.db")}
	r := s.ledger(t, nil, "ls")
	if r.code != 0 || strings.Contains(r.stderr, "\x1b") || !strings.Contains(r.stderr, `a\x1b[31mb.db`) {
		t.Fatalf("ls of a missing ledger: exit %d: %q", r.code, r.stderr)
	}
	r = s.ledger(t, nil, "init")
	if r.code != 0 || strings.Contains(r.stderr, "\x1b") || !strings.Contains(r.stderr, `a\x1b[31mb.db`) {
		t.Fatalf("init: exit %d: %q", r.code, r.stderr)
	}
}

// TestLedgerPostgresNoTableCreated: on PostgreSQL, as for a SQLite
// file, the commands that read or settle records create no ledger: a
// database without the table (or a mistyped table=) holds no records, and
// only init, run and post create the table. ls created it on first use.
func TestLedgerPostgresNoTableCreated(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	// The server trusts loopback: the password is only there to be hidden.
	url := clitest.PGStore(t).URL + "&password=hunter2-secret&table=ledgr_typo"
	if !strings.Contains(url, "?") {
		url = strings.Replace(url, "&table=", "?table=", 1)
	}
	s := &ledgerStore{spec: url}
	tableExists := func() bool {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, url[:strings.Index(url, "table=")-1])
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var ok bool
		if err := conn.QueryRow(ctx, `SELECT to_regclass('ledgr_typo') IS NOT NULL`).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	r := s.ledger(t, nil, "ls", "--json")
	if r.code != 0 || r.stdout != "[]\n" || !strings.Contains(r.stderr, "idemkey: no ledger at postgres://") || !strings.Contains(r.stderr, "ledger init creates it") ||
		strings.Contains(r.stderr, "hunter2") || !strings.Contains(r.stderr, "password=xxxxx") {
		t.Errorf("ls: exit %d %q\n%s", r.code, r.stdout, r.stderr)
	}
	for _, args := range [][]string{{"show", "k"}, {"resolve", "k", "--as", "failed"}, {"forget", "k"}} {
		if r := s.ledger(t, nil, args...); r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "no record for key k") {
			t.Errorf("%s: exit %d %q\n%s", args[0], r.code, r.stdout, r.stderr)
		}
	}
	if r := s.ledger(t, nil, "gc", "--older-than", "0s", "--json"); r.code != 0 || r.stdout != "{\"removed\":0}\n" {
		t.Errorf("gc: exit %d %q\n%s", r.code, r.stdout, r.stderr)
	}
	if tableExists() {
		t.Fatal("a ledger command that reads created the table")
	}
	if r := s.ledger(t, nil, "init"); r.code != 0 || !tableExists() {
		t.Fatalf("init: exit %d, table there: %v\n%s", r.code, tableExists(), r.stderr)
	}
	if r := s.ledger(t, nil, "ls"); r.code != 0 || strings.Contains(r.stderr, "no ledger at") {
		t.Fatalf("ls after init: exit %d\n%s", r.code, r.stderr)
	}
}

// TestLedgerResolvePostWithoutResponse: a post record whose response
// was never saved (idemkey died mid-request) cannot be resolved as
// succeeded: post would have nothing to replay. It was accepted, and
// every later post of the key then failed with exit 2 ("has no saved
// response: unexpected end of JSON input") until the record was
// forgotten. --as failed (the next post retries with the same key) is
// still allowed.
func TestLedgerResolvePostWithoutResponse(t *testing.T) {
	t.Parallel()
	eachLedgerStore(t, func(t *testing.T, s *ledgerStore) {
		end := time.Now()
		rec := &ledger.Record{Key: "kp", Task: "t1", Tool: "pay", Kind: "post", Fingerprint: "f", Request: []byte("{}"),
			State: ledger.Unknown, Attempt: 1, Holder: "h pid 1", ExitCode: ledger.NoExit, StartedAt: end.Add(-time.Second), EndedAt: end,
			Reason: "holder died: its lock was free while the record said running"}
		if ok, err := s.store.Insert(context.Background(), rec, 0); err != nil || !ok {
			t.Fatalf("insert: %v %v", ok, err)
		}
		r := s.ledger(t, nil, "resolve", "kp", "--as", "succeeded")
		if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "no saved response") {
			t.Fatalf("resolve --as succeeded of a post without a response: exit %d %q\n%s", r.code, r.stdout, r.stderr)
		}
		if m := s.ledger(t, nil, "show", "kp", "--json").json(t); m["state"] != "unknown" {
			t.Fatalf("the record changed: %v", m)
		}
		if r := s.ledger(t, nil, "resolve", "kp", "--as", "failed"); r.code != 0 {
			t.Fatalf("resolve --as failed: exit %d\n%s", r.code, r.stderr)
		}
	})
}

// TestLedgerShowPostStreams: a post record keeps the response's body
// as stdout and no stderr: show --stderr says so (exit 1, as for any
// stream not recorded), and show names it as none, not as a stream lost.
func TestLedgerShowPostStreams(t *testing.T) {
	t.Parallel()
	eachLedgerStore(t, func(t *testing.T, s *ledgerStore) {
		end := time.Now()
		body := []byte("created\n")
		rec := &ledger.Record{Key: "kp", Task: "t1", Tool: "pay", Kind: "post", Fingerprint: "f", Request: []byte("{}"),
			State: ledger.Succeeded, Attempt: 1, Holder: "h pid 1", ExitCode: 0, StartedAt: end.Add(-time.Second), EndedAt: end,
			Stdout: ledger.Output{Data: body, Length: 8, SHA256: "59134a4054b27a3fc30e1ac81d9b9168dc0561f65982151324a021fe8ce88d06"},
			Meta:   []byte(`{"status":201}`)}
		if ok, err := s.store.Insert(context.Background(), rec, 0); err != nil || !ok {
			t.Fatalf("insert: %v %v", ok, err)
		}
		if r := s.ledger(t, nil, "show", "kp", "--stdout"); r.code != 0 || r.stdout != string(body) || r.stderr != "" {
			t.Errorf("show --stdout: exit %d %q\n%s", r.code, r.stdout, r.stderr)
		}
		r := s.ledger(t, nil, "show", "kp", "--stderr")
		if r.code != 1 || r.stdout != "" || r.stderr != "idemkey: error: kp has no recorded stderr: post records the response's body (--stdout), no stderr\n" {
			t.Errorf("show --stderr: exit %d %q\n%s", r.code, r.stdout, r.stderr)
		}
		if r := s.ledger(t, nil, "show", "kp"); !strings.Contains(r.stdout, "stderr:    none (post records the response's body as stdout)\n") {
			t.Errorf("show:\n%s", r.stdout)
		}
	})
}

// TestLedgerNotUTF8: a KEY, --task or --tool that is not UTF-8 cannot
// name a record (run refuses such a task or tool, and keys are ASCII or
// a UTF-8 prefix): a usage error on every store. PostgreSQL failed the
// query ("invalid byte sequence for encoding UTF8", exit 2 as a ledger
// error) where SQLite and Redis answered "no record" (exit 1).
func TestLedgerNotUTF8(t *testing.T) {
	t.Parallel()
	eachLedgerStore(t, func(t *testing.T, s *ledgerStore) {
		for _, args := range [][]string{{"show", "ab\xffcd"}, {"resolve", "ab\xffcd", "--as", "failed"}, {"forget", "ab\xffcd"},
			{"ls", "--task", "t\xff"}, {"ls", "--tool", "\xfex"}} {
			r := s.ledger(t, nil, args...)
			if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "is not valid UTF-8") || strings.Contains(r.stderr, "SQLSTATE") {
				t.Errorf("ledger %q: exit %d %q\n%s", args, r.code, r.stdout, r.stderr)
			}
		}
	})
}

// TestLedgerEffectiveState: ls and show do not say running
// for a record whose holder is gone (its lease expired, its lock free),
// --state unknown finds it, and --json has its lease. They give the state
// a run would see, with how the holder ended, and the recorded one; a
// live holder's record stays running. On Linux the lock is looked at, not
// taken (a run starting meanwhile would read the key as busy): ls and show
// leave no lock file behind.
func TestLedgerEffectiveState(t *testing.T) {
	eachLedgerStore(t, func(t *testing.T, s *ledgerStore) {
		kl, locks := s.store.(stores.KeyLocker)
		if locks {
			s.putRunning(t, "lost", 0)
			s.putRunning(t, "live", 0)
			lock, err := kl.LockKey("live") // the live holder
			if err != nil {
				t.Fatal(err)
			}
			defer lock.Close()
		} else {
			s.putRunning(t, "lost", time.Millisecond)
			s.putRunning(t, "live", time.Minute)
			time.Sleep(50 * time.Millisecond)
		}
		byKey := func(args ...string) map[string]map[string]any {
			t.Helper()
			r := s.ledger(t, nil, append([]string{"ls", "--json"}, args...)...)
			var recs []map[string]any
			if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil || r.code != 0 {
				t.Fatalf("ls --json %v: exit %d: %v\n%s%s", args, r.code, err, r.stdout, r.stderr)
			}
			m := map[string]map[string]any{}
			for _, rec := range recs {
				m[rec["key"].(string)] = rec
			}
			return m
		}
		all := byKey()
		lost, live := all["lost"], all["live"]
		if lost["state"] != "unknown" || lost["recorded_state"] != "running" || !strings.HasPrefix(lost["reason"].(string), "holder ") {
			t.Errorf("a gone holder's record: %v", lost)
		}
		if live["state"] != "running" || live["recorded_state"] != "running" {
			t.Errorf("a live holder's record: %v", live)
		}
		for _, rec := range all {
			if _, ok := rec["lease_until"]; !ok {
				t.Errorf("no lease_until: %v", rec)
			}
		}
		if _, isString := live["lease_until"].(string); !locks && !isString {
			t.Errorf("a lease store's running record: lease_until %v", live["lease_until"])
		}
		for state, want := range map[string]string{"unknown": "lost", "running": "live"} {
			if got := byKey("--state", state); len(got) != 1 || got[want] == nil {
				t.Errorf("ls --state %s: %v, want %s only", state, got, want)
			}
		}
		if m := s.ledger(t, nil, "show", "lost", "--json").json(t); m["state"] != "unknown" || m["recorded_state"] != "running" {
			t.Errorf("show --json of a gone holder's record: %v", m)
		}
		r := s.ledger(t, nil, "show", "lost")
		if !regexp.MustCompile(`(?m)^state: +unknown \(recorded running\)$`).MatchString(r.stdout) || !regexp.MustCompile(`(?m)^reason: +holder `).MatchString(r.stdout) {
			t.Errorf("show of a gone holder's record:\n%s", r.stdout)
		}
		if lp, ok := s.store.(interface{ LockPath(string) string }); ok && runtime.GOOS == "linux" {
			if _, err := os.Stat(lp.LockPath("lost")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("ls and show made the lock file of a gone holder's key (they took its lock): %v", err)
			}
		}
	})
}
