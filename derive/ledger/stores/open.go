//go:build !noledger

package stores

import (
	"context"
	"errors"

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
	return postgres.Open(ctx, url, postgres.Options{NoCreate: opts.MustExist})
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
