//go:build noledger

package stores

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/idemkey/idemkey/derive/ledger"
)

// A build without the ledger's drivers, for measuring what they cost
// (scripts/bench.sh). Every ledger is unavailable in it.

var errNoStores = errors.New("this idemkey was built without ledger stores (tag noledger)")

func OpenPostgres(context.Context, string, Options) (ledger.Store, error) { return nil, errNoStores }
func OpenRedis(context.Context, string, Options) (ledger.Store, error)    { return nil, errNoStores }
func OpenSQLite(context.Context, string, Options) (ledger.Store, error)   { return nil, errNoStores }
func IsLocked(error) bool                                                 { return false }
func HolderCheck(ledger.Store) ledger.HolderCheck                         { return nil }

// Holder names this process in the records it claims.
func Holder() string {
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	return fmt.Sprintf("%s pid %d", host, os.Getpid())
}

// ChildFiles passes the lock as the first extra file.
func ChildFiles(lock *os.File) ([]*os.File, int) { return []*os.File{lock}, 3 }
