package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/idemkey/idemkey/derive/ledger/stores"
	"github.com/spf13/pflag"
)

// ledgerTestHooks are set only by the test binary (hooks_test.go), from
// environment variables that an installed idemkey ignores.
var ledgerTestHooks struct {
	// fsType replaces the statfs type of the ledger's directory.
	fsType func(real int64) int64
	// crashAfterExit kills idemkey between the command's exit and the
	// record of its outcome.
	crashAfterExit func() bool
	// crashAfterComplete, if set, kills idemkey right after the outcome's
	// lazy commit (no close of the store, no checkpoint).
	crashAfterComplete bool
}

// keyLocker is a store whose liveness is a kernel lock per key.
type keyLocker = stores.KeyLocker

// ledgerUnavailable: the ledger cannot be opened or used (exit 125 in run).
type ledgerUnavailable struct {
	spec string
	err  error
}

func (e *ledgerUnavailable) Error() string {
	return (&stores.Error{Spec: e.spec, Err: e.err}).Error()
}

func (e *ledgerUnavailable) Unwrap() error { return e.err }

func addLedgerFlag(fl *pflag.FlagSet) {
	fl.String("ledger", "", "ledger: a SQLite file path (default $XDG_STATE_HOME/idemkey/ledger.db), or a shared store's postgres://… or redis://… URL (IDEMKEY_LEDGER)")
}

// defaultLedgerPath is $XDG_STATE_HOME/idemkey/ledger.db, or
// ~/.local/state/idemkey/ledger.db.
func (f *Factory) defaultLedgerPath() (string, error) {
	return stores.DefaultPath(f.IO.Getenv)
}

// ledgerSpec is the --ledger setting (flag, IDEMKEY_LEDGER, config), or
// the default path.
func (f *Factory) ledgerSpec() (string, error) {
	if s := f.Config.GetString("ledger"); s != "" {
		return s, nil
	}
	return f.defaultLedgerPath()
}

// storeOptions are the stores' options: warnings on stderr, the test
// hooks.
func (f *Factory) storeOptions() stores.Options {
	return stores.Options{
		Warn:   func(msg string) { fmt.Fprintf(f.IO.Err, "idemkey: warning: %s\n", msg) },
		FSType: ledgerTestHooks.fsType,
	}
}

// openLedger opens the ledger spec names: a URL of a shared store, or a
// SQLite file path.
func (f *Factory) openLedger(ctx context.Context, spec string) (ledger.Store, error) {
	s, err := stores.Open(ctx, spec, f.storeOptions())
	return s, cliStoreError(err)
}

// cliStoreError is a store's error as the command line reports it: a
// spec that names no store is a usage error (with its hint).
func cliStoreError(err error) error {
	var e *stores.Error
	if !errors.As(err, &e) {
		return err
	}
	var se *stores.SpecError
	if errors.As(e.Err, &se) {
		return &ledgerUnavailable{spec: e.Spec, err: &UsageError{Err: se.Err, hint: se.Hint}}
	}
	return &ledgerUnavailable{spec: e.Spec, err: e.Err}
}

// openSQLiteExisting opens a SQLite ledger only if its file exists (an
// error wrapping fs.ErrNotExist otherwise, nothing created).
func openSQLiteExisting(ctx context.Context, path string) (ledger.Store, error) {
	opts := stores.Options{FSType: ledgerTestHooks.fsType, MustExist: true}
	return stores.OpenSQLite(ctx, path, opts)
}

// openPostgresExisting opens a PostgreSQL ledger only if its table exists
// (an error wrapping fs.ErrNotExist otherwise, nothing created).
func openPostgresExisting(ctx context.Context, url string) (ledger.Store, error) {
	return stores.OpenPostgres(ctx, url, stores.Options{MustExist: true})
}

func isLocked(err error) bool { return stores.IsLocked(err) }

// redactStoreURL is a ledger spec as it may be shown (stores.Redact).
func redactStoreURL(s string) string { return stores.Redact(s) }

// holderAlive is the check of a recorded holder for s (stores.HolderCheck).
func holderAlive(s ledger.Store) ledger.HolderCheck { return stores.HolderCheck(s) }

// holderName names this process in the records it claims.
func holderName() string { return stores.Holder() }
