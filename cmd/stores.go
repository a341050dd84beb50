//go:build !noledger

package cmd

import (
	"context"
	"errors"

	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/idemkey/idemkey/derive/ledger/postgres"
	"github.com/idemkey/idemkey/derive/ledger/redis"
	"github.com/idemkey/idemkey/derive/ledger/sqlite"
)

// The stores' drivers. A build with the tag noledger leaves them out
// (stores_noledger.go): scripts/bench.sh builds one to measure what the
// drivers cost idemkey key's start-up, side by side.

func openPostgres(ctx context.Context, spec string) (ledger.Store, error) {
	return postgres.Open(ctx, spec, postgres.Options{})
}

func openRedis(ctx context.Context, spec string, warn func(string)) (ledger.Store, error) {
	return redis.Open(ctx, spec, redis.Options{Warn: warn})
}

func openSQLite(ctx context.Context, spec string) (ledger.Store, error) {
	return sqlite.Open(ctx, spec, sqlite.Options{FSType: ledgerTestHooks.fsType})
}

// openSQLiteExisting opens a SQLite ledger only if its file exists (an
// error wrapping fs.ErrNotExist otherwise, nothing created).
func openSQLiteExisting(ctx context.Context, spec string) (ledger.Store, error) {
	return sqlite.Open(ctx, spec, sqlite.Options{FSType: ledgerTestHooks.fsType, MustExist: true})
}

// openPostgresExisting opens a PostgreSQL ledger only if its table exists
// (an error wrapping fs.ErrNotExist otherwise, nothing created).
func openPostgresExisting(ctx context.Context, spec string) (ledger.Store, error) {
	return postgres.Open(ctx, spec, postgres.Options{NoCreate: true})
}

func redactPostgres(s string) string { return postgres.Redact(s) }
func redactRedis(s string) string    { return redis.Redact(s) }

func isLocked(err error) bool { return errors.Is(err, sqlite.ErrLocked) }
