package cmd_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The README's examples are tests. Every ```console block of README.md is
// run, unless the line before it is "<!-- norun -->":
//
//   - a line starting with "$ " is a command (a line ending in a backslash
//     continues on the next), run with bash in a fresh copy of
//     testdata/examples, with idemkey on the PATH, a home, config and
//     state directory of its own, and no IDEMKEY_* setting of the
//     caller's; the commands of one block share that directory, in order;
//   - the lines after a command, up to the next command or the block's
//     end, are what it prints, stdout and stderr together (2>&1), compared
//     exactly, but for trailing blank lines; a line "…" stands for any
//     number of lines and a "…" inside a line for any text (a time, a
//     pid: an abridged output);
//   - a command must exit 0, unless its line ends in "# exit N".

// readmeStep is one command of a console block and what it must print.
type readmeStep struct {
	line int // the command's line in the README
	cmd  string
	want []string
	exit int
}

// readmeBlock is one console block of the README.
type readmeBlock struct {
	line  int
	steps []readmeStep
}

var exitComment = regexp.MustCompile(`\s+# exit (\d+)$`)

// readmeBlocks extracts the console blocks of a README's text.
func readmeBlocks(text string) ([]readmeBlock, error) {
	var blocks []readmeBlock
	var cur *readmeBlock
	norun := false
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		l := sc.Text()
		switch {
		case cur == nil && l == "```console":
			if !norun {
				cur = &readmeBlock{line: n}
			} else {
				cur = &readmeBlock{line: -n}
			}
		case cur == nil:
			norun = strings.TrimSpace(l) == "<!-- norun -->"
		case l == "```":
			if cur.line > 0 {
				blocks = append(blocks, *cur)
			}
			cur, norun = nil, false
		case strings.HasPrefix(l, "$ "):
			st := readmeStep{line: n, cmd: strings.TrimPrefix(l, "$ ")}
			for strings.HasSuffix(st.cmd, `\`) && sc.Scan() {
				n++
				st.cmd = strings.TrimSuffix(st.cmd, `\`) + "\n" + sc.Text()
			}
			if m := exitComment.FindStringSubmatch(st.cmd); m != nil {
				st.exit, _ = strconv.Atoi(m[1])
				st.cmd = strings.TrimSuffix(st.cmd, m[0])
			}
			cur.steps = append(cur.steps, st)
		default:
			if len(cur.steps) == 0 {
				return nil, fmt.Errorf("README.md:%d: output before the block's first command", n)
			}
			s := &cur.steps[len(cur.steps)-1]
			s.want = append(s.want, l)
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("README.md:%d: console block not closed", abs(cur.line))
	}
	return blocks, sc.Err()
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// matchLines reports whether got matches want, where a want line "…"
// matches any number of got lines.
func matchLines(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if want[0] == "…" {
		for i := 0; i <= len(got); i++ {
			if matchLines(want[1:], got[i:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && matchLine(want[0], got[0]) && matchLines(want[1:], got[1:])
}

// matchLine compares one line, where a "…" inside want stands for any
// text.
func matchLine(want, got string) bool {
	if !strings.Contains(want, "…") {
		return want == got
	}
	parts := strings.Split(want, "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$").MatchString(got)
}

func TestReadmeBlocksExtract(t *testing.T) {
	text := "intro\n```console\n$ echo a \\\n  b\na b\n$ false # exit 1\n```\n<!-- norun -->\n```console\n$ rm -rf /\n```\n```sh\n$ not console\n```\n"
	blocks, err := readmeBlocks(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 1 || len(blocks[0].steps) != 2 {
		t.Fatalf("blocks %+v", blocks)
	}
	s := blocks[0].steps
	if s[0].cmd != "echo a \n  b" || strings.Join(s[0].want, "|") != "a b" || s[0].exit != 0 {
		t.Errorf("step 0: %+v", s[0])
	}
	if s[1].cmd != "false" || s[1].exit != 1 || len(s[1].want) != 0 {
		t.Errorf("step 1: %+v", s[1])
	}
	if _, err := readmeBlocks("```console\nout\n```\n"); err == nil {
		t.Error("output before a command was accepted")
	}
	for _, c := range []struct {
		want, got string
		ok        bool
	}{
		{"a|…|d", "a|b|c|d", true},
		{"a|…|d", "a|d", true},
		{"a|…", "a", true},
		{"a|…|d", "a|b|c", false},
		{"a|b", "a|b|c", false},
		{"at …, exit 0|x", "at 2026-12-01T09:50:15Z, exit 0|x", true},
		{"at …, exit 0", "at 2026-12-01T09:50:15Z, exit 1", false},
		{"a.b…", "axbc", false},
	} {
		if got := matchLines(strings.Split(c.want, "|"), strings.Split(c.got, "|")); got != c.ok {
			t.Errorf("matchLines(%q, %q) = %v", c.want, c.got, got)
		}
	}
}

// TestReadmeExamples runs every console block of README.md.
func TestReadmeExamples(t *testing.T) {
	text, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := readmeBlocks(string(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) == 0 {
		t.Fatal("README.md has no console block to run")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	examples, err := filepath.Abs("../testdata/examples")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		t.Run(fmt.Sprintf("line%d", b.line), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			bin := filepath.Join(dir, ".bin")
			work := filepath.Join(dir, "work")
			if err := os.MkdirAll(bin, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(exe, filepath.Join(bin, "idemkey")); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("cp", "-R", examples, work).CombinedOutput(); err != nil {
				t.Fatalf("copying testdata/examples: %v: %s", err, out)
			}
			env := []string{
				"PATH=" + bin + ":" + os.Getenv("PATH"),
				"HOME=" + filepath.Join(dir, "home"),
				"XDG_CONFIG_HOME=" + filepath.Join(dir, "config"),
				"XDG_STATE_HOME=" + filepath.Join(dir, "state"),
				"NO_COLOR=1", "LC_ALL=C.UTF-8", "TZ=UTC",
			}
			for _, s := range b.steps {
				c := exec.Command("bash", "-c", s.cmd+" 2>&1")
				c.Dir = work
				c.Env = env
				out, err := c.Output()
				code := 0
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				} else if err != nil {
					t.Fatalf("README.md:%d: %v", s.line, err)
				}
				got := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
				if len(out) == 0 {
					got = nil
				}
				if code != s.exit {
					t.Errorf("README.md:%d: $ %s\nexit %d, want %d; it printed:\n%s", s.line, s.cmd, code, s.exit, out)
				}
				if !matchLines(s.want, got) {
					t.Errorf("README.md:%d: $ %s\nprinted:\n%s\nthe README says:\n%s", s.line, s.cmd, out, strings.Join(s.want, "\n"))
				}
			}
		})
	}
}
