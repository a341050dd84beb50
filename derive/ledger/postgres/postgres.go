// Package postgres is a ledger.Store on PostgreSQL, through pgx: one table,
// each Store method one statement (INSERT … ON CONFLICT DO NOTHING, UPDATE
// … WHERE key, attempt and state still match, DELETE … WHERE), leases on
// the server's now(), and LISTEN/NOTIFY for ledger.Waiter.
//
// Durability: a claim's transaction sets synchronous_commit on for
// itself (durableCommit): flushed to the WAL, and to a synchronous
// standby where synchronous_standby_names asks for one, before the step
// starts, whatever the server's default. A completion
// (ledger.LazySwapper) sets it off on a server without synchronous
// standbys: a completion lost in a crash of the server leaves the attempt
// running with its lease, which runs out into unknown, never a repeat and
// never a false success. A fresh step thus waits for one WAL flush (the
// claim), not two.
//
// High availability: a multi-host URL
// (postgres://h1:5432,h2:5432/db?target_session_attrs=read-write) reaches
// whichever host is the primary, and a connection broken by a failover is
// made again (RetryFor) to the promoted one. With Options.Warn, Init and
// the process's first claim warn about a standby that replicates
// asynchronously (ReplicationWarning).
//
// Nothing here needs a session: no advisory lock held across statements,
// no statement prepared across transactions (the default query mode is
// pgx's exec mode, one unnamed statement per call, and
// default_query_exec_mode=simple_protocol works too), so the store works
// behind a transaction-mode pooler such as PgBouncer. There, LISTEN does
// not reach the server's session, and Wait degrades to polling.
package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/idemkey/idemkey/derive/ledger/internal/storeutil"
)

// DefaultTable is the ledger's table when neither the URL (?table=NAME)
// nor Options name another.
const DefaultTable = "idemkey_ledger"

// Options tunes a Store; the zero value is the default.
type Options struct {
	// Table is the ledger's table, optionally schema-qualified
	// ("ops.idemkey_ledger"). The URL's table parameter wins over it.
	Table string
	// NoCreate: do not create the table when it is missing (Open fails
	// instead, with an error that wraps fs.ErrNotExist); for roles
	// without CREATE on the schema, and for commands that only read or
	// settle records.
	NoCreate bool
	// RetryFor is how long a call retries after the connection broke (the
	// server restarted, a failover); default 10 s, negative: never.
	RetryFor time.Duration
	// MaxConns bounds the store's connections (default 8).
	MaxConns int
	// PollEvery bounds how long one Wait blocks without a notification
	// (default 1 s), so that a missed notification costs one poll.
	PollEvery time.Duration
	// Warn, if set, receives a warning about the server's configuration:
	// a primary whose standby replicates asynchronously (see
	// ReplicationWarning), checked by Init and by the process's first
	// claim (in the claim's round trip). Given once per process for each
	// ledger.
	Warn func(msg string)
}

// Store is a ledger on one PostgreSQL table.
type Store struct {
	cfg      *pgx.ConnConfig
	table    string // quoted, maybe schema-qualified
	attempts string // the table of high-water marks, quoted
	channel  string // NOTIFY channel
	display  string // the URL with its password redacted
	secrets  []string
	retryFor time.Duration
	poll     time.Duration

	sem  chan struct{}
	idle chan *pgx.Conn

	create bool // create the table when a statement finds it missing

	// binaryLarge: a write that carries largeWrite bytes or more is sent
	// with its parameters described and in binary (see change).
	binaryLarge bool

	lmu      sync.Mutex
	listener *pgx.Conn

	closeOnce sync.Once

	warn    func(msg string) // Options.Warn
	checked atomic.Bool      // the replication warning's check was made
}

// ident reports whether p is an unquoted identifier of at most 63 bytes,
// ^[A-Za-z_][A-Za-z0-9_]{0,62}$ (checked without a regexp: compiling that
// one cost every idemkey process 52 KB and 0.15 ms at start-up).
func ident(p string) bool {
	if len(p) == 0 || len(p) > 63 || p[0] >= '0' && p[0] <= '9' {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// parseTable splits and checks a possibly schema-qualified table name.
func parseTable(name string) (pgx.Identifier, error) {
	parts := strings.Split(name, ".")
	if len(parts) > 2 {
		return nil, fmt.Errorf("table %q: at most schema.table", name)
	}
	for _, p := range parts {
		if !ident(p) {
			return nil, fmt.Errorf("table %q: a name is letters, digits and underscores, at most 63, not starting with a digit", name)
		}
	}
	if lower := strings.ToLower(name); lower != name {
		// idemkey quotes the name, so Fleet, fleet and FLEET would be
		// three tables, three ledgers, and a step run once in each.
		return nil, storeutil.Hinted(fmt.Errorf("table %q: upper case in a table name: the ledger's table is named exactly, so %q and %q would be two ledgers", name, name, lower),
			fmt.Sprintf("use table=%s (a table an older idemkey made under the upper-case name keeps its records after %s)", lower, renameTo(parts)))
	}
	return pgx.Identifier(parts), nil
}

// renameTo is the SQL that gives the objects of a name with upper case
// (schema.table or table) their lower-case names: ALTER TABLE "Fleet"
// RENAME TO fleet, and ALTER SCHEMA "Ops" RENAME TO ops first for a
// schema's. Only parts with upper case are quoted (in lower case, a
// quoted and an unquoted name are the same).
func renameTo(parts []string) string {
	q := func(p string) string {
		if p != strings.ToLower(p) {
			return pgx.Identifier{p}.Sanitize()
		}
		return p
	}
	var sql []string
	schema := ""
	if len(parts) == 2 {
		schema = parts[0]
		if lower := strings.ToLower(schema); lower != schema {
			sql = append(sql, "ALTER SCHEMA "+q(schema)+" RENAME TO "+lower)
			schema = lower
		}
		schema += "."
	}
	table := parts[len(parts)-1]
	if lower := strings.ToLower(table); lower != table {
		sql = append(sql, "ALTER TABLE "+schema+q(table)+" RENAME TO "+lower)
	}
	return strings.Join(sql, "; ")
}

// channelName is the NOTIFY channel of a table: "idemkey:" and its name,
// or a hash of the name where that would pass PostgreSQL's 63-byte limit
// on identifiers.
func channelName(table string) string {
	c := "idemkey:" + table
	if len(c) > 63 {
		sum := sha256.Sum256([]byte(table))
		c = "idemkey:" + hex.EncodeToString(sum[:16])
	}
	return c
}

// Redact returns the URL with its password replaced by xxxxx, for
// messages.
func Redact(raw string) string { return storeutil.Redact(raw) }

func (s *Store) redactErr(err error) error { return storeutil.RedactErr(err, s.secrets) }

// wrap names the ledger in err, unless err names it already (an error of
// ensureTable, met on first use).
func (s *Store) wrap(err error) error {
	if strings.HasPrefix(err.Error(), "ledger at "+s.display+": ") {
		return err
	}
	return fmt.Errorf("ledger at %s: %w", s.display, err)
}

// Open connects to the PostgreSQL database at rawURL (postgres:// or
// postgresql://, every libpq parameter pgx knows, sslmode honoured) and
// makes sure the ledger's table exists. The URL may carry table=NAME.
// Errors never contain the URL's password.
func Open(ctx context.Context, rawURL string, opts Options) (*Store, error) {
	s := &Store{display: Redact(rawURL), secrets: storeutil.Secrets(rawURL)}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, fmt.Errorf("%s: not a postgres:// URL", s.display)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", s.display, err)
	}
	table := opts.Table
	if q.Has("table") {
		if v := q["table"]; len(v) != 1 || v[0] == "" {
			return nil, fmt.Errorf("%s: table= wants one name (given %q)", s.display, v)
		}
		table = q.Get("table")
		q.Del("table")
	}
	if table == "" {
		table = DefaultTable
	}
	ident, err := parseTable(table)
	if err != nil {
		return nil, err
	}
	s.table = ident.Sanitize()
	s.attempts = attemptsTable(ident)
	s.channel = channelName(strings.Join(ident, "."))
	u.RawQuery = q.Encode()

	cfg, err := pgx.ParseConfig(u.String())
	if err != nil {
		return nil, s.redactErr(fmt.Errorf("%s: %w", s.display, err))
	}
	if !q.Has("default_query_exec_mode") {
		// One unnamed statement per call: nothing prepared outlives its
		// transaction, as a transaction-mode pooler requires.
		cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
		s.binaryLarge = cfg.DescriptionCacheCapacity > 0
	}
	// Timestamps come back as text (the exec mode and the simple protocol
	// both read results in text format), which pgx parses only in the ISO
	// DateStyle: a server, database or role set to another (SQL, German,
	// Postgres) made every read of a record fail. The startup packet's
	// setting outranks those defaults, and PgBouncer tracks DateStyle
	// per client, so this holds behind a transaction-mode pooler too.
	for k := range cfg.RuntimeParams {
		if strings.EqualFold(k, "datestyle") {
			delete(cfg.RuntimeParams, k)
		}
	}
	cfg.RuntimeParams["DateStyle"] = "ISO"
	if !q.Has("connect_timeout") {
		cfg.ConnectTimeout = 5 * time.Second
	}
	s.cfg = cfg
	s.retryFor = opts.RetryFor
	if s.retryFor == 0 {
		s.retryFor = 10 * time.Second
	}
	s.poll = opts.PollEvery
	if s.poll <= 0 {
		s.poll = time.Second
	}
	n := opts.MaxConns
	if n <= 0 {
		n = 8
	}
	s.sem = make(chan struct{}, n)
	s.idle = make(chan *pgx.Conn, n)

	s.create = !opts.NoCreate
	// Connect now, so that an unreachable server fails Open. The table is
	// looked for only when a statement finds it missing (one round trip
	// fewer per process), except with NoCreate, where Open checks it.
	s.sem <- struct{}{}
	conn, err := s.connect(ctx)
	if err != nil {
		<-s.sem
		return nil, err
	}
	if opts.NoCreate {
		err = s.ensureTable(ctx, conn, false)
	}
	s.warn = opts.Warn
	s.release(conn, err)
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// warned holds the ledgers whose replication warning this process gave.
var warned sync.Map

// ReplicationWarning returns a warning when the server has a connected
// standby that replicates asynchronously and no synchronous standby is
// asked for (pg_stat_replication's sync_state async, and
// synchronous_standby_names empty): a claim is then acknowledged before
// any standby has it, and a failover to that standby can lose it, and run
// the step again. A role that may not read pg_stat_replication's details
// (pg_read_all_stats) sees its rows with no sync_state: with
// synchronous_standby_names empty every standby is asynchronous, so such
// a row counts too (named by its walsender's pid).
func (s *Store) ReplicationWarning(ctx context.Context) (string, error) {
	var w string
	err := s.do(ctx, func(conn *pgx.Conn) error {
		var err error
		w, err = s.replicationWarning(ctx, conn)
		return err
	})
	if err != nil {
		return "", s.wrap(err)
	}
	return w, nil
}

// replicationQuery reads synchronous_standby_names and the names of the
// standbys that replicate asynchronously.
const replicationQuery = `SELECT current_setting('synchronous_standby_names'),
	coalesce(array_agg(coalesce(nullif(application_name, ''), host(client_addr), 'pid ' || pid) ORDER BY pid)
		FILTER (WHERE sync_state = 'async' OR sync_state IS NULL), '{}')
	FROM pg_stat_replication`

func (s *Store) replicationWarning(ctx context.Context, conn *pgx.Conn) (string, error) {
	return s.replicationRow(conn.QueryRow(ctx, replicationQuery))
}

// emit gives the replication warning w, once per process for the ledger.
func (s *Store) emit(w string) {
	if w == "" || s.warn == nil {
		return
	}
	if _, said := warned.LoadOrStore(s.display, true); !said {
		s.warn(w)
	}
}

// replicationRow is the warning a row of replicationQuery calls for.
func (s *Store) replicationRow(row pgx.Row) (string, error) {
	var names string
	var async []string
	err := row.Scan(&names, &async)
	if err != nil || names != "" || len(async) == 0 {
		return "", err
	}
	who := "standby " + async[0] + " replicates"
	if len(async) > 1 {
		who = "standbys " + strings.Join(async, ", ") + " replicate"
	}
	return fmt.Sprintf("ledger at %s: the primary's %s asynchronously (synchronous_standby_names is empty): a claim is acknowledged before a standby has it, so a failover can lose claims and a step could run twice; set synchronous_standby_names on the primary (e.g. 'ANY 1 (*)') to make every claim wait for a standby",
		s.display, who), nil
}

// tlsMismatch explains a connection that failed because its sslmode does
// not match the server: TLS required of a server without it, or a server
// that accepts only TLS reached without (pg_hba.conf's hostssl).
func tlsMismatch(cfg *pgx.ConnConfig, err error) error {
	var pgErr *pgconn.PgError
	switch {
	case cfg.TLSConfig != nil && strings.Contains(err.Error(), "server refused TLS connection"):
		return storeutil.Hinted(fmt.Errorf("the server does not accept TLS: %w", err),
			"use sslmode=disable for a server without TLS (or prefer, which uses TLS where the server offers it), or turn ssl on at the server")
	case cfg.TLSConfig == nil && errors.As(err, &pgErr) && pgErr.Code == "28000" && strings.Contains(pgErr.Message, "no encryption"):
		return storeutil.Hinted(fmt.Errorf("the server accepts only TLS connections from here: %w", err),
			"use sslmode=require (or verify-full with sslrootcert=the CA's file) for a server that requires TLS")
	}
	return err
}

func (s *Store) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.cfg)
	if err != nil {
		return nil, s.redactErr(fmt.Errorf("cannot reach the ledger at %s: %w", s.display, tlsMismatch(s.cfg, err)))
	}
	return conn, nil
}

// Name is the store's URL with its password redacted.
func (s *Store) Name() string { return s.display }

// Table is the quoted name of the ledger's table.
func (s *Store) Table() string { return s.table }

// DDL is the SQL that creates the ledger's table (and its index) under
// the given name: what a DBA runs instead of letting idemkey create it.
func DDL(table string) (string, error) {
	ident, err := parseTable(table)
	if err != nil {
		return "", err
	}
	return ddl(ident), nil
}

func ddl(ident pgx.Identifier) string {
	t := ident.Sanitize()
	name := ident[len(ident)-1]
	idx := pgx.Identifier{derivedName(name, "_task_tool_md5")}.Sanitize()
	return `CREATE TABLE IF NOT EXISTS ` + t + ` (
    key              text        PRIMARY KEY,
    task             text        NOT NULL,
    tool             text        NOT NULL,
    kind             text        NOT NULL,
    fingerprint      text        NOT NULL,
    request          bytea       NOT NULL,
    state            text        NOT NULL CHECK (state IN ('running', 'succeeded', 'failed', 'unknown')),
    attempt          bigint      NOT NULL CHECK (attempt > 0),
    holder           text        NOT NULL,
    exit_code        integer     NOT NULL,
    reason           text        NOT NULL,
    started_at       timestamptz NOT NULL,
    ended_at         timestamptz,
    lease_expires    timestamptz,
    stdout           bytea       NOT NULL,
    stdout_length    bigint      NOT NULL,
    stdout_sha256    text        NOT NULL,
    stdout_truncated boolean     NOT NULL,
    stderr           bytea       NOT NULL,
    stderr_length    bigint      NOT NULL,
    stderr_sha256    text        NOT NULL,
    stderr_truncated boolean     NOT NULL,
    meta             bytea       NOT NULL,
    token            text        NOT NULL DEFAULT '',
    stored_at        timestamptz DEFAULT now()
);
CREATE TABLE IF NOT EXISTS ` + attemptsTable(ident) + ` (
    key              text        PRIMARY KEY,
    attempt          bigint      NOT NULL
);
CREATE INDEX IF NOT EXISTS ` + idx + ` ON ` + t + ` (md5(task), md5(tool));
COMMENT ON TABLE ` + t + ` IS 'idemkey ledger, schema 3';
`
}

// upgrade is the SQL that takes a table of schema 1 or 2 to 3, before
// ddl. From 1: the claim token and the store's time of each write (a
// record written before has neither: it is fenced by its attempt and
// state, and aged on the caller's clock, as before), and an index of the
// hashes of task and tool in place of the (task, tool) index, whose rows
// a long task id made too large for a btree (more than 2704 bytes). The
// table of the keys' high-water marks is created by ddl.
//
// To 3: lease_until is renamed lease_expires, a column every claim,
// renewal, completion and read names. An idemkey of schema 1 compares no
// claim token: still running beside newer workers, its paused holder
// would renew and complete over a newer attempt that took the same
// attempt number after its own forget (which keeps no high-water mark).
// After the rename every statement such a binary sends fails (undefined
// column), and neither schema 1 nor 2 knows how to add the column back:
// an upgraded ledger locks older writers out, and a fleet upgrades all
// its workers across the change.
func upgrade(ident pgx.Identifier) string {
	t := ident.Sanitize()
	old := append(pgx.Identifier{}, ident[:len(ident)-1]...)
	old = append(old, derivedName(ident[len(ident)-1], "_task_tool"))
	return `ALTER TABLE ` + t + ` ADD COLUMN IF NOT EXISTS token text NOT NULL DEFAULT '', ADD COLUMN IF NOT EXISTS stored_at timestamptz;
ALTER TABLE ` + t + ` ALTER COLUMN stored_at SET DEFAULT now();
ALTER TABLE ` + t + ` RENAME COLUMN lease_until TO lease_expires;
DROP INDEX IF EXISTS ` + old.Sanitize() + `;
`
}

// attemptsTable is the quoted name of the table of the keys' high-water
// marks of attempts beside table: its name and _attempts, in its schema.
// A key's mark is written when its record is deleted (forget, gc), so
// that the next claim continues above it: attempt numbers never go back.
func attemptsTable(ident pgx.Identifier) string {
	a := append(pgx.Identifier{}, ident[:len(ident)-1]...)
	return append(a, derivedName(ident[len(ident)-1], "_attempts")).Sanitize()
}

// derivedName is table's name with suffix or, where that would pass the
// 63-byte limit, its first bytes, a hash of it, and suffix. PostgreSQL
// cuts a longer name to 63 bytes, which for a long table name is the
// table's own name (CREATE INDEX IF NOT EXISTS then skipped, with a
// notice, and the table had no index), or another table's derived name.
func derivedName(table, suffix string) string {
	if len(table)+len(suffix) <= 63 {
		return table + suffix
	}
	sum := sha256.Sum256([]byte(table))
	return table[:63-len(suffix)-9] + "_" + hex.EncodeToString(sum[:4]) + suffix
}

// Init creates what is missing of the ledger (its table, the table of
// its marks), or upgrades it (idemkey ledger init), and then checks, in a
// statement of its own, that both are there at this idemkey's schema.
func (s *Store) Init(ctx context.Context) error {
	return s.do(ctx, func(conn *pgx.Conn) error {
		if err := s.ensureTable(ctx, conn, true); err != nil {
			return err
		}
		st, err := s.look(ctx, conn)
		if err != nil {
			return s.redactErr(fmt.Errorf("ledger at %s: %w", s.display, err))
		}
		if !st.ready() {
			return fmt.Errorf("ledger at %s: %s is not there after creating it (%s)", s.display, s.table, st)
		}
		if s.warn != nil && !s.checked.Swap(true) {
			// A failed check is no reason to fail init: no warning.
			if w, err := s.replicationWarning(ctx, conn); err == nil {
				s.emit(w)
			}
		}
		return nil
	})
}

// tables is what a look found of the ledger.
type tables struct {
	table   bool // the ledger's table exists
	marks   bool // the table of the keys' high-water marks exists
	current bool // the table has schema 3's lease_expires
}

func (t tables) ready() bool { return t.table && t.marks && t.current }

func (t tables) String() string {
	switch {
	case !t.table:
		return "the table is missing"
	case !t.marks:
		return "the table of attempt marks is missing"
	case !t.current:
		return "the table is of an older schema"
	}
	return "ready"
}

// queryer is a connection or a transaction.
type queryer interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// look finds which of the ledger's tables exist, and whether the table is
// of the current schema.
func (s *Store) look(ctx context.Context, q queryer) (tables, error) {
	var t tables
	err := q.QueryRow(ctx, `SELECT to_regclass($1::text) IS NOT NULL, to_regclass($2::text) IS NOT NULL,
		EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1::text) AND attname = 'lease_expires' AND NOT attisdropped)`,
		s.table, s.attempts).Scan(&t.table, &t.marks, &t.current)
	return t, err
}

// noTableError: the ledger's table does not exist (NoCreate).
type noTableError struct{ msg string }

func (e *noTableError) Error() string        { return e.msg }
func (e *noTableError) Is(target error) bool { return target == fs.ErrNotExist }

// ensureTable checks that the table exists at the current schema, with
// the table of its marks beside it, creates what is missing if allowed
// (create; each table on its own: a dropped ledger table is created again
// whatever its marks' table says), and upgrades a table of an older
// schema (see upgrade). Creation and upgrade run in one transaction under
// a transaction-level advisory lock, so that many workers starting at
// once do not race on them.
func (s *Store) ensureTable(ctx context.Context, conn *pgx.Conn, create bool) error {
	st, err := s.look(ctx, conn)
	if err != nil {
		return s.redactErr(fmt.Errorf("ledger at %s: %w", s.display, err))
	}
	if st.ready() {
		return nil
	}
	if !st.table && !create {
		return &noTableError{fmt.Sprintf("ledger at %s: table %s does not exist (create it with idemkey ledger init, or with the DDL in the README)", s.display, s.table)}
	}
	ident, _ := parseTable(strings.ReplaceAll(strings.Trim(s.table, `"`), `"."`, "."))
	tx, err := conn.Begin(ctx)
	if err != nil {
		return s.redactErr(fmt.Errorf("ledger at %s: %w", s.display, err))
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1::text))`, "idemkey ledger init "+s.table); err != nil {
		return s.redactErr(fmt.Errorf("ledger at %s: %w", s.display, err))
	}
	if st, err = s.look(ctx, tx); err != nil {
		return s.redactErr(fmt.Errorf("ledger at %s: %w", s.display, err))
	}
	if !st.ready() {
		sql := ddl(ident)
		if st.table && !st.current {
			sql = upgrade(ident) + sql
		}
		for _, stmt := range strings.Split(strings.TrimSpace(sql), ";\n") {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				what := "creating table " + s.table
				if st.table {
					what = "upgrading table " + s.table + " to this idemkey's schema (as its owner: idemkey ledger init)"
				}
				return s.redactErr(fmt.Errorf("ledger at %s: %s: %w", s.display, what, err))
			}
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return s.redactErr(fmt.Errorf("ledger at %s: %w", s.display, err))
	}
	return nil
}

// acquire returns an idle connection or a new one, within MaxConns.
func (s *Store) acquire(ctx context.Context) (*pgx.Conn, error) {
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case c := <-s.idle:
		return c, nil
	default:
	}
	c, err := s.connect(ctx)
	if err != nil {
		<-s.sem
		return nil, err
	}
	return c, nil
}

// release returns conn to the idle set, or closes it if it is unusable.
func (s *Store) release(conn *pgx.Conn, err error) {
	if err != nil || conn.IsClosed() || conn.PgConn().IsBusy() || conn.PgConn().TxStatus() != 'I' {
		// After an error the connection may be mid-protocol: start afresh.
		conn.Close(context.Background())
	} else {
		select {
		case s.idle <- conn:
		default:
			conn.Close(context.Background())
		}
	}
	<-s.sem
}

// transient reports whether err (from a call on conn, nil if none was
// made) is the connection failing rather than the statement: worth
// retrying on a new connection.
func transient(err error, conn *pgx.Conn) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// 57P01-57P05: admin shutdown, crash shutdown, cannot connect now…;
		// 08: connection exceptions, but for 08P01, protocol_violation: the
		// server refusing what was sent (a NUL in a simple-protocol
		// query), which a new connection would be sent again.
		return strings.HasPrefix(pgErr.Code, "57P") || strings.HasPrefix(pgErr.Code, "08") && pgErr.Code != "08P01"
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) || pgconn.SafeToRetry(err) {
		return true
	}
	return conn != nil && conn.IsClosed()
}

// missingTable reports whether err is PostgreSQL's undefined_table.
func missingTable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42P01"
}

// missingColumn reports whether err is PostgreSQL's undefined_column: a
// table of an older schema.
func missingColumn(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42703"
}

// tooLarge reports whether err is the server refusing a write for its
// size: disk_full, out_of_memory, program_limit_exceeded (a value or row
// too large).
func tooLarge(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case "53100", "53200", "54000":
		return true
	}
	return false
}

// do runs f on a connection; when the connection broke, it retries on a
// new one, with backoff, for up to RetryFor. f must be safe to run again
// (a write checks, on its retry, whether its first try took effect).
func (s *Store) do(ctx context.Context, f func(conn *pgx.Conn) error) error {
	deadline := time.Now().Add(s.retryFor)
	delay := 50 * time.Millisecond
	for {
		conn, err := s.acquire(ctx)
		retry := transient(err, nil)
		if err == nil {
			err = f(conn)
			retry = transient(err, conn)
			if missingTable(err) || missingColumn(err) {
				// First use: create (or upgrade) the table, then run f
				// again.
				conn.Close(context.Background())
				conn, err = s.connect(ctx)
				if err == nil {
					if err = s.ensureTable(ctx, conn, s.create); err == nil {
						err = f(conn)
					}
					retry = transient(err, conn)
				}
			}
			if conn != nil {
				s.release(conn, err)
			} else {
				<-s.sem
			}
		}
		if !retry || s.retryFor < 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return s.redactErr(err)
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return ctx.Err()
		}
		delay = min(2*delay, time.Second)
	}
}

// cols are the record's columns in the order of scan (then the server's
// now(), read as ReadAt).
const cols = `key, task, tool, kind, fingerprint, request, state, attempt, holder, exit_code, reason,
	started_at, ended_at, lease_expires,
	stdout, stdout_length, stdout_sha256, stdout_truncated,
	stderr, stderr_length, stderr_sha256, stderr_truncated, meta, token, stored_at`

// listCols are cols without the outputs' data and meta.
const listCols = `key, task, tool, kind, fingerprint, request, state, attempt, holder, exit_code, reason,
	started_at, ended_at, lease_expires,
	''::bytea, stdout_length, stdout_sha256, stdout_truncated,
	''::bytea, stderr_length, stderr_sha256, stderr_truncated, ''::bytea, token, stored_at`

// scanRecord reads a row of cols (or listCols) and now(), then extra.
func scanRecord(row pgx.Row, extra ...any) (*ledger.Record, error) {
	r := &ledger.Record{}
	var state string
	var ended, lease, storedAt *time.Time
	dest := []any{&r.Key, &r.Task, &r.Tool, &r.Kind, &r.Fingerprint, &r.Request, &state, &r.Attempt,
		&r.Holder, &r.ExitCode, &r.Reason, &r.StartedAt, &ended, &lease,
		&r.Stdout.Data, &r.Stdout.Length, &r.Stdout.SHA256, &r.Stdout.Truncated,
		&r.Stderr.Data, &r.Stderr.Length, &r.Stderr.SHA256, &r.Stderr.Truncated, &r.Meta, &r.Token, &storedAt, &r.ReadAt}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	r.State = ledger.State(state)
	if ended != nil {
		r.EndedAt = *ended
	}
	if lease != nil {
		r.LeaseUntil = *lease
	}
	if storedAt != nil {
		r.StoredAt = *storedAt
	}
	return r, nil
}

// values are rec's column values $1…$22 in the order of cols, $23 the
// lease in microseconds (lease_expires is computed by the server), and $24
// the token; stored_at is the server's now().
func values(rec *ledger.Record, lease time.Duration) []any {
	var ended *time.Time
	if !rec.EndedAt.IsZero() {
		e := rec.EndedAt
		ended = &e
	}
	return []any{text(rec.Key), text(rec.Task), text(rec.Tool), text(rec.Kind), text(rec.Fingerprint), nz(rec.Request), string(rec.State),
		rec.Attempt, text(rec.Holder), int32(rec.ExitCode), text(rec.Reason), rec.StartedAt, ended,
		nz(rec.Stdout.Data), rec.Stdout.Length, rec.Stdout.SHA256, rec.Stdout.Truncated,
		nz(rec.Stderr.Data), rec.Stderr.Length, rec.Stderr.SHA256, rec.Stderr.Truncated, nz(rec.Meta),
		max(lease, 0).Microseconds(), rec.Token}
}

// text is s as a text column can hold it: PostgreSQL's text is UTF-8
// without NUL, so a NUL or a byte that is not UTF-8 (a task given with
// --task, a reason quoting a command path) becomes U+FFFD, rather than
// the statement failing and the step's claim or outcome going unrecorded.
// Filters and the check of a retried write use the same translation.
func text(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// stored is rec as the table keeps it (its text fields through text), for
// comparing with what a retried write finds.
func stored(rec *ledger.Record) *ledger.Record {
	r := *rec
	r.Key, r.Task, r.Tool, r.Kind, r.Fingerprint, r.Holder, r.Reason =
		text(r.Key), text(r.Task), text(r.Tool), text(r.Kind), text(r.Fingerprint), text(r.Holder), text(r.Reason)
	return &r
}

func nz(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// leaseExpr is lease_expires for a record whose state is $7 and lease $23.
const leaseExpr = `CASE WHEN $7::text = 'running' THEN now() + $23::bigint * interval '1 microsecond' END`

// Get implements ledger.Store.
func (s *Store) Get(ctx context.Context, key string) (*ledger.Record, bool, error) {
	var rec *ledger.Record
	var expired bool
	err := s.do(ctx, func(conn *pgx.Conn) error {
		var err error
		rec, expired, err = s.get(ctx, conn, key)
		return err
	})
	if err != nil {
		return nil, false, s.wrap(err)
	}
	return rec, expired, nil
}

// get reads the key's record on conn: nil without one.
func (s *Store) get(ctx context.Context, conn *pgx.Conn, key string) (*ledger.Record, bool, error) {
	var expired bool
	row := conn.QueryRow(ctx, `SELECT `+cols+`, now(),
		state = 'running' AND lease_expires IS NOT NULL AND lease_expires <= now()
		FROM `+s.table+` WHERE key = $1::text`, text(key))
	rec, err := scanRecord(row, &expired)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	return rec, expired, err
}

// effect: how a data-changing statement is wrapped.
type effect int

const (
	// plain: the statement alone; its row count.
	plain effect = iota
	// notify: WITH c AS (stmt RETURNING key, attempt) SELECT …
	// pg_notify(channel, key), so that the notification is part of the
	// change's transaction (a waiter wakes when a record it saw changes).
	notify
	// notifyLazy: notify, and the transaction commits with
	// synchronous_commit off (set_config(…, true) lasts until the end of
	// the statement's own transaction: no session state, nothing a
	// transaction-mode pooler breaks), unless the server asks for a
	// synchronous standby (see lazyCommit). See ledger.LazySwapper.
	notifyLazy
	// notifyKeep: notify, for a DELETE, and the high-water mark of the
	// deleted record's attempt is kept in the attempts table in the same
	// statement.
	notifyKeep
)

// durableCommit, in a statement, makes its transaction commit with
// synchronous_commit on (remote_apply where that is the setting): flushed
// to the WAL, and to the synchronous standbys synchronous_standby_names
// asks for, before the commit returns, whatever the server, database or
// role set (off or local would acknowledge a claim that a crash or a
// failover loses, and the step would run again). A claim's statements
// carry it: a claim is durable before its step starts.
const durableCommit = `set_config('synchronous_commit', CASE current_setting('synchronous_commit') WHEN 'remote_apply' THEN 'remote_apply' ELSE 'on' END, true)`

// lazyCommit is a completion's: synchronous_commit off on a server that
// asks for no synchronous standby (a completion lost in its crash leaves
// the attempt running with its lease: unknown, never a repeat); where
// synchronous_standby_names asks for one, durableCommit's, so that a step
// that finished before a failover replays after it rather than coming
// back unknown.
const lazyCommit = `set_config('synchronous_commit', CASE WHEN current_setting('synchronous_standby_names') = '' THEN 'off'
	WHEN current_setting('synchronous_commit') = 'remote_apply' THEN 'remote_apply' ELSE 'on' END, true)`

// changed runs a data-changing statement as eff says and returns how many
// rows changed. An error for the write's size is ledger.ErrTooLarge.
func (s *Store) changed(ctx context.Context, conn *pgx.Conn, eff effect, stmt string, args ...any) (int, error) {
	n, err := s.change(ctx, conn, eff, stmt, args...)
	if tooLarge(err) {
		err = ledger.TooLarge(err)
	}
	return n, err
}

// largeWrite is the size of a write's byte parameters (a request, the
// outputs) from which change sends them in binary.
const largeWrite = 64 << 10

// binaryMode returns a write's args, led by pgx's describe-first mode when
// its byte parameters (a request, the outputs) come to largeWrite bytes or
// more. In the exec mode every parameter is text, a bytea twice its size
// in hex, built in a buffer that grows as it fills: 256 MiB of outputs
// would take 2.3 GB and twelve seconds of the client. Described first, the
// statement's parameters go in binary, as they are. The description is a
// round trip of its own, and the statement is parsed again with its
// execution, so nothing on the server outlives either: a transaction-mode
// pooler may send them to different sessions. With the exec mode set by
// the URL, or pgx's description cache off, a large write goes as any other.
func (s *Store) binaryMode(args []any) []any {
	if !s.binaryLarge {
		return args
	}
	n := 0
	for _, a := range args {
		if b, ok := a.([]byte); ok {
			n += len(b)
		}
	}
	if n < largeWrite {
		return args
	}
	return append([]any{pgx.QueryExecModeCacheDescribe}, args...)
}

func (s *Store) change(ctx context.Context, conn *pgx.Conn, eff effect, stmt string, args ...any) (int, error) {
	if eff == plain {
		args = s.binaryMode(args)
		tag, err := conn.Exec(ctx, stmt, args...)
		return int(tag.RowsAffected()), err
	}
	args = append(args, s.channel)
	ch := fmt.Sprint(len(args))
	commit, keep := ", "+durableCommit, ""
	switch eff {
	case notifyLazy:
		commit = ", " + lazyCommit
	case notifyKeep:
		keep = `, h AS (INSERT INTO ` + s.attempts + ` AS a (key, attempt) SELECT key, attempt FROM c
			ON CONFLICT (key) DO UPDATE SET attempt = greatest(a.attempt, excluded.attempt))`
	}
	sql := `WITH c AS (` + stmt + ` RETURNING key, attempt)` + keep + ` SELECT count(*) FROM c, LATERAL (SELECT pg_notify($` + ch +
		`::text, c.key)` + commit + `) n`
	var n int
	err := conn.QueryRow(ctx, sql, s.binaryMode(args)...).Scan(&n)
	return n, err
}

// write runs a conditional write; if a try broke the connection after
// sending, a later try that changes nothing checks whether the stored
// record is rec (the first try took effect).
func (s *Store) write(ctx context.Context, rec *ledger.Record, eff effect, stmt string, args ...any) (bool, error) {
	var ok, ambiguous bool
	err := s.do(ctx, func(conn *pgx.Conn) error {
		n, err := s.changed(ctx, conn, eff, stmt, args...)
		if err != nil {
			if transient(err, conn) && !pgconn.SafeToRetry(err) {
				ambiguous = true
			}
			return err
		}
		ok = n == 1
		if !ok && ambiguous {
			found, _, err := s.get(ctx, conn, rec.Key)
			if err != nil {
				return err
			}
			ok = storeutil.Same(found, stored(rec))
		}
		return nil
	})
	if err != nil {
		return false, s.wrap(err)
	}
	return ok, nil
}

// insertStmt is the INSERT … ON CONFLICT DO NOTHING of rec's values
// ($1…$24, as values gives them), at the larger of its attempt and one
// more than the key's high-water mark, returning the attempt.
func (s *Store) insertStmt() string {
	return `INSERT INTO ` + s.table + ` (` + cols + `) VALUES ($1::text, $2::text, $3::text, $4::text, $5::text,
		$6::bytea, $7::text, greatest($8::bigint, coalesce((SELECT attempt FROM ` + s.attempts + ` WHERE key = $1::text), 0) + 1),
		$9::text, $10::integer, $11::text, $12::timestamptz, $13::timestamptz,
		` + leaseExpr + `, $14::bytea, $15::bigint, $16::text, $17::boolean, $18::bytea, $19::bigint, $20::text,
		$21::boolean, $22::bytea, $24::text, now()) ON CONFLICT (key) DO NOTHING RETURNING attempt, ` + durableCommit
}

// insert runs insertStmt on conn and reports whether it inserted (rec's
// Attempt then set to the attempt stored).
func (s *Store) insert(ctx context.Context, conn *pgx.Conn, rec *ledger.Record, lease time.Duration) (bool, error) {
	var attempt int64
	var commit string
	scan := func(row pgx.Row) error { return row.Scan(&attempt, &commit) }
	var err error
	if s.warn != nil && !s.checked.Swap(true) {
		// The process's first claim carries the replication warning's
		// check in its round trip (a batch: no round trip of its own).
		// A failed check gives no warning, and its callback returns nil
		// so that the claim's result is read whatever the check's.
		var checkErr error
		b := &pgx.Batch{}
		b.Queue(replicationQuery).QueryRow(func(row pgx.Row) error {
			var w string
			if w, checkErr = s.replicationRow(row); checkErr == nil {
				s.emit(w)
			}
			return nil
		})
		b.Queue(s.insertStmt(), values(rec, lease)...).QueryRow(scan)
		err = conn.SendBatch(ctx, b).Close()
		var refused *pgconn.PgError
		if errors.As(checkErr, &refused) && !transient(err, conn) {
			// The server refused the check, and so skipped the claim
			// queued after it: the claim alone.
			err = scan(conn.QueryRow(ctx, s.insertStmt(), values(rec, lease)...))
		}
	} else {
		err = scan(conn.QueryRow(ctx, s.insertStmt(), values(rec, lease)...))
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	rec.Attempt = attempt
	return true, nil
}

// Insert implements ledger.Store: INSERT … ON CONFLICT DO NOTHING, with no
// notification (no one waits on a missing record; and a NOTIFY takes a
// cluster-wide lock until its transaction's commit is flushed, which
// would queue every worker's claim behind the others' fsyncs).
func (s *Store) Insert(ctx context.Context, rec *ledger.Record, lease time.Duration) (bool, error) {
	inserted, _, _, err := s.insertOrGet(ctx, rec, lease, false)
	return inserted, err
}

// InsertOrGet implements ledger.InsertGetter: the INSERT … ON CONFLICT DO
// NOTHING of Insert and, only when it inserted nothing, Get's SELECT, on
// the same connection. A fresh key (the step to run) costs one statement
// that the server plans without a scan; a stored one (a replay) two. One
// statement doing both (a CTE and a UNION) cost a fresh claim the planning
// of the SELECT too, on the cold catalog caches of a new backend.
func (s *Store) InsertOrGet(ctx context.Context, rec *ledger.Record, lease time.Duration) (bool, *ledger.Record, bool, error) {
	return s.insertOrGet(ctx, rec, lease, true)
}

// insertOrGet inserts rec and, if it was not inserted, reads the stored
// record when read is set, or when a try whose connection broke may have
// inserted it (its token tells).
func (s *Store) insertOrGet(ctx context.Context, rec *ledger.Record, lease time.Duration, read bool) (bool, *ledger.Record, bool, error) {
	var inserted, expired, ambiguous bool
	var found *ledger.Record
	err := s.do(ctx, func(conn *pgx.Conn) error {
		var err error
		inserted, err = s.insert(ctx, conn, rec, lease)
		if tooLarge(err) {
			err = ledger.TooLarge(err)
		}
		if err != nil {
			if transient(err, conn) && !pgconn.SafeToRetry(err) {
				ambiguous = true
			}
			return err
		}
		if inserted || !read && !ambiguous {
			return nil
		}
		if found, expired, err = s.get(ctx, conn, rec.Key); err != nil {
			return err
		}
		if ambiguous && storeutil.SameInsert(found, stored(rec)) {
			// An earlier try inserted it before the connection broke.
			rec.Attempt = found.Attempt
			found, expired, inserted = nil, false, true
		}
		return nil
	})
	if err != nil {
		return false, nil, false, s.wrap(err)
	}
	return inserted, found, expired, nil
}

// Swap implements ledger.Store: UPDATE … WHERE key = $1 AND attempt, state
// and token still match (AND the lease ran out on now(), if needExpired).
func (s *Store) Swap(ctx context.Context, from ledger.Version, needExpired bool, rec *ledger.Record, lease time.Duration) (bool, error) {
	return s.swap(ctx, from, needExpired, rec, lease, notify)
}

// SwapLazy implements ledger.LazySwapper: Swap's UPDATE, committed with
// synchronous_commit off. The claim was flushed to the WAL before the
// command ran; this completion is visible at once and reaches the disk
// with the WAL writer's next flush (wal_writer_delay, 200 ms by default)
// or with any later durable commit. Lost in a crash of the server, it
// leaves the attempt running with its lease, which runs out into unknown.
func (s *Store) SwapLazy(ctx context.Context, from ledger.Version, rec *ledger.Record) (bool, error) {
	return s.swap(ctx, from, false, rec, 0, notifyLazy)
}

func (s *Store) swap(ctx context.Context, from ledger.Version, needExpired bool, rec *ledger.Record, lease time.Duration, eff effect) (bool, error) {
	args := append(values(rec, lease), from.Attempt, string(from.State), from.Token)
	cond := ``
	if needExpired {
		cond = ` AND lease_expires IS NOT NULL AND lease_expires <= now()`
	}
	stmt := `UPDATE ` + s.table + ` SET task = $2::text, tool = $3::text, kind = $4::text, fingerprint = $5::text,
		request = $6::bytea, state = $7::text, attempt = $8::bigint, holder = $9::text, exit_code = $10::integer,
		reason = $11::text, started_at = $12::timestamptz, ended_at = $13::timestamptz, lease_expires = ` + leaseExpr + `,
		stdout = $14::bytea, stdout_length = $15::bigint, stdout_sha256 = $16::text, stdout_truncated = $17::boolean,
		stderr = $18::bytea, stderr_length = $19::bigint, stderr_sha256 = $20::text, stderr_truncated = $21::boolean,
		meta = $22::bytea, token = $24::text, stored_at = now()
		WHERE key = $1::text AND attempt = $25::bigint AND state = $26::text AND token = $27::text` + cond
	return s.write(ctx, rec, eff, stmt, args...)
}

// Renew implements ledger.Store: the lease runs for lease from now() (a
// lease of zero or less ends it now).
func (s *Store) Renew(ctx context.Context, key string, from ledger.Version, lease time.Duration) (bool, error) {
	var ok bool
	err := s.do(ctx, func(conn *pgx.Conn) error {
		tag, err := conn.Exec(ctx, `UPDATE `+s.table+` SET lease_expires = now() + $3::bigint * interval '1 microsecond'
			WHERE key = $1::text AND attempt = $2::bigint AND state = $4::text AND token = $5::text`,
			text(key), from.Attempt, max(lease, 0).Microseconds(), string(from.State), from.Token)
		ok = err == nil && tag.RowsAffected() == 1
		return err
	})
	if err != nil {
		return false, s.wrap(err)
	}
	return ok, nil
}

// List implements ledger.Store. Task and tool are matched through their
// hashes' index (and then exactly).
func (s *Store) List(ctx context.Context, f ledger.Filter) ([]*ledger.Record, error) {
	var out []*ledger.Record
	err := s.do(ctx, func(conn *pgx.Conn) error {
		out = out[:0]
		rows, err := conn.Query(ctx, `SELECT `+listCols+`, now() FROM `+s.table+`
			WHERE ($1::text = '' OR md5(task) = md5($1::text) AND task = $1::text)
			AND ($2::text = '' OR md5(tool) = md5($2::text) AND tool = $2::text)
			AND ($3::text = '' OR state = $3::text) ORDER BY started_at, key`, text(f.Task), text(f.Tool), string(f.State))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanRecord(rows)
			if err != nil {
				return err
			}
			r.Stdout.Data, r.Stderr.Data, r.Meta = nil, nil, nil
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, s.wrap(err)
	}
	return out, nil
}

// Delete implements ledger.Store: with from, DELETE … WHERE key, attempt,
// state and token still match and, for a running version, its lease ran
// out on now() (a holder that renewed since keeps its record). The
// record's attempt is kept as the key's high-water mark, in the same
// statement.
func (s *Store) Delete(ctx context.Context, key string, from *ledger.Version) (bool, error) {
	var n int
	err := s.do(ctx, func(conn *pgx.Conn) error {
		var err error
		if from == nil {
			n, err = s.changed(ctx, conn, notifyKeep, `DELETE FROM `+s.table+` WHERE key = $1::text`, text(key))
		} else {
			n, err = s.changed(ctx, conn, notifyKeep, `DELETE FROM `+s.table+` WHERE key = $1::text AND attempt = $2::bigint AND state = $3::text
				AND token = $4::text AND (state <> 'running' OR lease_expires IS NOT NULL AND lease_expires <= now())`,
				text(key), from.Attempt, string(from.State), from.Token)
		}
		return err
	})
	if err != nil {
		return false, s.wrap(err)
	}
	return n == 1, nil
}

// Wait implements ledger.Waiter with LISTEN/NOTIFY on a connection of its
// own. The first call only starts listening and returns, so that the
// caller's next read sees every change after it; later calls return on a
// notification for key, or after PollEvery without one (a pooler that
// drops notifications makes Wait a poll, never a hang).
func (s *Store) Wait(ctx context.Context, key string) error {
	s.lmu.Lock()
	defer s.lmu.Unlock()
	if s.listener == nil {
		conn, err := s.connect(ctx)
		if err != nil {
			return s.pause(ctx)
		}
		if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{s.channel}.Sanitize()); err != nil {
			conn.Close(context.Background())
			return s.pause(ctx)
		}
		s.listener = conn
		return nil
	}
	deadline := time.Now().Add(s.poll)
	for {
		wctx, cancel := context.WithDeadline(ctx, deadline)
		n, err := s.listener.WaitForNotification(wctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if s.listener.IsClosed() {
				s.listener = nil
			}
			return nil
		}
		if n.Payload == key {
			return nil
		}
	}
}

func (s *Store) pause(ctx context.Context) error {
	select {
	case <-time.After(s.poll):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close implements ledger.Store.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		for {
			select {
			case c := <-s.idle:
				c.Close(context.Background())
				continue
			default:
			}
			break
		}
		s.lmu.Lock()
		if s.listener != nil {
			s.listener.Close(context.Background())
			s.listener = nil
		}
		s.lmu.Unlock()
	})
	return nil
}

var (
	_ ledger.Store        = (*Store)(nil)
	_ ledger.Waiter       = (*Store)(nil)
	_ ledger.InsertGetter = (*Store)(nil)
	_ ledger.LazySwapper  = (*Store)(nil)
)

// Schema returns the version of the ledger's table, from its comment
// ('idemkey ledger, schema N'; a table without one is taken as 1). A
// missing table is an error that wraps fs.ErrNotExist.
func (s *Store) Schema(ctx context.Context) (int, error) {
	var comment *string
	var exists bool
	err := s.do(ctx, func(conn *pgx.Conn) error {
		return conn.QueryRow(ctx, `SELECT to_regclass($1::text) IS NOT NULL, obj_description(to_regclass($1::text), 'pg_class')`, s.table).Scan(&exists, &comment)
	})
	if err != nil {
		return 0, s.wrap(err)
	}
	if !exists {
		return 0, &noTableError{fmt.Sprintf("ledger at %s: table %s does not exist", s.display, s.table)}
	}
	n := 1
	if comment != nil {
		fmt.Sscanf(strings.TrimPrefix(*comment, "idemkey ledger, schema "), "%d", &n)
	}
	return n, nil
}
