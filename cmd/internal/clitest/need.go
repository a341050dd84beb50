package clitest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/idemkey/idemkey/derive/ledger/testserver"
)

// Unavailable ends a test that cannot run here because what it needs (a
// server, a program, an npm package) is missing: under CI=true, where
// scripts/services.sh installs everything, the test fails; elsewhere it is
// skipped.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	testserver.Unavailable(t, format, args...)
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

// NodeMCP is the node command and the repository's root, for a test that
// drives the MCP npm packages (testdata/npm/mcp); without either the test
// ends as Unavailable. A test in cmd/X calls it from its package's
// directory.
func NodeMCP(t testing.TB) (node, repo string) {
	t.Helper()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	node = LookPath(t, "node")
	if _, err := os.Stat(filepath.Join(repo, "testdata/npm/mcp/node_modules/@modelcontextprotocol/sdk/package.json")); err != nil {
		Unavailable(t, "the MCP npm packages are not installed (bash scripts/services.sh)")
	}
	return node, repo
}
