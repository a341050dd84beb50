package vectors_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/cmd/vectors"
	"github.com/idemkey/idemkey/derive/conform"
)

// TestVectorsJSONLines: every line idemkey vectors writes is JSON (the
// invalid-json cases carry their text as a JSON string, not inline, so
// that jq, json.loads and JSON.parse read every line). Each line decodes
// with encoding/json into Go values, carries the case's exact text in
// args_text, and inline args only where it is the same value; Node's
// JSON.parse reads every line (skipped without node, except under CI=true).
func TestVectorsJSONLines(t *testing.T) {
	t.Parallel()
	for _, scheme := range []string{"js", "jcs"} {
		out, stderr, code := clitest.Run(t, "", "vectors", "--scheme", scheme)
		if code != 0 {
			t.Fatalf("vectors --scheme %s: exit %d: %s", scheme, code, stderr)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		cases := conform.Cases()
		if len(lines) != len(cases) {
			t.Fatalf("%s: %d lines for %d cases", scheme, len(lines), len(cases))
		}
		inline := 0
		for i, line := range lines {
			var v map[string]any
			if err := json.Unmarshal([]byte(line), &v); err != nil {
				t.Fatalf("%s line %d is not JSON for encoding/json: %v\n%s", scheme, i+1, err, line)
			}
			c := cases[i]
			if v["id"] != float64(c.ID) || v["args_text"] != c.Args {
				t.Errorf("%s line %d: id %v, args_text %q; want %d, %q", scheme, i+1, v["id"], v["args_text"], c.ID, c.Args)
			}
			if args, ok := v["args"]; ok {
				inline++
				var want any
				if err := json.Unmarshal([]byte(c.Args), &want); err != nil || !reflect.DeepEqual(args, want) {
					t.Errorf("%s line %d: inline args %v, the text reads %v (%v)", scheme, i+1, args, want, err)
				}
			}
			_, hasTask := v["task"]
			_, hasTaskText := v["task_text"]
			if hasTask == hasTaskText {
				t.Errorf("%s line %d: task %v, task_text %v: want one of them", scheme, i+1, hasTask, hasTaskText)
			}
		}
		if inline < len(cases)*3/4 {
			t.Errorf("%s: args inline on %d of %d lines only", scheme, inline, len(cases))
		}
		nodeParsesLines(t, scheme, out, len(cases))
	}
}

// nodeParsesLines checks with Node's JSON.parse that every line of out is
// JSON: n lines, ids 1 to n.
func nodeParsesLines(t *testing.T, what, out string, n int) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node not found under CI=true: %v", err)
		}
		t.Logf("node not found, JSON.parse not checked: %v", err)
		return
	}
	script := `let n = 0; const rl = require("node:readline").createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on("line", (l) => { const v = JSON.parse(l); if (v.id !== ++n) throw new Error("line " + n + ": id " + v.id); });
rl.on("close", () => console.log(n));`
	cmd := exec.Command(node, "-e", script)
	cmd.Stdin = strings.NewReader(out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: node JSON.parse: %v\n%s", what, err, stderr.Bytes())
	}
	if strings.TrimSpace(string(got)) != strconv.Itoa(n) {
		t.Errorf("%s: node read %s lines, want %d", what, got, n)
	}
}

// TestVectorsHelpJqExample runs the jq example of idemkey vectors --help as
// written, with idemkey on PATH: it exited 4. It selects
// the order-utf16 cases. Skipped when jq is not installed.
func TestVectorsHelpJqExample(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skipf("jq not found: %v", err)
	}
	example := ""
	for _, l := range strings.Split(vectors.NewCmd(&cli.Factory{}, nil).Example, "\n") {
		if strings.Contains(l, "| jq") {
			example = strings.TrimSpace(l)
		}
	}
	if !strings.HasPrefix(example, "idemkey vectors") {
		t.Fatalf("no jq example in the help: %q", example)
	}
	cmd := exec.Command("bash", "-o", "pipefail", "-c", example)
	cmd.Env = append(os.Environ(), "PATH="+idemkeyBinDir(t)+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", example, err, stderr.Bytes())
	}
	want := 0
	for _, c := range conform.Cases() {
		if c.Rule == "order-utf16" {
			want++
		}
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != want {
		t.Fatalf("%s: %d lines, want the %d order-utf16 cases:\n%s", example, len(lines), want, out)
	}
	for _, l := range lines {
		if !strings.Contains(l, `"rule":"order-utf16"`) {
			t.Errorf("%s printed %s", example, l)
		}
	}
}

// idemkeyBinDir returns a directory holding idemkey: the test binary under
// that name, which runs idemkey (see TestMain), for shell commands.
func idemkeyBinDir(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(exe, filepath.Join(dir, "idemkey")); err != nil {
		t.Fatal(err)
	}
	return dir
}
