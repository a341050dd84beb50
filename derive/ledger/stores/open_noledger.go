//go:build noledger

package stores

import (
	"context"
	"errors"

	"github.com/idemkey/idemkey/derive/ledger"
)

// A build without the ledger's drivers, for measuring what they cost
// (scripts/bench.sh). Every ledger is unavailable in it.

var errNoStores = errors.New("this idemkey was built without ledger stores (tag noledger)")

func OpenPostgres(context.Context, string, Options) (ledger.Store, error) { return nil, errNoStores }
func OpenRedis(context.Context, string, Options) (ledger.Store, error)    { return nil, errNoStores }
func OpenSQLite(context.Context, string, Options) (ledger.Store, error)   { return nil, errNoStores }
func IsLocked(error) bool                                                 { return false }
