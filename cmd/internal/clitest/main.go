package clitest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/cmd"
	"github.com/idemkey/idemkey/cmd/internal/ledgeropts"
	"github.com/idemkey/idemkey/cmd/internal/step"
	"github.com/idemkey/idemkey/derive/ledger/testserver"
	"github.com/rogpeppe/go-internal/testscript"
)

// Main is a face's TestMain. Called by the name idemkey (a rig's
// symlink, or testscript's command on PATH), the test binary is idemkey,
// with the test-only hooks its environment asks for (the shared ones, then
// hooks, which a face passes for its own); otherwise it makes the tests
// hermetic (see Hermetic), puts idemkey on PATH and runs them.
func Main(m *testing.M, hooks ...func()) {
	if filepath.Base(os.Args[0]) != "idemkey" {
		// testscript.Main exits when the tests are done: the hermetic
		// directories are removed by the tests' run itself (stopsShared).
		testscript.Main(stopsShared{m, Hermetic()}, map[string]func(){
			"idemkey":   func() { os.Exit(cmd.Run()) },
			peakRSSName: peakRSSMain,
		})
	}
	testscript.Main(m, map[string]func(){
		"idemkey": func() {
			installHooks()
			for _, h := range hooks {
				h()
			}
			os.Exit(cmd.Run())
		},
	})
}

// stopsShared runs the tests, then stops the servers testserver shares
// between them (testserver.Main) and removes the hermetic directories.
type stopsShared struct {
	m       *testing.M
	cleanup func()
}

// Run runs the tests through testserver.Main, then cleans up.
func (s stopsShared) Run() int {
	code := testserver.Main(s.m)
	s.cleanup()
	return code
}

// installHooks sets the test-only hooks of the ledger and the reconcile
// from environment variables that only the test binary honours.
func installHooks() {
	if s := os.Getenv("IDEMKEY_TEST_FSTYPE"); s != "" {
		if t, err := strconv.ParseInt(s, 0, 64); err == nil {
			ledgeropts.TestHooks.FSType = func(int64) int64 { return t }
		}
	}
	if os.Getenv("IDEMKEY_TEST_CRASH_AFTER_EXIT") != "" {
		step.TestHooks.CrashAfterExit = func() bool { return true }
	}
	if os.Getenv("IDEMKEY_TEST_CRASH_AFTER_COMPLETE") != "" {
		step.TestHooks.CrashAfterComplete = true
	}
	if os.Getenv("IDEMKEY_TEST_CRASH_AFTER_RECONCILE") != "" {
		step.TestHooks.CrashAfterAnswer = true
	}
}

// testInfraEnv are the IDEMKEY_* variables that steer the tests
// themselves (which server binaries to start, a differential test's seed
// and size): they are kept, as are the IDEMKEY_TEST_* hooks. Every other
// IDEMKEY_* variable is a user's setting and is removed.
var testInfraEnv = map[string]bool{
	"IDEMKEY_PG_BINDIR":    true,
	"IDEMKEY_REDIS_SERVER": true,
	"IDEMKEY_DIFFSEED":     true,
	"IDEMKEY_DIFFN":        true,
}

// Hermetic makes the test process independent of the caller's settings:
// it removes every IDEMKEY_* setting the caller exported and points the
// home, config, state and cache directories at empty ones of its own, so
// that neither an exported IDEMKEY_SCHEME=jcs nor a config file in the
// caller's $XDG_CONFIG_HOME changes what a test sees. Tests that want a
// setting set it themselves. It returns a function that removes the
// directories.
func Hermetic() (cleanup func()) {
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "IDEMKEY_") && !strings.HasPrefix(name, "IDEMKEY_TEST_") && !testInfraEnv[name] {
			os.Unsetenv(name)
		}
	}
	keepGoDirs()
	dir, err := os.MkdirTemp("", "idemkey-hermetic-")
	if err != nil {
		panic(err)
	}
	for name, sub := range map[string]string{"HOME": "home", "XDG_CONFIG_HOME": "config", "XDG_STATE_HOME": "state", "XDG_CACHE_HOME": "cache"} {
		p := filepath.Join(dir, sub)
		if err := os.MkdirAll(p, 0o700); err != nil {
			panic(err)
		}
		os.Setenv(name, p)
	}
	return func() { os.RemoveAll(dir) }
}

// keepGoDirs pins the go command's directories (its build and module
// caches, GOPATH, its env file) to the caller's before Hermetic moves
// HOME and the XDG directories: the tests that build Go programs then
// use the warm caches instead of filling a cold one in the temporary
// directory with every run (tens of megabytes, and read-only module files
// that a removal cannot delete), and never download a module.
func keepGoDirs() {
	setDefault := func(name string, value func() (string, error)) {
		if os.Getenv(name) != "" {
			return
		}
		if v, err := value(); err == nil && v != "" {
			os.Setenv(name, v)
		}
	}
	setDefault("GOCACHE", func() (string, error) {
		d, err := os.UserCacheDir()
		return filepath.Join(d, "go-build"), err
	})
	setDefault("GOPATH", func() (string, error) {
		d, err := os.UserHomeDir()
		return filepath.Join(d, "go"), err
	})
	setDefault("GOMODCACHE", func() (string, error) {
		return filepath.Join(filepath.SplitList(os.Getenv("GOPATH"))[0], "pkg", "mod"), nil
	})
	setDefault("GOENV", func() (string, error) {
		d, err := os.UserConfigDir()
		return filepath.Join(d, "go", "env"), err
	})
}
