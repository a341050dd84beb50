package diff_test

import (
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
)

// TestSuiteIgnoresCallersSettings: diff's tests, which run diff with the
// process's environment, pass with a caller's hostile settings exported
// (clitest.CheckHermetic).
func TestSuiteIgnoresCallersSettings(t *testing.T) {
	clitest.CheckHermetic(t, "^TestDiff")
}
