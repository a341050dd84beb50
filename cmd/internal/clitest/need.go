package clitest

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// Unavailable ends a test that cannot run here because what it needs (a
// server, a program, an npm package) is missing: under CI=true, where
// scripts/services.sh installs everything, the test fails; elsewhere it is
// skipped.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI=true: what a test needs must be installed; bash scripts/services.sh)")
	}
	t.Skip(msg)
}

// LookPath is the path of prog, or the test ends as Unavailable.
func LookPath(t testing.TB, prog string) string {
	t.Helper()
	p, err := exec.LookPath(prog)
	if err != nil {
		Unavailable(t, "%s not found (%v)", prog, err)
	}
	return p
}
