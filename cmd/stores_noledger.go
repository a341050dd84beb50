//go:build noledger

package cmd

import (
	"context"
	"errors"

	"github.com/idemkey/idemkey/derive/ledger"
)

// A build without the ledger's drivers, for measuring what they cost
// (scripts/bench.sh). Every ledger is unavailable in it.

var errNoStores = errors.New("this idemkey was built without ledger stores (tag noledger)")

func openPostgres(context.Context, string) (ledger.Store, error)            { return nil, errNoStores }
func openRedis(context.Context, string, func(string)) (ledger.Store, error) { return nil, errNoStores }
func openSQLite(context.Context, string) (ledger.Store, error)              { return nil, errNoStores }
func openSQLiteExisting(context.Context, string) (ledger.Store, error)      { return nil, errNoStores }
func openPostgresExisting(context.Context, string) (ledger.Store, error)    { return nil, errNoStores }
func redactPostgres(s string) string                                        { return redactURL(s) }
func redactRedis(s string) string                                           { return redactURL(s) }
func isLocked(error) bool                                                   { return false }
