// Package ledgeropts is the ledger's options that the commands keeping
// a ledger share (run, post --ledger, mcp, ledger): where the ledger is
// (--ledger, IDEMKEY_LEDGER, the default path), the settings of a hold of
// a key (--wait, --lease, --retain, --recover), opening the ledger, and
// its errors as the command line reports them.
package ledgeropts

import (
	"context"
	"errors"
	"fmt"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/idemkey/idemkey/derive/ledger/stores"
	"github.com/spf13/pflag"
)

// TestHooks are set only by the test binary (clitest.Main), from
// environment variables that an installed idemkey ignores.
var TestHooks struct {
	// FSType replaces the statfs type of the ledger's directory.
	FSType func(real int64) int64
}

// Unavailable: the ledger cannot be opened or used (exit 125 in run).
type Unavailable struct {
	Spec string
	Err  error
}

func (e *Unavailable) Error() string {
	return (&stores.Error{Spec: e.Spec, Err: e.Err}).Error()
}

func (e *Unavailable) Unwrap() error { return e.Err }

// AddFlag registers --ledger.
func AddFlag(fl *pflag.FlagSet) {
	fl.String("ledger", "", "ledger: a SQLite file path (default $XDG_STATE_HOME/idemkey/ledger.db), or a shared store's postgres://… or redis://… URL (IDEMKEY_LEDGER)")
}

// DefaultPath is $XDG_STATE_HOME/idemkey/ledger.db, or
// ~/.local/state/idemkey/ledger.db.
func DefaultPath(f *cli.Factory) (string, error) {
	return stores.DefaultPath(f.IO.Getenv)
}

// Spec is the --ledger setting (flag, IDEMKEY_LEDGER, config), or
// the default path.
func Spec(f *cli.Factory) (string, error) {
	if s := f.Config.GetString("ledger"); s != "" {
		return s, nil
	}
	return DefaultPath(f)
}

// StoreOptions are the stores' options: warnings on stderr, the test
// hooks.
func StoreOptions(f *cli.Factory) stores.Options {
	return stores.Options{
		Warn:   func(msg string) { fmt.Fprintf(f.IO.Err, "idemkey: warning: %s\n", msg) },
		FSType: TestHooks.FSType,
	}
}

// Open opens the ledger spec names: a URL of a shared store, or a
// SQLite file path.
func Open(ctx context.Context, f *cli.Factory, spec string) (ledger.Store, error) {
	s, err := stores.Open(ctx, spec, StoreOptions(f))
	return s, StoreError(err)
}

// StoreError is a store's error as the command line reports it: a
// spec that names no store is a usage error (with its hint).
func StoreError(err error) error {
	var e *stores.Error
	if !errors.As(err, &e) {
		return err
	}
	var se *stores.SpecError
	if errors.As(e.Err, &se) {
		return &Unavailable{Spec: e.Spec, Err: &cli.UsageError{Err: se.Err, HintText: se.Hint}}
	}
	return &Unavailable{Spec: e.Spec, Err: e.Err}
}

// OpenSQLiteExisting opens a SQLite ledger only if its file exists (an
// error wrapping fs.ErrNotExist otherwise, nothing created).
func OpenSQLiteExisting(ctx context.Context, path string) (ledger.Store, error) {
	opts := stores.Options{FSType: TestHooks.FSType, MustExist: true}
	return stores.OpenSQLite(ctx, path, opts)
}

// OpenPostgresExisting opens a PostgreSQL ledger only if its table exists
// (an error wrapping fs.ErrNotExist otherwise, nothing created).
func OpenPostgresExisting(ctx context.Context, url string) (ledger.Store, error) {
	return stores.OpenPostgres(ctx, url, stores.Options{MustExist: true})
}
