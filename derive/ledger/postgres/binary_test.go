package postgres

import (
	"testing"

	"github.com/idemkey/idemkey/derive/ledger/testserver"
)

// idemkey is the idemkey command of rev (a commit of this repository's
// history; "" for the working tree), built once per test binary.
func idemkey(t *testing.T, rev string) string { return testserver.Idemkey(t, rev) }
