package probe_test

import (
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/derive/ledger/testserver"
)

// TestMain runs the tests hermetically; called by the name idemkey, the
// test binary is idemkey (clitest.Main); its tests wait on servers more
// than they compute (testserver.WaitBound).
func TestMain(m *testing.M) {
	testserver.WaitBound()
	clitest.Main(m)
}
