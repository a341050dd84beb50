package cmd

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets testscript run the idemkey command in a subprocess of the
// test binary, with the environment each script sets. Run as the test
// binary itself (not as that subprocess, which must see the environment
// its script or test gave it), it first makes the tests hermetic.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) != "idemkey" {
		cleanup := hermetic()
		code := testscript.RunMain(m, map[string]func() int{"idemkey": Run})
		cleanup()
		os.Exit(code)
	}
	testscript.Main(m, map[string]func(){
		"idemkey": func() { os.Exit(Run()) },
	})
}

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
