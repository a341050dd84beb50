//go:build !noledger

package stores

import (
	"context"
	"errors"
	"os"

	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/idemkey/idemkey/derive/ledger/postgres"
	"github.com/idemkey/idemkey/derive/ledger/redis"
	"github.com/idemkey/idemkey/derive/ledger/sqlite"
)

// The stores' drivers. A build with the tag noledger leaves them out
// (open_noledger.go): scripts/bench.sh builds one to measure what the
// drivers cost idemkey key's start-up, side by side.

// OpenPostgres opens a PostgreSQL ledger (with MustExist, only if its
// table exists).
func OpenPostgres(ctx context.Context, url string, opts Options) (ledger.Store, error) {
	return postgres.Open(ctx, url, postgres.Options{NoCreate: opts.MustExist, Warn: opts.Warn})
}

// OpenRedis opens a Redis ledger.
func OpenRedis(ctx context.Context, url string, opts Options) (ledger.Store, error) {
	return redis.Open(ctx, url, redis.Options{Warn: opts.Warn})
}

// OpenSQLite opens a SQLite ledger file (with MustExist, only if it
// exists).
func OpenSQLite(ctx context.Context, path string, opts Options) (ledger.Store, error) {
	return sqlite.Open(ctx, path, sqlite.Options{FSType: opts.FSType, MustExist: opts.MustExist})
}

// IsLocked reports whether err says that another process holds a key's
// kernel lock (KeyLocker.LockKey).
func IsLocked(err error) bool { return errors.Is(err, sqlite.ErrLocked) }

// Holder names this process in the records it claims: host, pid and,
// where the system tells them, its process group, start time and boot id
// (sqlite.Holder), which HolderCheck reads back.
func Holder() string { return sqlite.Holder() }

// HolderCheck is the check of a recorded holder for s's rules
// (ClaimRequest, ResolveRequest and ForgetRequest.HolderAlive): for a
// SQLite ledger, whether the process that claimed a running record whose
// kernel lock is free is alive after all (sqlite.HolderAlive); nil for the
// stores with leases.
func HolderCheck(s ledger.Store) ledger.HolderCheck {
	if _, ok := s.(*sqlite.Store); ok {
		return sqlite.HolderAlive
	}
	return nil
}

// ChildFiles returns the extra files (os/exec.Cmd.ExtraFiles) that pass a
// key's lock (KeyLocker.LockKey's file) to a command at a high descriptor,
// fd (sqlite.LockFD, 100, or the first free number above it), keeping
// every descriptor this process inherited at its number.
func ChildFiles(lock *os.File) (files []*os.File, fd int) { return sqlite.ChildFiles(lock) }
