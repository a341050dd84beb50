package cmd

import "os"

// The reconcile's test hook, from a variable only the test binary honours.
func init() {
	if os.Getenv("IDEMKEY_TEST_CRASH_AFTER_RECONCILE") != "" {
		reconcileTestHooks.crashAfterAnswer = true
	}
}
