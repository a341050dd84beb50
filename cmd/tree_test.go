package cmd_test

import (
	"strings"
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/clitest"
)

func TestRepeatedFlags(t *testing.T) {
	run := func(args ...string) (int, string) {
		_, stderr, code := clitest.Run(t, `{"a":1}`, args...)
		return code, stderr
	}
	for _, args := range [][]string{
		{"key", "--task", "a", "--task", "b", "--tool", "x"},
		{"key", "--task", "a", "--tool", "x", "--tool", "y"},
		{"key", "--task", "a", "--tool", "x", "--json", "--json=false"},
		{"key", "--task", "a", "--tool", "x", "--format", "hex", "--format", "uuid"},
		{"diff", "--max", "1", "--max", "2", "a", "b"},
		{"post", "http://127.0.0.1:9", "--task", "t", "--tool", "x", "-d", "{}", "--data", "[]", "--dry-run"},
	} {
		if code, errs := run(args...); code != cli.ExitUsage || !strings.Contains(errs, "given more than once") {
			t.Errorf("%q: exit %d, %q", args, code, errs)
		}
	}
	// Repeatable flags, and a flag repeated with the same value, stay fine.
	if code, errs := run("key", "--task", "a", "--tool", "x", "--omit", "/b", "--omit", "/c", "--json", "--json", "--task", "a", "--json=true"); code != 0 {
		t.Errorf("repeatable: exit %d, %q", code, errs)
	}
}

// TestRootHelpNamesEveryExitCode: the top-level help lists run's own
// codes beside the common ones, so that a caller reading only it can
// tell busy (75) and unknown (76) from a failure of idemkey (125).
func TestRootHelpNamesEveryExitCode(t *testing.T) {
	out, _, code := clitest.Run(t, "", "--help")
	if code != 0 {
		t.Fatalf("--help exited %d", code)
	}
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{"0 success", "1 a negative answer", "2 usage or input error", "75 in progress elsewhere", "76 outcome unknown", "125 idemkey failed", "126 cannot execute", "127 not found", "curl's codes"} {
		if !strings.Contains(flat, want) {
			t.Errorf("--help does not say %q:\n%s", want, out)
		}
	}
}
