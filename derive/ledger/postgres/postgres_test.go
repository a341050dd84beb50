package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/idemkey/idemkey/derive/ledger/internal/storetest"
	"github.com/idemkey/idemkey/derive/ledger/ledgertest"
	"github.com/idemkey/idemkey/derive/ledger/testserver"
)

func TestMain(m *testing.M) {
	os.Exit(testserver.Main(m))
}

func open(t *testing.T, url string) *Store {
	t.Helper()
	s, err := Open(context.Background(), url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// The scenario table, in the default (exec) query mode and in the simple
// protocol a transaction-mode pooler needs.
// connect is a connection of the test's own to url, closed at its end.
func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// wipe is TRUNCATE of the ledger's table and of its marks, as an
// operator's TRUNCATE (or a restore of an old dump) would do.
func wipe(t *testing.T, s ledger.Store) {
	st := s.(*Store)
	ctx := context.Background()
	conn, err := pgx.ConnectConfig(ctx, st.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `TRUNCATE `+st.table+`, `+st.attempts); err != nil {
		t.Fatal(err)
	}
}

func TestScenarios(t *testing.T) {
	t.Parallel()
	url := testserver.Postgres(t)
	ledgertest.Run(t, func(t *testing.T) ledger.Store { return open(t, url) }, ledgertest.Caps{Leases: true, Concurrency: 64, Wipe: wipe,
		OwnStore: func(t *testing.T) ledger.Store { return open(t, ownTable(url)) }})
}

func TestScenariosSimpleProtocol(t *testing.T) {
	t.Parallel()
	url := testserver.Postgres(t) + "&default_query_exec_mode=simple_protocol"
	s := open(t, url)
	if s.cfg.DefaultQueryExecMode != pgx.QueryExecModeSimpleProtocol {
		t.Fatalf("query mode %v", s.cfg.DefaultQueryExecMode)
	}
	ledgertest.Run(t, func(t *testing.T) ledger.Store { return open(t, url) }, ledgertest.Caps{Leases: true,
		OwnStore: func(t *testing.T) ledger.Store { return open(t, ownTable(url)) }})
}

// TestScenariosOddSessionDefaults: the scenario table on a database whose
// defaults are a non-ISO DateStyle, an odd TimeZone (+05:45) and
// IntervalStyle, in both query modes, and with a DateStyle in the URL:
// the store's reads parse timestamps whatever the session shows them as.
func TestScenariosOddSessionDefaults(t *testing.T) {
	t.Parallel()
	// The three runs at once, each on a database of its own: the scenario
	// table mostly waits, and its gc scenarios act on the whole table.
	var wg sync.WaitGroup
	for _, extra := range []string{"", "&default_query_exec_mode=simple_protocol", "&datestyle=German"} {
		url := oddDB(t)
		wg.Go(func() {
			t.Run("url"+extra, func(t *testing.T) {
				ledgertest.Run(t, func(t *testing.T) ledger.Store { return open(t, url+extra) }, ledgertest.Caps{Leases: true,
					OwnStore: func(t *testing.T) ledger.Store { return open(t, ownTable(url+extra)) }})
			})
		})
	}
	wg.Wait()
}

var ownTables atomic.Int64

// ownTable is url with a ledger table of its own, for a scenario that acts
// on the whole store.
func ownTable(url string) string { return fmt.Sprintf("%s&table=ledger_own_%d", url, ownTables.Add(1)) }

// oddDB is a fresh database whose defaults are a non-ISO DateStyle, an
// odd TimeZone (+05:45) and IntervalStyle; it returns its URL.
func oddDB(t *testing.T) string {
	url := testserver.Postgres(t)
	conn := connect(t, url)
	db := conn.Config().Database
	for _, set := range []string{`DateStyle = 'SQL, DMY'`, `TimeZone = 'Asia/Kathmandu'`, `IntervalStyle = 'sql_standard'`} {
		if _, err := conn.Exec(context.Background(), `ALTER DATABASE `+pgx.Identifier{db}.Sanitize()+` SET `+set); err != nil {
			t.Fatal(err)
		}
	}
	return url
}

func TestPrimitives(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) ledger.Store { return open(t, testserver.Postgres(t)) })
}

// TestNothingPrepared: after a claim, renewal and completion (with
// outputs large enough to be sent in binary), the server's session has no
// prepared statement left (what a transaction-mode pooler requires), in
// both query modes.
func TestNothingPrepared(t *testing.T) {
	for _, mode := range []string{"", "&default_query_exec_mode=simple_protocol"} {
		s := open(t, testserver.Postgres(t)+mode)
		ctx := context.Background()
		r := &ledger.Record{Key: "k", Kind: "run", State: ledger.Running, Attempt: 1, StartedAt: time.Now(), ExitCode: ledger.NoExit}
		s.Insert(ctx, r, time.Minute)
		s.Renew(ctx, "k", ledger.Version{Attempt: 1, State: ledger.Running}, time.Minute)
		done := *r
		done.State, done.ExitCode, done.EndedAt = ledger.Succeeded, 0, time.Now()
		big := bytes.Repeat([]byte("o"), 2*largeWrite)
		done.Stdout = ledger.Output{Data: big, Length: int64(len(big)), SHA256: "-"}
		if ok, err := s.Swap(ctx, ledger.Version{Attempt: 1, State: ledger.Running}, false, &done, 0); !ok || err != nil {
			t.Fatalf("mode %q: the completion with %d bytes of output: %v %v", mode, len(big), ok, err)
		}
		if got, _, _ := s.Get(ctx, "k"); got == nil || !bytes.Equal(got.Stdout.Data, big) {
			t.Fatalf("mode %q: the output of %d bytes is not read back", mode, len(big))
		}
		var n int
		err := s.do(ctx, func(conn *pgx.Conn) error {
			return conn.QueryRow(ctx, `SELECT count(*) FROM pg_prepared_statements`).Scan(&n)
		})
		if err != nil || n != 0 {
			t.Fatalf("mode %q: %d prepared statements (err %v)", mode, n, err)
		}
	}
}

// TestTableName: ?table= (schema-qualified) puts the ledger there; a bad
// name is refused.
func TestTableName(t *testing.T) {
	url := testserver.Postgres(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	conn.Exec(ctx, "CREATE SCHEMA ops")
	s := open(t, url+"&table=ops.steps")
	s.Insert(ctx, &ledger.Record{Key: "k", State: ledger.Succeeded, Attempt: 1, StartedAt: time.Now()}, 0)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM ops.steps`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("ops.steps: %d rows, %v", n, err)
	}
	// The longest names: the NOTIFY channel stays within 63 bytes.
	long := strings.Repeat("s", 63) + "." + strings.Repeat("t", 63)
	conn.Exec(ctx, `CREATE SCHEMA `+strings.Repeat("s", 63))
	ls := open(t, url+"&table="+long)
	if ok, err := ls.Insert(ctx, &ledger.Record{Key: "k", State: ledger.Running, Attempt: 1, StartedAt: time.Now()}, time.Minute); !ok || err != nil {
		t.Fatalf("insert into %s: %v %v", long, ok, err)
	}
	if err := ls.Wait(ctx, "k"); err != nil || ls.listener == nil {
		t.Fatalf("listen on %s: %v", ls.channel, err)
	}
	// Long names still get their index of task and tool, each its own:
	// two tables whose names share their first 53 bytes or more.
	for _, name := range []string{strings.Repeat("u", 60) + "abc", strings.Repeat("u", 60) + "abd", strings.Repeat("v", 53)} {
		open(t, url+"&table="+name).Insert(ctx, &ledger.Record{Key: "k", State: ledger.Succeeded, Attempt: 1, StartedAt: time.Now()}, 0)
		var idx []string
		rows, _ := conn.Query(ctx, `SELECT indexdef FROM pg_indexes WHERE tablename = $1 AND indexdef LIKE '%(md5(task), md5(tool))%'`, name)
		for rows.Next() {
			var d string
			rows.Scan(&d)
			idx = append(idx, d)
		}
		if rows.Err() != nil || len(idx) != 1 {
			t.Fatalf("table %s (%d bytes): task and tool indexes %q, %v; want one", name, len(name), idx, rows.Err())
		}
	}
	// An empty or repeated table= is refused, not read as the default
	// table (an unset shell variable would share the default ledger).
	for _, q := range []string{"&table=", "&table=a&table=b"} {
		if _, err := Open(ctx, url+q, Options{}); err == nil || !strings.Contains(err.Error(), "table= wants one name") {
			t.Errorf("%s: %v, want refused", q, err)
		}
	}
	if _, err := Open(ctx, url+"&table=x;drop", Options{}); err == nil {
		t.Fatal("a table name with ; accepted")
	}
	if _, err := Open(ctx, url+"&table=missing", Options{NoCreate: true}); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "ledger init") {
		t.Fatalf("missing table with NoCreate: %v", err)
	}
}

// TestDDLIsWhatOpenCreates: the README's DDL creates a table the store
// works with, and Open does not try to create it again (a DBA's role may
// lack CREATE).
func TestDDLIsWhatOpenCreates(t *testing.T) {
	url := testserver.Postgres(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	ddl, _ := DDL("dba_ledger")
	if _, err := conn.Exec(ctx, ddl); err != nil {
		t.Fatal(err)
	}
	conn.Exec(ctx, `CREATE ROLE worker LOGIN; GRANT SELECT, INSERT, UPDATE, DELETE ON dba_ledger, dba_ledger_attempts TO worker; REVOKE CREATE ON SCHEMA public FROM PUBLIC`)
	wurl := strings.Replace(url, "postgres@", "worker@", 1) + "&table=dba_ledger"
	s := open(t, wurl)
	if ok, err := s.Insert(ctx, &ledger.Record{Key: "k", State: ledger.Running, Attempt: 1, StartedAt: time.Now()}, time.Minute); !ok || err != nil {
		t.Fatalf("insert as worker: %v %v", ok, err)
	}
}

// TestPasswordRedacted: a wrong password's error, and the store's name,
// never show it.
func TestPasswordRedacted(t *testing.T) {
	url := testserver.Postgres(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	conn.Exec(ctx, `CREATE ROLE secretive LOGIN SUPERUSER PASSWORD 'hunter2-sesame'`)
	bad := strings.Replace(url, "postgres@", "secretive:hunter2-sesame@", 1)
	// trust authentication accepts any password: the store opens, and its
	// name hides the password.
	s := open(t, bad)
	if strings.Contains(s.Name(), "hunter2") || !strings.Contains(s.Name(), "xxxxx") {
		t.Fatalf("name %q", s.Name())
	}
	// An unreachable server: the error names the URL without the password.
	_, err = Open(ctx, "postgres://u:hunter2-sesame@127.0.0.1:1/db?connect_timeout=2", Options{})
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "cannot reach") {
		t.Fatalf("error %v", err)
	}
	_, err = Open(ctx, "postgres://u:hunter2-sesame@127.0.0.1:1/db?sslmode=bogus", Options{})
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error %v", err)
	}
}

// TestWaitNotified: Wait returns when another connection changes the key,
// well before its poll interval.
func TestWaitNotified(t *testing.T) {
	url := testserver.Postgres(t)
	ctx := context.Background()
	s, err := Open(ctx, url, Options{PollEvery: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other := open(t, url)
	r := &ledger.Record{Key: "k", State: ledger.Running, Attempt: 1, StartedAt: time.Now()}
	other.Insert(ctx, r, time.Minute)
	u := &ledger.Record{Key: "unrelated", State: ledger.Running, Attempt: 1, StartedAt: time.Now()}
	other.Insert(ctx, u, time.Minute)
	if err := s.Wait(ctx, "k"); err != nil { // starts listening
		t.Fatal(err)
	}
	go func() {
		time.Sleep(200 * time.Millisecond)
		ud := *u
		ud.State, ud.EndedAt = ledger.Succeeded, time.Now()
		other.Swap(ctx, ledger.Version{Attempt: 1, State: ledger.Running}, false, &ud, 0)
		time.Sleep(100 * time.Millisecond)
		done := *r
		done.State, done.EndedAt = ledger.Succeeded, time.Now()
		other.Swap(ctx, ledger.Version{Attempt: 1, State: ledger.Running}, false, &done, 0)
	}()
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	t0 := time.Now()
	if err := s.Wait(wctx, "k"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < 250*time.Millisecond {
		t.Fatalf("Wait returned after %v, before the key changed (on the unrelated key's notification?)", d)
	}
	got, _, _ := s.Get(ctx, "k")
	if got.State != ledger.Succeeded {
		t.Fatalf("after Wait: %s", got.State)
	}
}

// TestRestartRetried: a server restarted between calls: the next write
// retries on a new connection and takes effect once.
func TestRestartRetried(t *testing.T) {
	t.Parallel()
	c := testserver.NewPostgres(t)
	s := open(t, c.CreateDB(t))
	ctx := context.Background()
	r := &ledger.Record{Key: "k", State: ledger.Running, Attempt: 1, StartedAt: time.Now(), Holder: "h"}
	if ok, err := s.Insert(ctx, r, time.Minute); !ok || err != nil {
		t.Fatal(ok, err)
	}
	c.Stop(9) // SIGKILL: a crash of the server
	restarted := make(chan struct{})
	go func() { time.Sleep(500 * time.Millisecond); c.Start(t); close(restarted) }()
	done := *r
	done.State, done.ExitCode, done.EndedAt = ledger.Succeeded, 0, time.Now()
	ok, err := s.Swap(ctx, ledger.Version{Attempt: 1, State: ledger.Running}, false, &done, 0)
	<-restarted
	if !ok || err != nil {
		t.Fatalf("complete across a restart: %v %v", ok, err)
	}
	got, _, err := s.Get(ctx, "k")
	if err != nil || got.State != ledger.Succeeded {
		t.Fatalf("after restart: %+v %v", got, err)
	}
	// RetryFor<0: no retry, the error says the ledger is unreachable.
	s2, _ := Open(ctx, c.CreateDB(t), Options{RetryFor: -1})
	defer s2.Close()
	c.Stop(9)
	_, _, err = s2.Get(ctx, "k")
	if err == nil || !strings.Contains(err.Error(), "ledger at postgres://") {
		t.Fatalf("Get on a stopped server: %v", err)
	}
}

// walSyncs is the cluster's count of WAL flushes so far (pg_stat_wal),
// with this session's own counts flushed into it first (the store's calls
// run one at a time, on one connection).
func walSyncs(t *testing.T, s *Store) int64 {
	t.Helper()
	var n int64
	ctx := context.Background()
	err := s.do(ctx, func(conn *pgx.Conn) error {
		if _, err := conn.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
			return err
		}
		return conn.QueryRow(ctx, `SELECT wal_sync FROM pg_stat_wal`).Scan(&n)
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCompletionLazyClaimDurable: a claim (Insert, and InsertOrGet) waits
// for its WAL flush; a completion (ledger.Complete, through SwapLazy)
// does not, and leaves the session's synchronous_commit as it was: 40
// claims cost at least 40 flushes, 40 completions at most 20 (the WAL
// writer's own, every 200 ms). Without SwapLazy the completions cost 40.
func TestCompletionLazyClaimDurable(t *testing.T) {
	t.Parallel()
	s := open(t, testserver.NewPostgres(t).CreateDB(t))
	ctx := context.Background()
	const n = 40
	recs := make([]*ledger.Record, n)
	before := walSyncs(t, s)
	for i := range recs {
		recs[i] = &ledger.Record{Key: fmt.Sprintf("k%d", i), Kind: "run", State: ledger.Running, Attempt: 1, StartedAt: time.Now(), ExitCode: ledger.NoExit}
		var ok bool
		var err error
		if i%2 == 0 {
			ok, err = s.Insert(ctx, recs[i], time.Minute)
		} else {
			ok, _, _, err = s.InsertOrGet(ctx, recs[i], time.Minute)
		}
		if !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	claims := walSyncs(t, s) - before
	before = walSyncs(t, s)
	for _, r := range recs {
		done := *r
		done.State, done.ExitCode, done.EndedAt = ledger.Succeeded, 0, time.Now()
		if _, err := ledger.Complete(ctx, s, &done); err != nil {
			t.Fatal(err)
		}
	}
	completions := walSyncs(t, s) - before
	t.Logf("WAL flushes: %d claims %d, %d completions %d", n, claims, n, completions)
	if claims < n {
		t.Fatalf("%d claims flushed the WAL %d times: a claim must be durable when it returns", n, claims)
	}
	if completions > n/2 { // the WAL writer flushes every 200 ms: a few, however slow the machine
		t.Fatalf("%d completions flushed the WAL %d times: they should not wait for it", n, completions)
	}
	for _, r := range recs {
		if got, _, _ := s.Get(ctx, r.Key); got == nil || got.State != ledger.Succeeded {
			t.Fatalf("%s after completion: %+v", r.Key, got)
		}
	}
	// The setting ended with each completion's transaction.
	var sc string
	err := s.do(ctx, func(conn *pgx.Conn) error {
		return conn.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&sc)
	})
	if err != nil || sc != "on" {
		t.Fatalf("synchronous_commit on the session after completions: %q %v, want on", sc, err)
	}
}

// TestProtocolViolationNotRetried: a statement the server refuses as a
// protocol violation (08P01: here a NUL in a simple-protocol query) is
// the statement's fault, not the connection's: not taken for a broken
// connection and sent again for RetryFor.
func TestProtocolViolationNotRetried(t *testing.T) {
	url := testserver.Postgres(t) + "&default_query_exec_mode=simple_protocol"
	s, err := Open(context.Background(), url, Options{RetryFor: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.List(context.Background(), ledger.Filter{State: "x\x00"})
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "08P01" {
		t.Fatalf("list with a NUL in the simple protocol: %v, want SQLSTATE 08P01", err)
	}
	if transient(err, nil) {
		t.Fatalf("%v taken for a broken connection (retried for RetryFor)", err)
	}
}

// schema1 is the table as idemkey created it at schema 1 (and the README
// gave to DBAs).
const schema1 = `CREATE TABLE IF NOT EXISTS "idemkey_ledger" (key text PRIMARY KEY, task text NOT NULL,
  tool text NOT NULL, kind text NOT NULL, fingerprint text NOT NULL, request bytea NOT NULL,
  state text NOT NULL CHECK (state IN ('running', 'succeeded', 'failed', 'unknown')),
  attempt bigint NOT NULL CHECK (attempt > 0), holder text NOT NULL, exit_code integer NOT NULL,
  reason text NOT NULL, started_at timestamptz NOT NULL, ended_at timestamptz, lease_until timestamptz,
  stdout bytea NOT NULL, stdout_length bigint NOT NULL, stdout_sha256 text NOT NULL, stdout_truncated boolean NOT NULL,
  stderr bytea NOT NULL, stderr_length bigint NOT NULL, stderr_sha256 text NOT NULL, stderr_truncated boolean NOT NULL,
  meta bytea NOT NULL);
CREATE INDEX IF NOT EXISTS "idemkey_ledger_task_tool" ON "idemkey_ledger" (task, tool);
COMMENT ON TABLE "idemkey_ledger" IS 'idemkey ledger, schema 1'`

// TestUpgradeFromSchema1: a table of schema 1 with a record in it (no
// token, no store time) is upgraded on first use: the record replays, its
// running sibling without a token is taken over with one, the (task,
// tool) index that refused long task ids is replaced by the hashes'
// index, and a claim with a 5 KB task id works.
func TestUpgradeFromSchema1(t *testing.T) {
	url := testserver.Postgres(t)
	ctx := context.Background()
	conn := connect(t, url)
	if _, err := conn.Exec(ctx, schema1); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO idemkey_ledger VALUES
		('done', 't', 'x', 'run', 'f', '', 'succeeded', 1, 'h', 0, '', now(), now(), NULL, 'out', 3, 's', false, '', 0, '', false, ''),
		('held', 't', 'x', 'run', 'f', '', 'running', 2, 'h', -1, '', now(), NULL, now() - interval '1 minute', '', 0, '', false, '', 0, '', false, '')`); err != nil {
		t.Fatal(err)
	}
	s := open(t, url)
	req := ledger.ClaimRequest{Record: ledger.Record{Key: "done", Task: "t", Tool: "x", Kind: "run", Fingerprint: "f"}, Lease: time.Minute}
	d, err := ledger.Claim(ctx, s, req)
	if err != nil || d.Action != ledger.ActReplay || string(d.Record.Stdout.Data) != "out" || d.Record.Token != "" {
		t.Fatalf("schema-1 record: %+v %v", d, err)
	}
	if v, err := s.Schema(ctx); err != nil || v != 3 {
		t.Fatalf("schema after upgrade: %d %v", v, err)
	}
	req.Record.Key, req.Recover = "held", ledger.RecoverRetry
	if d, err := ledger.Claim(ctx, s, req); err != nil || d.Action != ledger.ActRun || d.Record.Attempt != 3 || d.Record.Token == "" {
		t.Fatalf("claim over a schema-1 running record with an expired lease: %+v %v", d, err)
	}
	var idx []string
	rows, _ := conn.Query(ctx, `SELECT indexname FROM pg_indexes WHERE tablename = 'idemkey_ledger' AND indexname <> 'idemkey_ledger_pkey'`)
	for rows.Next() {
		var n string
		rows.Scan(&n)
		idx = append(idx, n)
	}
	if len(idx) != 1 || idx[0] != "idemkey_ledger_task_tool_md5" {
		t.Fatalf("indexes after upgrade: %q", idx)
	}
	req.Record.Key, req.Record.Task = "long", strings.Repeat("t", 5000)
	if d, err := ledger.Claim(ctx, s, req); err != nil || d.Action != ledger.ActRun {
		t.Fatalf("claim with a 5 KB task id after the upgrade: %+v %v", d, err)
	}
}

// TestTableNameCase: a table name with upper case is refused with a hint
// naming the lower-case one (Fleet, fleet and FLEET were three ledgers,
// and a step ran once in each); a lower-case one is the same ledger
// whichever way it is written in the URL.
func TestTableNameCase(t *testing.T) {
	url := testserver.Postgres(t)
	ctx := context.Background()
	for _, name := range []string{"Fleet", "FLEET", "ops.Fleet", "Ops.fleet"} {
		_, err := Open(ctx, url+"&table="+name, Options{})
		var h interface{ Hint() string }
		if err == nil || !strings.Contains(err.Error(), "upper case") || !errors.As(err, &h) || !strings.Contains(h.Hint(), "table="+strings.ToLower(name)) {
			t.Errorf("table=%s: %v, want refused with a hint naming table=%s", name, err, strings.ToLower(name))
		}
		if _, err := Open(ctx, url, Options{Table: name}); err == nil {
			t.Errorf("Options.Table %s accepted", name)
		}
		if _, err := DDL(name); err == nil {
			t.Errorf("DDL(%s) accepted", name)
		}
	}
	open(t, url+"&table=fleet")

	// The hint's SQL renames what an older idemkey made to the name the
	// hint gives: run it on such tables.
	conn := connect(t, url)
	for _, c := range []struct{ name, want, sql string }{
		{"Fleet", "fleet", `ALTER TABLE "Fleet" RENAME TO fleet`},
		{"Ops.Fleet", "ops.fleet", `ALTER SCHEMA "Ops" RENAME TO ops; ALTER TABLE ops."Fleet" RENAME TO fleet`},
		{"Ops2.steps", "ops2.steps", `ALTER SCHEMA "Ops2" RENAME TO ops2`},
	} {
		_, err := Open(ctx, url+"&table="+c.name, Options{})
		var h interface{ Hint() string }
		if !errors.As(err, &h) || !strings.HasSuffix(h.Hint(), "after "+c.sql+")") {
			t.Fatalf("table=%s: hint %q, want it to end with %q", c.name, h.Hint(), c.sql)
		}
		if schema, _, ok := strings.Cut(c.name, "."); ok {
			conn.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize())
		}
		if _, err := conn.Exec(ctx, `DROP TABLE IF EXISTS fleet; CREATE TABLE `+pgx.Identifier(strings.Split(c.name, ".")).Sanitize()+` (x int)`); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, c.sql); err != nil {
			t.Fatalf("the hint's SQL %q: %v", c.sql, err)
		}
		var there bool
		if err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, c.want).Scan(&there); err != nil || !there {
			t.Fatalf("after %q: %s there: %v %v", c.sql, c.want, there, err)
		}
	}
}
