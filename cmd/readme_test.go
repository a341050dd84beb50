package cmd

// The README's examples run as written (issue 19 item 28, issue 20). The
// convention README.md is written to:
//
//   - Every ```console block is run, unless the nearest non-blank line
//     above its opening fence is <!-- norun -->.
//   - A block runs in a fresh temporary copy of testdata/examples (every
//     input an example needs lives there; modes are kept, so deploy.sh
//     runs), with idemkey first on PATH, HOME and XDG_CONFIG_HOME,
//     XDG_STATE_HOME, XDG_CACHE_HOME inside that directory (so the default
//     ledger is the block's own), no IDEMKEY_* variable, NO_COLOR=1, TZ=UTC.
//   - A line starting with "$ " is a command, run with bash -c in that
//     directory: one shell per command, so files carry over to the next
//     command of the block, variables do not (write IDEMKEY_TASK=t-42
//     idemkey … on the line). A command line ending in \ continues on the
//     next line.
//   - The lines after a command, up to the next "$ " line or the end of
//     the block, are its expected standard output, compared exactly.
//     Standard error is not compared: write 2>&1 to show it.
//   - A line that is "…" alone stands for any number of lines (none too);
//     "…" inside a line for any text there.
//   - A command must exit 0, unless its last line ends with a comment
//     "# exit N": then it must exit N (128+S for one killed by signal S,
//     as a shell reports it).
//   - A README without a block to run fails: a test that runs nothing is
//     a defect.
//
// IDEMKEY_TEST_README names another file to run instead (a draft).

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readmeBlock is a ```console block: its commands.
type readmeBlock struct {
	line  int // of the opening fence, from 1
	norun bool
	cmds  []readmeCmd
}

// readmeCmd is one command of a block and what it must do.
type readmeCmd struct {
	line int    // of its "$ " line
	text string // the command, its continuation lines joined with newlines
	want []string
	exit int
}

var exitComment = regexp.MustCompile(`#\s*exit\s+(\d+)\s*$`)

// parseReadme reads the console blocks of a README (see the convention
// above).
func parseReadme(r io.Reader) ([]readmeBlock, error) {
	var blocks []readmeBlock
	var cur *readmeBlock
	var cmd *readmeCmd
	continued := false
	lastText := "" // the nearest non-blank line outside a block
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "```console":
			cur = &readmeBlock{line: n, norun: lastText == "<!-- norun -->"}
		case cur == nil:
			if strings.TrimSpace(line) != "" {
				lastText = strings.TrimSpace(line)
			}
		case strings.TrimSpace(line) == "```":
			if continued {
				return nil, fmt.Errorf("README line %d: the block ends inside a command continued with \\", n)
			}
			blocks = append(blocks, *cur)
			cur, cmd, lastText = nil, nil, ""
		case continued:
			cmd.text += "\n" + line
			continued = strings.HasSuffix(line, `\`)
		case strings.HasPrefix(line, "$ "):
			cur.cmds = append(cur.cmds, readmeCmd{line: n, text: line[2:]})
			cmd = &cur.cmds[len(cur.cmds)-1]
			continued = strings.HasSuffix(line, `\`)
		case cmd == nil:
			return nil, fmt.Errorf("README line %d: output before the block's first command ($ …)", n)
		default:
			cmd.want = append(cmd.want, line)
		}
		if cmd != nil && !continued {
			if m := exitComment.FindStringSubmatch(cmd.text); m != nil {
				cmd.exit, _ = strconv.Atoi(m[1])
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("README line %d: the console block is not closed", cur.line)
	}
	return blocks, nil
}

// matchLines reports whether got matches want, where a want line "…"
// stands for any lines and "…" in a line for any text (see matchLine).
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

// matchLine reports whether got is want, "…" in want standing for any
// text.
func matchLine(want, got string) bool {
	parts := strings.Split(want, "…")
	if len(parts) == 1 {
		return want == got
	}
	if !strings.HasPrefix(got, parts[0]) {
		return false
	}
	rest := got[len(parts[0]):]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, p)
		if i < 0 {
			return false
		}
		rest = rest[i+len(p):]
	}
	return strings.HasSuffix(rest, parts[len(parts)-1])
}

// outputLines splits a command's output into lines (a last line without
// its newline counts).
func outputLines(out []byte) []string {
	s := strings.TrimSuffix(string(out), "\n")
	if s == "" && len(out) <= 1 {
		return nil
	}
	return strings.Split(s, "\n")
}

// copyDir copies the files of src into dst, keeping their modes.
func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(to, info.Mode().Perm()|0o700)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, data, info.Mode().Perm())
	})
}

// blockEnv is the environment a block's commands run in (see the
// convention above).
func blockEnv(dir, bin string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "IDEMKEY_"), name == "HOME", name == "PATH", name == "NO_COLOR", name == "TZ",
			strings.HasPrefix(name, "XDG_"):
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+filepath.Join(dir, ".home"), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"NO_COLOR=1", "TZ=UTC")
	for _, x := range []string{"CONFIG", "STATE", "CACHE"} {
		env = append(env, "XDG_"+x+"_HOME="+filepath.Join(dir, ".home", strings.ToLower(x)))
	}
	return env
}

// runBlock runs a block's commands in a copy of examples, idemkey from
// bin, and returns what differed from the README, one problem a string.
func runBlock(b readmeBlock, examples, bin, dir string) []string {
	if err := copyDir(examples, dir); err != nil {
		return []string{err.Error()}
	}
	env := blockEnv(dir, bin)
	var problems []string
	for _, c := range b.cmds {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-c", c.text)
		cmd.Dir, cmd.Env = dir, env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		cancel()
		code := 0
		if xe, ok := err.(*exec.ExitError); ok {
			code = xe.ExitCode()
			if ws, ok := xe.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int(ws.Signal()) // as a shell reports it
			}
		} else if err != nil {
			problems = append(problems, fmt.Sprintf("README line %d: $ %s: %v", c.line, c.text, err))
			continue
		}
		got := outputLines(stdout.Bytes())
		if code != c.exit || !matchLines(c.want, got) {
			problems = append(problems, fmt.Sprintf("README line %d: $ %s\nexit %d, want %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s",
				c.line, c.text, code, c.exit, strings.Join(got, "\n"), strings.Join(c.want, "\n"), stderr.String()))
		}
	}
	return problems
}

// TestREADMEExamples runs every console block of README.md (see the
// convention above).
func TestREADMEExamples(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatalf("the README's examples run with bash: %v", err)
	}
	path := filepath.Join("..", "README.md")
	if p := os.Getenv("IDEMKEY_TEST_README"); p != "" {
		path = p
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parseReadme(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	runnable := 0
	for _, b := range blocks {
		if !b.norun {
			runnable++
		}
	}
	if runnable == 0 {
		t.Fatalf("%s has no ```console block to run (%d marked <!-- norun -->): its examples are not checked", path, len(blocks))
	}
	bin := idemkeyBinDir(t)
	examples := filepath.Join("..", "testdata", "examples")
	for _, b := range blocks {
		if b.norun {
			continue
		}
		t.Run(fmt.Sprintf("line%d", b.line), func(t *testing.T) {
			for _, p := range runBlock(b, examples, bin, t.TempDir()) {
				t.Error(p)
			}
		})
	}
}

// sampleReadme exercises every part of the convention.
const sampleReadme = "# Sample\n\n```sh\n$ not run: not a console block\n```\n\n" +
	"```console\n" +
	"$ idemkey key --task t-42 --tool charge --from mcp mcp_call.json\n" +
	"e615bca3d4af00038d6bef50b1de0424af3bdfb46004d20ce76a45a3213f705a\n" +
	"$ idemkey key --task t-42 \\\n    --from openai tool_call.json\n" +
	"e615bca3…\n" +
	"$ idemkey key --batch --from call calls.jsonl\n" +
	"…\n" +
	"$ idemkey key --task t nosuch.json   # exit 2\n" +
	"$ echo made > made.txt; cat made.txt\n" +
	"made\n" +
	"$ cat made.txt && test -x deploy.sh && case \"$XDG_STATE_HOME\" in \"$PWD\"/*) echo own state;; esac\n" +
	"made\n" +
	"own state\n" +
	"```\n\n<!-- norun -->\n\n```console\n$ false\nnever\n```\n"

// TestReadmeConvention: the parser and the runner on a sample README:
// norun, continuation, "# exit N", the wildcards; and a block that does not
// match is reported, naming its line.
func TestReadmeConvention(t *testing.T) {
	p := filepath.Join(t.TempDir(), "README.md")
	if err := os.WriteFile(p, []byte(sampleReadme), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	blocks, err := parseReadme(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 || blocks[0].norun || !blocks[1].norun || len(blocks[0].cmds) != 6 {
		t.Fatalf("blocks: %+v", blocks)
	}
	c := blocks[0].cmds
	if c[1].text != "idemkey key --task t-42 \\\n    --from openai tool_call.json" || c[3].exit != 2 || len(c[3].want) != 0 || c[0].line != 8 {
		t.Errorf("commands: %+v", c)
	}
	bin, examples := idemkeyBinDir(t), filepath.Join("..", "testdata", "examples")
	if problems := runBlock(blocks[0], examples, bin, t.TempDir()); len(problems) > 0 {
		t.Errorf("the sample's block failed:\n%s", strings.Join(problems, "\n"))
	}
	// What does not match is reported: another output, another exit code.
	bad := blocks[0]
	bad.cmds = []readmeCmd{{line: 40, text: "idemkey key --task t --tool x args.json", want: []string{"0000"}},
		{line: 41, text: "idemkey key --task t args.json"}}
	problems := runBlock(bad, examples, bin, t.TempDir())
	if len(problems) != 2 || !strings.HasPrefix(problems[0], "README line 40: ") || !strings.Contains(problems[1], "exit 2, want 0") {
		t.Errorf("mismatches reported as %q", problems)
	}
	if _, err := parseReadme(strings.NewReader("```console\noutput first\n```\n")); err == nil {
		t.Error("output before a command was accepted")
	}
	if _, err := parseReadme(strings.NewReader("```console\n$ true\n")); err == nil {
		t.Error("an unclosed block was accepted")
	}
	for _, m := range []struct {
		want, got []string
		ok        bool
	}{
		{[]string{"a", "…", "d"}, []string{"a", "b", "c", "d"}, true},
		{[]string{"a", "…", "d"}, []string{"a", "d"}, true},
		{[]string{"a", "…"}, []string{"b"}, false},
		{[]string{"x … z"}, []string{"x y y z"}, true},
		{[]string{"x … z"}, []string{"x y"}, false},
		{[]string{"a"}, []string{"a", "b"}, false},
		{nil, nil, true},
	} {
		if matchLines(m.want, m.got) != m.ok {
			t.Errorf("matchLines(%q, %q) != %v", m.want, m.got, m.ok)
		}
	}
}
