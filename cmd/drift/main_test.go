package drift_test

import (
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
)

// TestMain runs the tests hermetically; called by the name idemkey, the
// test binary is idemkey (clitest.Main).
func TestMain(m *testing.M) { clitest.Main(m) }
