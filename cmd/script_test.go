package cmd_test

import (
	"os"
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain runs the tests hermetically; called by the name idemkey, the
// test binary is idemkey (clitest.Main).
func TestMain(m *testing.M) { clitest.Main(m) }

// TestScript runs the end-to-end tests in testdata/script/*.txtar.
func TestScript(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "../testdata/script",
		Setup: func(env *testscript.Env) error {
			// A user's config or colour preference must not leak in.
			env.Setenv("XDG_CONFIG_HOME", env.WorkDir+"/.config")
			// Nor may a script's default ledger land in a directory
			// shared by every run (testscript's HOME is /no-home).
			env.Setenv("XDG_STATE_HOME", env.WorkDir+"/.state")
			env.Setenv("NO_COLOR", "")
			env.Setenv("REPO", mustAbs(".."))
			return nil
		},
	})
}

func mustAbs(p string) string {
	wd, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	return wd + "/" + p
}
