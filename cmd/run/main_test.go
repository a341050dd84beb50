package run_test

import (
	"os"
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
	runcmd "github.com/idemkey/idemkey/cmd/run"
	"github.com/idemkey/idemkey/derive/ledger/testserver"
)

// TestMain runs the tests hermetically; called by the name idemkey, the
// test binary is idemkey (clitest.Main), with run's test-only hook; its
// tests wait more than they compute (testserver.WaitBound).
func TestMain(m *testing.M) {
	testserver.WaitBound()
	clitest.Main(m, pauseBeforeStart)
}

// pauseBeforeStart sets run's hook from IDEMKEY_TEST_PAUSE_BEFORE_START=FILE:
// between the claim and the command's start, idemkey creates FILE and
// waits until it is removed.
func pauseBeforeStart() {
	p := os.Getenv("IDEMKEY_TEST_PAUSE_BEFORE_START")
	if p == "" {
		return
	}
	runcmd.TestHooks.BeforeStart = func() {
		_ = os.WriteFile(p, nil, 0o644)
		for {
			if _, err := os.Stat(p); err != nil {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}
