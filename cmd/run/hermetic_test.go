package run_test

import (
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
)

// TestSuiteIgnoresCallersSettings: the rig's tests, which start idemkey
// with the process's environment, pass with a caller's hostile settings
// exported (clitest.CheckHermetic).
func TestSuiteIgnoresCallersSettings(t *testing.T) {
	t.Parallel()
	clitest.CheckHermetic(t, "^TestRun(TwiceReplaysByteForByte|OtherCommandLineRefused|DistinctKeysConcurrently|RaceOneKey)$")
}
