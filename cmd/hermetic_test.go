package cmd

import (
	"os"
	"path/filepath"
	"strings"
)

// testInfraEnv are the IDEMKEY_* variables that steer the tests
// themselves (which server binaries to start, a differential test's seed
// and size, the test-only crash hooks): they are kept. Every other
// IDEMKEY_* variable is a user's setting and is removed.
var testInfraEnv = map[string]bool{
	"IDEMKEY_PG_BINDIR":    true,
	"IDEMKEY_REDIS_SERVER": true,
	"IDEMKEY_DIFFSEED":     true,
	"IDEMKEY_DIFFN":        true,
}

// hermetic makes the test process independent of the caller's settings:
// it removes every IDEMKEY_* setting the caller exported and points the
// home, config and state directories at empty ones of its own, so that neither
// an exported IDEMKEY_SCHEME=jcs nor a config file in the caller's
// $XDG_CONFIG_HOME changes what a test sees. Tests that want a setting
// set it themselves. It returns a function that removes the directories.
func hermetic() (cleanup func()) {
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "IDEMKEY_") && !strings.HasPrefix(name, "IDEMKEY_TEST_") && !testInfraEnv[name] {
			os.Unsetenv(name)
		}
	}
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
