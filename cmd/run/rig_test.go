package run_test

import (
	"os"
	"testing"

	"github.com/idemkey/idemkey/cmd"
	"github.com/idemkey/idemkey/cmd/internal/testrig"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the tests run idemkey: the test binary, called by the
// name idemkey (testrig's symlink), is idemkey.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"idemkey": func() { os.Exit(cmd.Run()) }})
}

var (
	alive   = testrig.Alive
	waitFor = testrig.WaitFor
)
