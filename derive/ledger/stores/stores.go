// Package stores opens a ledger store from what a user gives: a SQLite
// file path (or file:PATH), or a postgres://, postgresql://, redis:// or
// rediss:// URL. It is the library behind every command that takes
// --ledger (run, post --ledger, ledger, mcp); it touches files and the
// network through the stores it opens, and imports no CLI package.
//
// What it prints of a spec goes through Redact, an allow-list of the
// URL's parts that cannot be secrets.
package stores

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/idemkey/idemkey/derive/ledger/sqlite"
)

// Options tunes Open.
type Options struct {
	// Warn receives a store's warnings about its configuration (a Redis
	// eviction policy that could drop records); nil drops them.
	Warn func(msg string)
	// MustExist opens only a ledger that exists: a SQLite file, a
	// PostgreSQL table. Without one, Open creates nothing and returns an
	// error that wraps fs.ErrNotExist. (A Redis ledger always exists.)
	MustExist bool
	// FSType, if set, replaces the statfs type of a SQLite ledger's
	// directory (a test hook: a network file system cannot be mounted in
	// a test).
	FSType func(real int64) int64
}

// Kind is the kind of store a spec names.
type Kind int

const (
	// SQLite: a file path, or file:PATH.
	SQLite Kind = iota + 1
	// Postgres: a postgres:// or postgresql:// URL.
	Postgres
	// Redis: a redis:// or rediss:// URL.
	Redis
)

// KindOf says which store spec names, and for SQLite the file's path
// (spec without a file: prefix). A libpq keyword/value string and a URL
// of a scheme idemkey has no store for are refused with a *SpecError: a
// misspelt URL must not become a local file of that name, nor a
// connection string (and its password) a file name.
func KindOf(spec string) (Kind, string, error) {
	switch {
	case strings.HasPrefix(spec, "postgres://"), strings.HasPrefix(spec, "postgresql://"):
		return Postgres, "", nil
	case strings.HasPrefix(spec, "redis://"), strings.HasPrefix(spec, "rediss://"):
		return Redis, "", nil
	}
	if path, ok := strings.CutPrefix(spec, "file:"); ok {
		return SQLite, path, nil
	}
	if LooksLikeDSN(spec) {
		return 0, "", &SpecError{Shown: "(a keyword/value connection string)",
			Err:  errors.New("a PostgreSQL keyword/value connection string is not supported"),
			Hint: "give the ledger as a postgres://user@host/db URL (or a SQLite file path)"}
	}
	if scheme, ok := URLScheme(spec); ok {
		return 0, "", &SpecError{Shown: Redact(spec),
			Err:  fmt.Errorf("unsupported ledger URL scheme %q", scheme),
			Hint: "give a SQLite file path, or a postgres://, postgresql://, redis:// or rediss:// URL"}
	}
	return SQLite, spec, nil
}

// LocalPath returns the SQLite file a spec names; false for a URL or a
// connection string.
func LocalPath(spec string) (string, bool) {
	if path, ok := strings.CutPrefix(spec, "file:"); ok {
		return path, true
	}
	if _, isURL := URLScheme(spec); isURL || LooksLikeDSN(spec) {
		return "", false
	}
	return spec, true
}

// Open opens the ledger spec names. Its errors are *Error (naming the
// spec, redacted), wrapping the store's error, or a *SpecError for a spec
// that names no store.
func Open(ctx context.Context, spec string, opts Options) (ledger.Store, error) {
	kind, path, err := KindOf(spec)
	if err != nil {
		var se *SpecError
		errors.As(err, &se)
		return nil, &Error{Spec: se.Shown, Err: err}
	}
	var s ledger.Store
	switch kind {
	case Postgres:
		s, err = OpenPostgres(ctx, spec, opts)
	case Redis:
		s, err = OpenRedis(ctx, spec, opts)
	default:
		spec = path
		s, err = OpenSQLite(ctx, path, opts)
	}
	if err != nil {
		return nil, &Error{Spec: spec, Err: err}
	}
	return s, nil
}

// Error: the ledger named by Spec cannot be opened or used.
type Error struct {
	Spec string // as given: Error redacts it
	Err  error
}

func (e *Error) Error() string {
	spec := Redact(e.Spec)
	if msg := e.Err.Error(); namesLedger(msg, spec) {
		return msg // a shared store's errors (and a path error) name it already
	}
	return fmt.Sprintf("ledger %s: %s", spec, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// SpecError: a spec that names no store idemkey has (a usage error).
type SpecError struct {
	Shown string // how the spec may be shown
	Err   error
	Hint  string
}

func (e *SpecError) Error() string { return e.Err.Error() }
func (e *SpecError) Unwrap() error { return e.Err }

// namesLedger reports whether msg names the ledger spec as a word of its
// own (at the start or after a space, then a colon, a space or the end):
// a ledger file named "dir" or "data" is not named by "is a directory" or
// "file is not a database".
func namesLedger(msg, spec string) bool {
	for i := 0; spec != ""; {
		j := strings.Index(msg[i:], spec)
		if j < 0 {
			return false
		}
		at, end := i+j, i+j+len(spec)
		if (at == 0 || msg[at-1] == ' ') && (end == len(msg) || msg[end] == ':' || msg[end] == ' ') {
			return true
		}
		i = at + 1
	}
	return false
}

// LooksLikeDSN reports whether spec reads as a libpq keyword/value
// connection string ("host=db dbname=ledger password=…").
func LooksLikeDSN(spec string) bool {
	k, _, ok := strings.Cut(strings.TrimSpace(spec), "=")
	switch k {
	case "host", "hostaddr", "port", "dbname", "user", "password", "passfile", "sslmode", "service":
		return ok
	}
	return false
}

// URLScheme returns the scheme of a spec of the form scheme://… (RFC 3986
// section 3.1: a letter, then letters, digits, "+", "-" or ".").
func URLScheme(spec string) (string, bool) {
	scheme, _, ok := strings.Cut(spec, "://")
	if !ok || scheme == "" {
		return "", false
	}
	for i, c := range scheme {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return "", false
		}
	}
	return scheme, true
}

// DefaultPath is the default SQLite ledger, $XDG_STATE_HOME/idemkey/ledger.db
// (an absolute XDG_STATE_HOME only, as the XDG Base Directory
// Specification says), or ~/.local/state/idemkey/ledger.db. getenv reads
// the environment (os.Getenv if nil).
func DefaultPath(getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if dir := getenv("XDG_STATE_HOME"); dir != "" && filepath.IsAbs(dir) {
		return filepath.Join(dir, "idemkey", "ledger.db"), nil
	}
	home := getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", errors.New("no ledger path: set HOME, XDG_STATE_HOME or --ledger")
		}
	}
	return filepath.Join(home, ".local", "state", "idemkey", "ledger.db"), nil
}

// KeyLocker is a store whose liveness is a kernel lock per key (SQLite on
// one machine). The returned file is the locked descriptor: a command that
// inherits it keeps the key locked until it exits.
type KeyLocker interface {
	LockKey(key string) (*os.File, error)
	RemoveLock(key string) error
}

// FileLocker is a store's kernel lock per key (KL) as the hold loop takes
// it (ledger.KeyLocker): nil and no error when another process holds it.
type FileLocker struct{ KL KeyLocker }

// TryLock takes key's lock without waiting: a *Lock, or nil and no error
// when another process holds it.
func (l FileLocker) TryLock(key string) (io.Closer, error) {
	f, err := l.KL.LockKey(key)
	if IsLocked(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &Lock{f: f}, nil
}

// Lock is a key's kernel lock as FileLocker takes it.
type Lock struct {
	f     *os.File
	given atomic.Bool // LockFile handed f out, for a command to inherit
}

// Close releases the lock: free when Close returns (sqlite.CloseLock),
// unless a command was given it (LockFile), whose copy keeps it.
func (l *Lock) Close() error {
	if l.given.Load() {
		return l.f.Close()
	}
	return sqlite.CloseLock(l.f)
}

// LockFile is the locked file of lock, a *Lock, for a command to inherit
// (the key stays locked while the command holds it, after Close too); nil
// for any other lock or none.
func LockFile(lock io.Closer) *os.File {
	if l, ok := lock.(*Lock); ok {
		l.given.Store(true)
		return l.f
	}
	return nil
}
