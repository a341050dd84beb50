// Package sqlite is the embedded ledger store: one SQLite file through
// modernc.org/sqlite (pure Go, so static builds keep working), in WAL mode
// with synchronous=FULL, every write in a BEGIN IMMEDIATE transaction, and
// no transaction open while a step runs.
//
// It has no leases: on one machine, the liveness of a running attempt is
// a kernel lock (flock) on a per-key lock file in a directory beside the
// database (see LockKey), never a lock on the SQLite file itself, whose
// POSIX locks SQLite owns and releases whenever any descriptor of the file
// is closed.
package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemkey/idemkey/derive/ledger"
	"modernc.org/libc"
	sqlitedrv "modernc.org/sqlite" // the driver
	sqlite3 "modernc.org/sqlite/lib"
)

// SchemaVersion is the version of the schema this package writes. A
// ledger at an older version is migrated when opened; one at a newer
// version (written by a newer idemkey) is refused.
const SchemaVersion = 3

// migrations[i] takes a ledger from version i to i+1.
var migrations = []string{
	// 0 → 1: the records table.
	`CREATE TABLE records (
		key              TEXT PRIMARY KEY,
		task             TEXT NOT NULL,
		tool             TEXT NOT NULL,
		kind             TEXT NOT NULL,
		fingerprint      TEXT NOT NULL,
		request          BLOB,
		state            TEXT NOT NULL,
		attempt          INTEGER NOT NULL,
		holder           TEXT NOT NULL DEFAULT '',
		exit_code        INTEGER NOT NULL DEFAULT -1,
		reason           TEXT NOT NULL DEFAULT '',
		started_at       INTEGER NOT NULL,
		ended_at         INTEGER NOT NULL DEFAULT 0,
		stdout           BLOB,
		stdout_length    INTEGER NOT NULL DEFAULT 0,
		stdout_sha256    TEXT NOT NULL DEFAULT '',
		stdout_truncated INTEGER NOT NULL DEFAULT 0,
		stderr           BLOB,
		stderr_length    INTEGER NOT NULL DEFAULT 0,
		stderr_sha256    TEXT NOT NULL DEFAULT '',
		stderr_truncated INTEGER NOT NULL DEFAULT 0,
		meta             BLOB
	);`,
	// 1 → 2: `ledger ls --task/--tool/--state` and gc without a full scan.
	`CREATE INDEX records_task_tool ON records (task, tool, state);
	 CREATE INDEX records_ended ON records (ended_at);`,
	// 2 → 3: fencing by claim token (a record written before has none,
	// and is fenced by its attempt and state as before); outputs kept in
	// files beside the ledger (external: 1 stdout, 2 stderr; see
	// outputFile); and the key's high-water mark of attempts, kept when
	// its record is deleted (by forget, gc, or a DELETE behind idemkey's
	// back), so that the next claim continues above it.
	`ALTER TABLE records ADD COLUMN token TEXT NOT NULL DEFAULT '';
	 ALTER TABLE records ADD COLUMN external INTEGER NOT NULL DEFAULT 0;
	 CREATE TABLE attempts (key TEXT PRIMARY KEY, attempt INTEGER NOT NULL);
	 CREATE TRIGGER records_attempts AFTER DELETE ON records BEGIN
	   INSERT OR REPLACE INTO attempts (key, attempt)
	     VALUES (old.key, max(old.attempt, coalesce((SELECT attempt FROM attempts WHERE key = old.key), 0)));
	 END;`,
}

// walAutoCheckpoint is the WAL's length, in pages, past which a commit
// checkpoints it (SQLite's wal_autocheckpoint; its default is 1000). The
// store does not checkpoint when it closes (see noCheckpointOnClose), so
// this bounds the WAL, and with it what each new process reads: the first
// connection of a process rebuilds SQLite's WAL index by reading and
// checksumming every frame of the WAL. A step writes about 6 pages (the
// claim's and the completion's row and index pages), so 64 pages is a
// checkpoint every ten steps or so (two fdatasyncs, and one more when the
// next commit restarts the WAL) and at most 256 KiB to read at open;
// with 1000 pages the reading costs more than the checkpoints it saves
// (measured: 10.2 ms per step against 9.1 ms with 64).
const walAutoCheckpoint = 64

// Options tunes Open.
type Options struct {
	// BusyTimeout is how long a write waits for another writer (default
	// 10 s).
	BusyTimeout time.Duration
	// FSType, if set, replaces the statfs file-system type of the
	// ledger's directory (a test hook: a network file system cannot be
	// mounted in a test).
	FSType func(real int64) int64
	// Version, if set, creates or migrates the schema only up to this
	// version (a test hook: a ledger as an older idemkey wrote it).
	Version int
	// MustExist opens only a ledger file that exists: without one, Open
	// creates nothing (no directory, no file) and returns an error that
	// wraps fs.ErrNotExist, once the file system the ledger would be on
	// has passed the check (for commands that only read or settle
	// records).
	MustExist bool
}

// Store is a ledger in one SQLite file.
type Store struct {
	db   *sql.DB
	path string
	busy time.Duration

	queueDir sync.Once // the lock directory, made for the writer queue
	queueErr error
	// queueStuck: a wait for the writer lock ran out. Until the lock is
	// seen free again, this store's writes only try it without waiting
	// (a gc of many records behind a stopped holder would otherwise
	// wait queuePatience for each).
	queueStuck atomic.Bool
}

// ErrNewerSchema: the file was written by a newer idemkey.
var ErrNewerSchema = errors.New("ledger schema is newer than this idemkey")

// Open opens (creating if needed) the ledger at path: its directory with
// mode 0700, the file with 0600. A directory on a network or FUSE file
// system is refused: SQLite's locking is not reliable there; so is a path
// another user could have written (see locate).
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("no ledger path")
	}
	path, err := locate(path, opts) // trust.go
	if err != nil {
		return nil, err
	}
	busy := opts.BusyTimeout
	if busy <= 0 {
		busy = 10 * time.Second
	}
	dsn := "file:" + uriEscape(path) + "?_pragma=busy_timeout(" + strconv.FormatInt(busy.Milliseconds(), 10) + ")" +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=wal_autocheckpoint(" + strconv.Itoa(walAutoCheckpoint) + ")&_txlock=immediate"
	want := SchemaVersion
	if opts.Version > 0 {
		want = opts.Version
	}
	// Opening can meet SQLITE_BUSY without SQLite's busy handler being
	// asked: many processes opening a new file at once race to switch it
	// to WAL mode (and to create the schema). Those attempts are tried
	// again, with a short jittered pause, within the busy timeout.
	deadline := time.Now().Add(busy)
	for pause := 2 * time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		s, err := openOnce(ctx, path, dsn, want, busy)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return s, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pause + time.Duration(rand.Int64N(int64(pause)))):
		}
	}
}

// openOnce makes one attempt at opening the store.
func openOnce(ctx context.Context, path, dsn string, want int, busy time.Duration) (*Store, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	// One connection: SQLite has one writer anyway, and the file
	// controls below belong to a connection.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	s := &Store{db: db, path: path, busy: busy}
	if err := s.tuneConn(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.migrate(ctx, want); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// isBusy reports whether err is SQLite's SQLITE_BUSY (or an extended
// code of it).
func isBusy(err error) bool {
	var se *sqlitedrv.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// tuneConn sets the connection's file controls (see persistWAL and
// noCheckpointOnClose), and makes SQLite commit with fdatasync.
//
// fdatasync writes a file's data and the metadata needed to read it back
// (its size included), which is all a commit needs; it skips the inode's
// timestamps. Every Linux distribution's SQLite commits with fdatasync
// (its configure script finds it); the transpiled library keeps SQLite's
// source default, fsync, unless told (modernc.org/sqlite.Fdatasync). The
// durability of a commit is the same; the switch is process-wide, and
// where fdatasync does not exist (macOS, Windows) it stays fsync.
func (s *Store) tuneConn(ctx context.Context) error {
	fdatasyncOnce.Do(func() { _, _ = sqlitedrv.Fdatasync(true) })
	c, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Raw(func(dc any) error {
		if err := persistWAL(dc); err != nil {
			return err
		}
		return noCheckpointOnClose(dc)
	})
}

var fdatasyncOnce sync.Once

// persistWAL keeps the -wal and -shm files when the last connection
// closes, so that the next process neither creates them again nor syncs
// the directory for them.
func persistWAL(dc any) error {
	if fc, ok := dc.(interface {
		FileControlPersistWAL(string, int) (int, error)
	}); ok {
		_, err := fc.FileControlPersistWAL("main", 1)
		return err
	}
	return nil
}

// noCheckpointOnClose sets SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE on the
// connection: closing the last connection then leaves the WAL as it is
// instead of copying it into the database file, which costs two more
// fsyncs (the WAL, then the database) in every short-lived idemkey
// process.
//
// Safe: a checkpoint moves committed pages from the WAL into the database
// file; it adds no durability. With synchronous=FULL every commit (the
// claim, the completion) is already on disk in the WAL when it returns,
// and the WAL is kept (persistWAL), so the next process reads the records
// from it, as SQLite does after any crash. The WAL does not grow without
// bound: SQLite's automatic checkpoint (wal_autocheckpoint, 1000 pages)
// runs in whichever process commits past it, so one step in a few hundred
// pays for a checkpoint, and `ledger gc` or any later commit continues it.
//
// modernc.org/sqlite does not expose sqlite3_db_config for this option,
// so the connection's handle is read from the driver's connection (its
// db and tls fields). If a later driver renames them, this does nothing
// (closing then checkpoints, as before: slower, never less safe);
// TestNoCheckpointOnClose notices.
func noCheckpointOnClose(dc any) error {
	v := reflect.ValueOf(dc)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	db, tls := v.Elem().FieldByName("db"), v.Elem().FieldByName("tls")
	if !db.IsValid() || db.Kind() != reflect.Uintptr || !tls.IsValid() || tls.Type() != reflect.TypeFor[*libc.TLS]() {
		return nil
	}
	t := (*libc.TLS)(tls.UnsafePointer())
	if t == nil || db.Uint() == 0 {
		return nil
	}
	// sqlite3_db_config(db, op, int onoff, int *pRes): two 8-byte
	// vararg slots, as the driver passes them.
	bp := libc.Xmalloc(t, 16)
	if bp == 0 {
		return errors.New("sqlite: out of memory")
	}
	defer libc.Xfree(t, bp)
	if rc := sqlite3.Xsqlite3_db_config(t, uintptr(db.Uint()), sqlite3.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
		libc.VaList(bp, int32(1), uintptr(0))); rc != sqlite3.SQLITE_OK {
		return fmt.Errorf("sqlite3_db_config(SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE) returned %d", rc)
	}
	return nil
}

// Path is the database file's path.
func (s *Store) Path() string { return s.path }

func uriEscape(p string) string {
	r := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	return r.Replace(p)
}

// version reads the schema version (0: a new file).
func version(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int, error) {
	var v int
	err := q.QueryRowContext(ctx, `SELECT version FROM idemkey_schema`).Scan(&v)
	if err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return 0, nil
		}
		return 0, err
	}
	return v, nil
}

func (s *Store) migrate(ctx context.Context, want int) error {
	v, err := version(ctx, s.db)
	if err != nil {
		return err
	}
	if v == want {
		return nil
	}
	if v > SchemaVersion {
		return fmt.Errorf("%w: %s has schema version %d, this idemkey reads up to %d", ErrNewerSchema, s.path, v, SchemaVersion)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// Another process may have migrated meanwhile: read again under the
	// write lock.
	if v, err = version(ctx, tx); err != nil {
		return err
	}
	if v > SchemaVersion {
		return fmt.Errorf("%w: %s has schema version %d, this idemkey reads up to %d", ErrNewerSchema, s.path, v, SchemaVersion)
	}
	if v == 0 {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS idemkey_schema (version INTEGER NOT NULL); INSERT INTO idemkey_schema VALUES (0)`); err != nil {
			return err
		}
	}
	for ; v < want; v++ {
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			return fmt.Errorf("migrating the ledger schema from version %d: %w", v, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE idemkey_schema SET version = ?`, v); err != nil {
		return err
	}
	return tx.Commit()
}

// Schema returns the file's schema version.
func (s *Store) Schema(ctx context.Context) (int, error) { return version(ctx, s.db) }

const columns = `key, task, tool, kind, fingerprint, request, state, attempt, holder, exit_code, reason,
	started_at, ended_at, stdout, stdout_length, stdout_sha256, stdout_truncated,
	stderr, stderr_length, stderr_sha256, stderr_truncated, meta, token, external`

const listColumns = `key, task, tool, kind, fingerprint, NULL, state, attempt, holder, exit_code, reason,
	started_at, ended_at, NULL, stdout_length, stdout_sha256, stdout_truncated,
	NULL, stderr_length, stderr_sha256, stderr_truncated, NULL, token, 0`

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// values are rec's column values in the order of columns; the outputs
// whose bits are set in external are kept in files, and their columns
// are NULL.
func values(r *ledger.Record, external int) []any {
	stdout, stderr := r.Stdout.Data, r.Stderr.Data
	if external&extStdout != 0 {
		stdout = nil
	}
	if external&extStderr != 0 {
		stderr = nil
	}
	return []any{r.Key, r.Task, r.Tool, r.Kind, r.Fingerprint, r.Request, string(r.State), r.Attempt, r.Holder,
		r.ExitCode, r.Reason, nanos(r.StartedAt), nanos(r.EndedAt),
		stdout, r.Stdout.Length, r.Stdout.SHA256, r.Stdout.Truncated,
		stderr, r.Stderr.Length, r.Stderr.SHA256, r.Stderr.Truncated, r.Meta, r.Token, external}
}

type scanner interface{ Scan(...any) error }

// scan reads a row of columns (or listColumns) and its external bits.
func scan(sc scanner) (*ledger.Record, int, error) {
	var r ledger.Record
	var state string
	var started, ended int64
	var external int
	err := sc.Scan(&r.Key, &r.Task, &r.Tool, &r.Kind, &r.Fingerprint, &r.Request, &state, &r.Attempt, &r.Holder,
		&r.ExitCode, &r.Reason, &started, &ended,
		&r.Stdout.Data, &r.Stdout.Length, &r.Stdout.SHA256, &r.Stdout.Truncated,
		&r.Stderr.Data, &r.Stderr.Length, &r.Stderr.SHA256, &r.Stderr.Truncated, &r.Meta, &r.Token, &external)
	if err != nil {
		return nil, 0, err
	}
	r.State = ledger.State(state)
	r.StartedAt, r.EndedAt = fromNanos(started), fromNanos(ended)
	return &r, external, nil
}

// Get implements ledger.Store; a SQLite record's lease never expires. An
// output kept in a file is read from it; if the record changed meanwhile
// (a takeover removed the file), it is read again.
func (s *Store) Get(ctx context.Context, key string) (*ledger.Record, bool, error) {
	for try := 0; ; try++ {
		r, external, err := scan(s.db.QueryRowContext(ctx, `SELECT `+columns+` FROM records WHERE key = ?`, key))
		if errors.Is(err, sql.ErrNoRows) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		if err := s.readOutputs(r, external); err != nil {
			if try < 3 && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, false, err
		}
		return r, false, nil
	}
}

// write runs one statement in a BEGIN IMMEDIATE transaction, committed
// with synchronous=FULL, and reports whether it changed a row.
func (s *Store) write(ctx context.Context, query string, args ...any) (bool, error) {
	return s.writeSync(ctx, true, stmtBody(ctx, query, args...))
}

// stmtBody is a transaction's body that runs one statement and reports
// whether it changed a row.
func stmtBody(ctx context.Context, query string, args ...any) func(*sql.Tx) (bool, error) {
	return func(tx *sql.Tx) (bool, error) {
		res, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return false, err
		}
		n, err := res.RowsAffected()
		return n > 0, err
	}
}

// writeSync runs body in a BEGIN IMMEDIATE transaction and commits it if
// body reports a change; with durable false the commit does not wait for
// the WAL to reach the disk (synchronous=NORMAL for this one commit; see
// SwapLazy). An error for the write's size (SQLITE_FULL, SQLITE_TOOBIG)
// is marked ledger.ErrTooLarge.
//
// Writers of one ledger take turns on a kernel lock first (the queue
// file in the lock directory), held for the transaction and released when
// it ends. SQLite alone would make a writer that finds the database locked
// sleep 1, 2, 5, 10… ms before trying again (its busy handler has no way
// to be woken), and under many concurrent steps most of the time went to
// those sleeps; the kernel wakes the next writer the moment the lock is
// free. SQLite's own locking still decides: the queue only orders
// idemkey's writers, and a writer that cannot take it within
// queuePatience goes on to SQLite's lock as before.
func (s *Store) writeSync(ctx context.Context, durable bool, body func(*sql.Tx) (bool, error)) (bool, error) {
	ok, err := s.txn(ctx, durable, body)
	if isFull(err) {
		err = ledger.TooLarge(err)
	}
	return ok, err
}

func (s *Store) txn(ctx context.Context, durable bool, body func(*sql.Tx) (bool, error)) (bool, error) {
	if q := s.queue(); q != nil {
		defer CloseLock(q)
	}
	c, err := s.db.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer c.Close()
	if !durable {
		if _, err := c.ExecContext(ctx, `PRAGMA synchronous = NORMAL`); err != nil {
			return false, err
		}
		defer func() {
			if _, err := c.ExecContext(context.Background(), `PRAGMA synchronous = FULL`); err != nil {
				// Never leave a connection that commits lazily: drop it
				// (the next one is opened with synchronous=FULL).
				_ = c.Raw(func(any) error { return driver.ErrBadConn })
			}
		}()
	}
	tx, err := c.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	ok, err := body(tx)
	if err != nil || !ok {
		return false, err
	}
	return true, tx.Commit()
}

// isFull reports whether err is SQLite refusing a write for its size: the
// disk (or max_page_count) is full, or a value is larger than SQLite
// holds.
func isFull(err error) bool {
	var se *sqlitedrv.Error
	if !errors.As(err, &se) {
		return false
	}
	c := se.Code() & 0xff
	return c == sqlite3.SQLITE_FULL || c == sqlite3.SQLITE_TOOBIG
}

// queuePatience bounds a writer's wait for the writer lock. A holder
// keeps it for one short transaction (milliseconds, a few hundred at most
// behind a long queue): a wait that lasts longer means a holder that is
// stopped (SIGSTOP, a debugger) or hung, which the busy timeout alone would
// make every other write on the ledger wait out in full, even when SQLite's
// own lock is free (the holder stopped before BEGIN or after COMMIT).
const queuePatience = time.Second

// queue takes this ledger's writer lock, waiting up to queuePatience (or
// the busy timeout, if shorter), and returns the file that holds it
// (closing it releases the lock), or nil when it cannot be had (no flock on
// this system, or the wait ran out): the writer then relies on SQLite's
// locking alone, which waits up to the busy timeout.
func (s *Store) queue() *os.File {
	s.queueDir.Do(func() { s.queueErr = os.MkdirAll(s.LockDir(), 0o700) })
	if s.queueErr != nil {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(s.LockDir(), "writer"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil
	}
	if s.queueStuck.Load() {
		if lockNB(f) != nil {
			f.Close()
			return nil
		}
		s.queueStuck.Store(false)
		return f
	}
	if ok, err := lockWait(f, time.Now().Add(min(s.busy, queuePatience))); !ok || err != nil {
		if err != nil {
			f.Close()
		} else {
			s.queueStuck.Store(true) // abandoned: the waiting goroutine owns f
		}
		return nil
	}
	return f
}

// insertSQL inserts a record at the larger of its attempt and one more
// than the key's high-water mark (see migrations), returning the attempt.
// It is built on first use, not by every process's initialisation.
var insertSQL = sync.OnceValue(func() string {
	ph := strings.Repeat("?,", strings.Count(columns, ",")) + "?"
	// attempt is the 8th column.
	parts := strings.Split(ph, ",")
	parts[7] = `max(?, coalesce((SELECT attempt FROM attempts WHERE key = ?), 0) + 1)`
	return `INSERT INTO records (` + columns + `) VALUES (` + strings.Join(parts, ",") + `)
		ON CONFLICT (key) DO NOTHING RETURNING attempt`
})

// Insert implements ledger.Store: the attempt continues above the key's
// high-water mark.
func (s *Store) Insert(ctx context.Context, rec *ledger.Record, _ time.Duration) (bool, error) {
	v := values(rec, 0)
	args := append(append(append([]any{}, v[:8]...), rec.Key), v[8:]...)
	var attempt int64
	ok, err := s.writeSync(ctx, true, func(tx *sql.Tx) (bool, error) {
		err := tx.QueryRowContext(ctx, insertSQL(), args...).Scan(&attempt)
		if errors.Is(err, sql.ErrNoRows) {
			return false, nil
		}
		return err == nil, err
	})
	if ok {
		rec.Attempt = attempt
	}
	return ok, err
}

// Swap implements ledger.Store. Without leases, needExpired never holds.
func (s *Store) Swap(ctx context.Context, from ledger.Version, needExpired bool, rec *ledger.Record, _ time.Duration) (bool, error) {
	if needExpired {
		return false, nil
	}
	return s.swap(ctx, true, from, rec)
}

// SwapLazy implements ledger.LazySwapper: Swap, committed without waiting
// for the disk. A crash of the machine before the WAL reaches it loses
// only this commit (later ones, and every fdatasync of the WAL, carry it
// to the disk; WAL frames after the last synced commit are discarded
// whole by recovery): the record is then running with a free lock, which
// the next claim reads as unknown. The claim before it was durable. This
// saves the step one fdatasync, and the other writers its wait.
func (s *Store) SwapLazy(ctx context.Context, from ledger.Version, rec *ledger.Record) (bool, error) {
	return s.swap(ctx, false, from, rec)
}

// swap writes an output larger than inlineMax to its file first, outside
// any transaction (see outputFile), then swaps the record in one short
// transaction. The files of the record it replaced (another token) are
// removed after; the files it wrote are removed if it matched nothing.
func (s *Store) swap(ctx context.Context, durable bool, from ledger.Version, rec *ledger.Record) (bool, error) {
	external, err := s.writeOutputs(rec)
	if err != nil {
		return false, err
	}
	ok, err := s.writeSync(ctx, durable, stmtBody(ctx, swapSQL, append(values(rec, external)[1:], rec.Key, from.Attempt, string(from.State), from.Token)...))
	switch {
	case ok && from.Token != rec.Token:
		s.removeOutputs(rec.Key, from.Token)
	case !ok && external != 0 && from.Token != rec.Token:
		s.removeOutputs(rec.Key, rec.Token)
	}
	return ok, err
}

const swapSQL = `UPDATE records SET task = ?, tool = ?, kind = ?, fingerprint = ?, request = ?, state = ?,
		attempt = ?, holder = ?, exit_code = ?, reason = ?, started_at = ?, ended_at = ?,
		stdout = ?, stdout_length = ?, stdout_sha256 = ?, stdout_truncated = ?,
		stderr = ?, stderr_length = ?, stderr_sha256 = ?, stderr_truncated = ?, meta = ?, token = ?, external = ?
		WHERE key = ? AND attempt = ? AND state = ? AND token = ?`

// Renew implements ledger.Store: without leases, it only reports whether
// the record still has version from.
func (s *Store) Renew(ctx context.Context, key string, from ledger.Version, _ time.Duration) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM records WHERE key = ? AND attempt = ? AND state = ? AND token = ?`,
		key, from.Attempt, string(from.State), from.Token).Scan(&n)
	return n > 0, err
}

// List implements ledger.Store, in order of start.
func (s *Store) List(ctx context.Context, f ledger.Filter) ([]*ledger.Record, error) {
	q := `SELECT ` + listColumns + ` FROM records WHERE 1`
	var args []any
	if f.Task != "" {
		q += ` AND task = ?`
		args = append(args, f.Task)
	}
	if f.Tool != "" {
		q += ` AND tool = ?`
		args = append(args, f.Tool)
	}
	if f.State != "" {
		q += ` AND state = ?`
		args = append(args, string(f.State))
	}
	rows, err := s.db.QueryContext(ctx, q+` ORDER BY started_at, key`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*ledger.Record
	for rows.Next() {
		r, _, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Delete implements ledger.Store. The key's high-water mark is kept (the
// trigger records_attempts), and the record's output files are removed.
func (s *Store) Delete(ctx context.Context, key string, from *ledger.Version) (bool, error) {
	if from == nil {
		return s.write(ctx, `DELETE FROM records WHERE key = ?`, key)
	}
	ok, err := s.write(ctx, `DELETE FROM records WHERE key = ? AND attempt = ? AND state = ? AND token = ?`,
		key, from.Attempt, string(from.State), from.Token)
	if ok {
		s.removeOutputs(key, from.Token)
	}
	return ok, err
}

// Checkpoint implements ledger.Checkpointer: PRAGMA wal_checkpoint
// (TRUNCATE) copies every committed record from ledger.db-wal into
// ledger.db and empties the WAL, so that the file alone holds the ledger
// (but for outputs kept in files, in ledger.db.outputs/); and output files
// that no record names any more (left by a process that died between
// writing one and recording it) are removed.
func (s *Store) Checkpoint(ctx context.Context) error {
	var busy, log, done int
	if err := s.db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &log, &done); err != nil {
		return err
	}
	if busy != 0 {
		return fmt.Errorf("ledger %s: the checkpoint could not finish (another process is reading or writing the ledger): try again", s.path)
	}
	return s.sweepOutputs(ctx)
}

// Close implements ledger.Store.
func (s *Store) Close() error { return s.db.Close() }

var (
	_ ledger.Store        = (*Store)(nil)
	_ ledger.LazySwapper  = (*Store)(nil)
	_ ledger.Checkpointer = (*Store)(nil)
)
