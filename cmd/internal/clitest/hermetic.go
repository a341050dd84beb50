package clitest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// hostileSettings are settings a user may well have exported, each of
// which would change what some test sees if the tests were not hermetic.
var hostileSettings = []string{
	"IDEMKEY_SCHEME=jcs",
	"IDEMKEY_RECOVER=retry",
	"IDEMKEY_FROM=call",
	"IDEMKEY_OMIT=/a",
	"IDEMKEY_RETAIN=1s",
	"IDEMKEY_WAIT=1s",
	"IDEMKEY_MAX_LEN=5",
}

// CheckHermetic runs the tests of the running test binary that match
// pattern again, in a child whose caller exported hostile IDEMKEY_*
// settings, an IDEMKEY_LEDGER and a config file in $XDG_CONFIG_HOME that
// changes the scheme and the recovery policy: they must all pass, as they
// do without them, and none may touch the caller's ledger.
func CheckHermetic(t *testing.T, pattern string) {
	if os.Getenv("IDEMKEY_TEST_HERMETIC_CHILD") != "" {
		t.Skip("this is the child run")
	}
	if testing.Short() {
		t.Skip("runs a part of the suite again")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config", "idemkey")
	if err := os.MkdirAll(cfg, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg, "config.yaml"), []byte("scheme: jcs\nrecover: retry\nfrom: call\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := exec.Command(exe, "-test.run", pattern, "-test.count=1", "-test.short")
	c.Env = append(os.Environ(), hostileSettings...)
	c.Env = append(c.Env,
		"IDEMKEY_LEDGER="+filepath.Join(dir, "elsewhere", "ledger.db"),
		"IDEMKEY_CONFIG="+filepath.Join(cfg, "config.yaml"),
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
		"IDEMKEY_TEST_HERMETIC_CHILD=1")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("with the caller's settings exported, the tests failed: %v\n%s", err, lastBytes(out, 4000))
	}
	if _, err := os.Stat(filepath.Join(dir, "elsewhere")); err == nil {
		t.Errorf("a test used the caller's IDEMKEY_LEDGER")
	}
}

// lastBytes is the last n bytes of b (all of it when shorter).
func lastBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
