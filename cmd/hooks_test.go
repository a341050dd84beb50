package cmd

import (
	"os"
	"strconv"

	"github.com/idemkey/idemkey/cmd/internal/ledgerflags"
)

// Test-only hooks of the ledger, driven by environment variables that only
// the test binary (which testscript runs as idemkey) honours.
func init() {
	if s := os.Getenv("IDEMKEY_TEST_FSTYPE"); s != "" {
		t, err := strconv.ParseInt(s, 0, 64)
		if err == nil {
			ledgerflags.TestHooks.FSType = func(int64) int64 { return t }
		}
	}
	if os.Getenv("IDEMKEY_TEST_CRASH_AFTER_EXIT") != "" {
		ledgerflags.TestHooks.CrashAfterExit = func() bool { return true }
	}
	if os.Getenv("IDEMKEY_TEST_CRASH_AFTER_COMPLETE") != "" {
		ledgerflags.TestHooks.CrashAfterComplete = true
	}
}
