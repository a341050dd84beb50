package run_test

import (
	"flag"
	"os"
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
	runcmd "github.com/idemkey/idemkey/cmd/run"
)

// TestMain runs the tests hermetically; called by the name idemkey, the
// test binary is idemkey (clitest.Main), with run's test-only hook. Four
// parallel tests run at once unless -parallel says otherwise (its
// default is the number of CPUs): they spend most of their time waiting
// for processes, leases and servers, not computing.
func TestMain(m *testing.M) {
	flag.Set("test.parallel", "4")
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
