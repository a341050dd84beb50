package key_test

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/cmd/internal/input"
)

// endless is a stream of one byte repeated, up to max bytes (so that a
// reader without a limit ends instead of exhausting memory); read counts
// what was taken from it.
type endless struct {
	c         byte
	max, read int64
}

func (e *endless) Read(p []byte) (int, error) {
	if e.read >= e.max {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), e.max-e.read))
	for i := range p[:n] {
		p[i] = e.c
	}
	e.read += int64(n)
	return n, nil
}

func setLimit[T int | int64](t *testing.T, v *T, n T) {
	old := *v
	*v = n
	t.Cleanup(func() { *v = old })
}

// TestInputLimitStopsReading feeds key and canon a stream four times the
// input limit (lowered to 32 MiB): reading stops at the limit, with an
// error that says so, and no more memory than the limit and a buffer.
func TestInputLimitStopsReading(t *testing.T) {
	const limit = 32 << 20
	setLimit(t, &input.Limit, limit)
	for _, args := range [][]string{
		{"key", "--task", "t", "--tool", "x"},
		{"key", "--task", "t", "--tool", "x", "--json"},
		{"canon"},
		{"canon", "--call", "--task", "t", "--tool", "x"},
	} {
		for _, c := range []byte{' ', '['} {
			in := &endless{c: c, max: 4 * limit}
			var o clitest.Output
			alloc := clitest.Allocated(func() { o = clitest.Streams{In: in}.Run(t, args...) })
			out, stderr, code := o.Stdout, o.Stderr, o.Code
			if code != cli.ExitUsage || out != "" || !strings.Contains(stderr, "idemkey: error: <stdin>: input larger than 33554432 bytes (32 MiB), the limit: reading stopped there\n") {
				t.Errorf("%v on %q…: exit %d, stdout %.40q, stderr %q", args, c, code, out, stderr)
			}
			if in.read > limit+16<<20 {
				t.Errorf("%v on %q…: read %d bytes, limit %d", args, c, in.read, limit)
			}
			if alloc > limit*7/4 {
				t.Errorf("%v on %q…: allocated %d MiB for a %d MiB limit", args, c, alloc>>20, limit>>20)
			}
		}
	}
}

// TestInputLimitBoundary: an input of exactly the limit is read, one byte
// more is refused, from standard input and from a regular file; the file
// is refused by its size, before it is read.
func TestInputLimitBoundary(t *testing.T) {
	const limit = 1 << 20
	setLimit(t, &input.Limit, limit)
	doc := func(n int) string { return "[" + strings.Repeat(" ", n-2) + "]" }
	want, _, code := clitest.Run(t, "[]", "key", "--task", "t", "--tool", "x")
	if code != 0 {
		t.Fatal(code)
	}
	dir := t.TempDir()
	for _, n := range []int{limit - 1, limit, limit + 1, 3 * limit} {
		path := filepath.Join(dir, "doc.json")
		if err := os.WriteFile(path, []byte(doc(n)), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"key", "--task", "t", "--tool", "x"}, {"key", "--task", "t", "--tool", "x", path}} {
			var o clitest.Output
			in := strings.NewReader(doc(n))
			alloc := clitest.Allocated(func() { o = clitest.Streams{In: in}.Run(t, args...) })
			out, stderr, code := o.Stdout, o.Stderr, o.Code
			if n <= limit {
				if code != 0 || out != want {
					t.Errorf("%d bytes, %v: exit %d, %q, %q", n, args[len(args)-1], code, out, stderr)
				}
				continue
			}
			if code != cli.ExitUsage || out != "" || !strings.Contains(stderr, "input larger than 1048576 bytes (1 MiB)") {
				t.Errorf("%d bytes, %v: exit %d, %q, %q", n, args[len(args)-1], code, out, stderr)
			}
			if args[len(args)-1] == path && alloc > limit/2 {
				t.Errorf("%d-byte file: %d bytes allocated to refuse it", n, alloc)
			}
		}
	}
}

// TestBatchLineLimit: a batch line longer than the line limit (lowered to
// 1 MiB) stops the batch there, with the lines before it derived, an
// empty output line for it, and memory bounded by the limit.
func TestBatchLineLimit(t *testing.T) {
	const limit = 1 << 20
	setLimit(t, &input.LineLimit, limit)
	key, _, _ := clitest.Run(t, "[1]", "key", "--task", "t", "--tool", "x")
	for _, tc := range []struct {
		head string
		json bool
	}{{"", false}, {"[1]\n", false}, {"[1]\n\n[1]\r\n", false}, {"[1]\n", true}} {
		in := io.MultiReader(strings.NewReader(tc.head), &endless{c: 'a', max: 64 * limit})
		args := []string{"key", "--batch", "--task", "t", "--tool", "x"}
		if tc.json {
			args = append(args, "--json")
		}
		var o clitest.Output
		alloc := clitest.Allocated(func() { o = clitest.Streams{In: in}.Run(t, args...) })
		out, stderr, code := o.Stdout, o.Stderr, o.Code
		lines := strings.Count(tc.head, "\n") + 1
		var want string
		for _, l := range strings.SplitAfter(tc.head, "\n") {
			switch strings.TrimSpace(l) {
			case "[1]":
				want += key
			case "":
				if l != "" {
					want += "\n"
				}
			}
		}
		want += "\n"
		msg := "line larger than 1048576 bytes (1 MiB), the limit: reading stopped there"
		if tc.json {
			if !strings.HasSuffix(out, `{"line":2,"error":"<stdin>:2: `+msg+`"}`+"\n") {
				t.Errorf("--json output %q", out)
			}
		} else if out != want {
			t.Errorf("after %q: stdout %q, want %q", tc.head, out, want)
		}
		if code != cli.ExitUsage || !strings.Contains(stderr, "<stdin>:"+itoa(lines)+": "+msg) ||
			!strings.Contains(stderr, "the lines after line "+itoa(lines)+" were not read") {
			t.Errorf("after %q: exit %d, stderr %q", tc.head, code, stderr)
		}
		if alloc > 8*limit {
			t.Errorf("after %q: allocated %d MiB for a 1 MiB line limit", tc.head, alloc>>20)
		}
	}
	// A line of exactly the limit is derived.
	long := "[" + strings.Repeat(" ", limit-2) + "]"
	want, _, _ := clitest.Run(t, long, "key", "--task", "t", "--tool", "x")
	if out, stderr, code := clitest.Run(t, long+"\r\n"+long, "key", "--batch", "--task", "t", "--tool", "x"); code != 0 || out != want+want {
		t.Errorf("lines of the limit: exit %d, %q, %q", code, out, stderr)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestEndlessInputsProcess runs idemkey on /dev/zero, on a sparse file one
// byte past the real input limit and, with IDEMKEY_TEST_ENDLESS=1, on an
// endless pipe up to that limit (2 GiB through a pipe: seconds of CPU and
// 2 GiB of memory; TestInputLimitStopsReading checks the same stop with
// the limit lowered), and measures the process's peak memory (its maximum
// resident set) above that of a run on a small input.
func TestEndlessInputsProcess(t *testing.T) {
	type tc struct {
		name  string
		args  []string
		stdin string // a file to open, or "pipe" for an endless pipe of spaces
		msg   string
		rss   int64 // MiB above the base
	}
	base := int64(0)
	cases := []tc{
		{"base", []string{"key", "--task", "t", "--tool", "x", "../../testdata/args.json"}, "", "", 0},
		{"key /dev/zero", []string{"key", "--task", "t", "--tool", "x", "/dev/zero"}, "", "/dev/zero:1:1: input starts with NUL bytes", 8},
		{"key < /dev/zero", []string{"key", "--task", "t", "--tool", "x"}, "/dev/zero", "<stdin>:1:1: input starts with NUL bytes", 8},
		{"key --batch < /dev/zero", []string{"key", "--batch", "--task", "t", "--tool", "x"}, "/dev/zero", "<stdin>:1: line larger than 67108864 bytes (64 MiB)", 3 * 64},
		{"key --batch /dev/zero", []string{"key", "--batch", "--task", "t", "--tool", "x", "/dev/zero"}, "", "/dev/zero:1: line larger than 67108864 bytes (64 MiB)", 3 * 64},
	}
	// The real limit, by a file's size: refused before it is read.
	sparse := filepath.Join(t.TempDir(), "sparse.json")
	if f, err := os.Create(sparse); err != nil {
		t.Fatal(err)
	} else if err := f.Truncate(input.Limit + 1); err != nil {
		t.Fatal(err)
	} else {
		f.Close()
	}
	cases = append(cases, tc{"key 2 GiB + 1 file", []string{"key", "--task", "t", "--tool", "x", sparse}, "",
		sparse + ": input larger than 2147483647 bytes (2 GiB), the limit", 8})
	if os.Getenv("IDEMKEY_TEST_ENDLESS") == "1" && !testing.Short() {
		// The real limit: 2 GiB of an endless pipe is read, and no more.
		cases = append(cases,
			tc{"key < pipe", []string{"key", "--task", "t", "--tool", "x"}, "pipe", "<stdin>: input larger than 2147483647 bytes (2 GiB), the limit", 2048 + 64})
	}
	for _, c := range cases {
		cmd := exec.Command("idemkey", c.args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		var written int64
		done := make(chan struct{})
		switch c.stdin {
		case "":
		case "pipe":
			w, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				defer close(done)
				buf := bytes.Repeat([]byte{' '}, 1<<20)
				for {
					n, err := w.Write(buf)
					written += int64(n)
					if err != nil {
						return
					}
				}
			}()
		default:
			f, err := os.Open(c.stdin)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			cmd.Stdin = f
		}
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		rss, err := clitest.PeakRSS(cmd, 0)
		rss >>= 20
		out := stdout.Bytes()
		if c.stdin == "pipe" {
			<-done
		}
		if c.name == "base" {
			if err != nil {
				t.Fatalf("%s: %v, %s", c.name, err, stderr.String())
			}
			base = rss
			continue
		}
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != cli.ExitUsage || len(out) > 1 || !strings.Contains(stderr.String(), c.msg) {
			t.Errorf("%s: %v, stdout %q, stderr %q", c.name, err, out, stderr.String())
			continue
		}
		t.Logf("%s: peak RSS %d MiB (%d MiB above a small input's), %d MiB taken from the pipe", c.name, rss, rss-base, written>>20)
		if rss-base > c.rss {
			t.Errorf("%s: peak RSS %d MiB above a small input's, want at most %d", c.name, rss-base, c.rss)
		}
		if written > input.Limit+64<<20 {
			t.Errorf("%s: %d bytes taken from the pipe, limit %d", c.name, written, input.Limit)
		}
	}
}
