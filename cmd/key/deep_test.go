//go:build linux

package key_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
)

// deepDocs are arguments nested 9,999 levels deep (inside the documented
// 10,000) with long names: 110-byte names on every level of objects, on
// every other level of objects and arrays alternating, and 110-byte
// strings at the bottom of arrays.
func deepDocs() map[string]string {
	const depth = 9999
	long := `"` + strings.Repeat("n", 110) + `"`
	return map[string]string{
		"objects":     strings.Repeat(`{`+long+`:`, depth) + `1` + strings.Repeat(`}`, depth),
		"arrays":      strings.Repeat(`[`, depth) + long + strings.Repeat(`]`, depth),
		"alternating": `[` + strings.Repeat(`{`+long+`:[`, depth/2) + `1` + strings.Repeat(`]}`, depth/2) + `]`,
	}
}

// asLimit is the address space the child may map: far above what a
// linear path needs (Go reserves some hundreds of MiB at start), far
// below what the quadratic paths took (24 GB), which it stops with
// "out of memory" instead of the machine's memory.
const asLimit = 3 << 30

// stackAllowance is what recursion 10,000 levels deep may take, whatever
// the input's size: a few hundred bytes of stack a level, doubled while
// the stack grows.
const stackAllowance = 32 << 20

// runLimited runs the idemkey binary (this test binary, by that name) on
// args in dir under asLimit and returns its exit code, its standard
// error and its peak resident memory in bytes.
func runLimited(t *testing.T, dir string, args ...string) (int, string, int64) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin", "idemkey")
	if _, err := os.Stat(bin); err != nil {
		if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(exe, bin); err != nil {
			t.Fatal(err)
		}
	}
	c := exec.Command(bin, args...)
	c.Dir = dir
	c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "XDG_CONFIG_HOME=" + filepath.Join(dir, "config"), "NO_COLOR=1"}
	var stderr bytes.Buffer
	c.Stdout, c.Stderr = nil, &stderr
	rss, err := clitest.PeakRSS(c, asLimit)
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return c.ProcessState.ExitCode(), stderr.String(), rss
}

// TestDeepMemory runs key, key --batch, post --dry-run, drift and diff on
// arguments nested 9,999 deep with long names, each in a process of its
// own under a limit on its address space, and bounds its peak resident
// memory to what it takes on a tiny input, plus 20 times its input, plus
// the stack of the recursion. A pass that copied every level's text
// into its parent again would be quadratic in depth (a 1.1 MB document would take 24
// GB), drift wrote a pointer out for every leaf and walked every level
// again at every level above it, post wrote the pointer of every value
// it checked for lost precision.
func TestDeepMemory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	record := func(args string) string { return `{"task":"t","tool":"x","args":` + args + "}\n" }
	commands := []struct {
		name string
		args func(a, b, log string) []string
		ok   []int // exit codes that are success for it
	}{
		{"key", func(a, _, _ string) []string { return []string{"key", "--task", "t", "--tool", "x", a} }, []int{0}},
		{"key --batch", func(_, _, log string) []string { return []string{"key", "--batch", "--from", "call", log} }, []int{0}},
		{"post --dry-run", func(a, _, _ string) []string {
			return []string{"post", "--dry-run", "--task", "t", "--tool", "x", "-d", "@" + a, "http://127.0.0.1:9/"}
		}, []int{0}},
		{"drift", func(_, _, log string) []string { return []string{"drift", log} }, []int{0, 1}},
		{"diff", func(a, b, _ string) []string { return []string{"diff", "--task", "t", "--tool", "x", a, b} }, []int{1}},
	}
	base := map[string]int64{}
	tinyA, tinyB := write("tiny-a.json", `{"a":1}`), write("tiny-b.json", `{"a":2}`)
	tinyLog := write("tiny.jsonl", record(`{"a":1}`)+record(`{"a":2}`))
	for _, c := range commands {
		code, stderr, rss := runLimited(t, dir, c.args(tinyA, tinyB, tinyLog)...)
		if !contains(c.ok, code) {
			t.Fatalf("%s on a tiny input: exit %d: %s", c.name, code, stderr)
		}
		base[c.name] = rss
	}
	for shape, doc := range deepDocs() {
		other := strings.Replace(doc, "1", "2", 1)
		if other == doc {
			other = strings.Replace(doc, "n", "m", 1)
		}
		a, b := write(shape+"-a.json", doc), write(shape+"-b.json", other)
		log := write(shape+".jsonl", record(doc)+record(other))
		for _, c := range commands {
			input := int64(len(doc))
			if strings.Contains(c.name, "batch") || c.name == "drift" || c.name == "diff" {
				input = int64(len(doc) + len(other))
			}
			code, stderr, rss := runLimited(t, dir, c.args(a, b, log)...)
			limit := base[c.name] + 20*input + stackAllowance
			t.Logf("%s, %s (%d bytes): exit %d, peak RSS %.1f MiB (tiny input: %.1f MiB; bound %.1f MiB)",
				c.name, shape, input, code, float64(rss)/(1<<20), float64(base[c.name])/(1<<20), float64(limit)/(1<<20))
			if !contains(c.ok, code) {
				t.Errorf("%s, %s: exit %d: %.300s", c.name, shape, code, stderr)
			}
			if rss > limit {
				t.Errorf("%s, %s (%d bytes): peak RSS %d bytes, want at most %d", c.name, shape, input, rss, limit)
			}
		}
	}
}

func contains(codes []int, code int) bool {
	for _, c := range codes {
		if c == code {
			return true
		}
	}
	return false
}
