package cmd

import (
	"os"

	"github.com/idemkey/idemkey/cmd/internal/ledgerflags"
)

// The reconcile's test hook, from a variable only the test binary honours.
func init() {
	if os.Getenv("IDEMKEY_TEST_CRASH_AFTER_RECONCILE") != "" {
		ledgerflags.ReconcileTestHooks.CrashAfterAnswer = true
	}
}
