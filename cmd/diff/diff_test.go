package diff_test

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/derive"
	"github.com/idemkey/idemkey/derive/diff"
)

// diffOut is the --json output of idemkey diff.
type diffOut struct {
	Equal       bool   `json:"equal"`
	KeyA        string `json:"key_a"`
	KeyB        string `json:"key_b"`
	Scheme      string `json:"scheme"`
	Differences []struct {
		Pointer  string          `json:"pointer"`
		PointerB string          `json:"pointer_b"`
		Kind     string          `json:"kind"`
		A        json.RawMessage `json:"a"`
		B        json.RawMessage `json:"b"`
		Reason   string          `json:"reason"`
	} `json:"differences"`
	Omitted  int `json:"omitted"`
	Warnings []struct {
		Pointer string `json:"pointer"`
		Kind    string `json:"kind"`
		Side    string `json:"side"`
		A       string `json:"a"`
		B       string `json:"b"`
		Message string `json:"message"`
	} `json:"warnings"`
	Absorbed []struct {
		Pointer string `json:"pointer"`
		Kind    string `json:"kind"`
		A       string `json:"a"`
		B       string `json:"b"`
	} `json:"absorbed"`
	Schemes *struct {
		JS    struct{ Verdict string } `json:"js"`
		JCS   struct{ Verdict string } `json:"jcs"`
		Agree bool                     `json:"agree"`
	} `json:"schemes"`
}

// diffFiles writes a and b to files and runs idemkey diff on them
// in-process, with the test process's (hermetic) environment.
func diffFiles(t *testing.T, a, b string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	dir := t.TempDir()
	pa, pb := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	if err := os.WriteFile(pa, []byte(a), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pb, []byte(b), 0o644); err != nil {
		t.Fatal(err)
	}
	o := clitest.Streams{Getenv: os.Getenv}.Run(t, append(append([]string{"diff"}, args...), pa, pb)...)
	return o.Stdout, o.Stderr, o.Code
}

// diffJSON runs diff --json and decodes the result.
func diffJSON(t *testing.T, a, b string, args ...string) (diffOut, int) {
	t.Helper()
	out, errs, code := diffFiles(t, a, b, append([]string{"--json"}, args...)...)
	var d diffOut
	if code == 2 {
		if out != "" {
			t.Errorf("exit 2 with output on stdout: %q", out)
		}
		return d, code
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s\nstderr: %s", err, out, errs)
	}
	if strings.Count(out, "\n") != 1 {
		t.Errorf("want exactly one line of output, got %q", out)
	}
	return d, code
}

// keyOf computes the key of a side the way idemkey key does, independently
// of the diff code (bare args with task t and tool pay, or a record).
func keyOf(t *testing.T, src string, s canon.Scheme) string {
	t.Helper()
	doc, err := canon.Parse([]byte(src), s)
	if err != nil {
		t.Fatal(err)
	}
	c := derive.Call{Task: "t", Tool: "pay", Args: doc.Root()}
	if r := doc.Root(); diff.IsRecord(r) {
		task, _ := r.Get("task")
		tool, _ := r.Get("tool")
		args, _ := r.Get("args")
		c = derive.Call{Task: task.Text(), Tool: tool.Text(), Args: args}
	}
	k := c.Key()
	return hex.EncodeToString(k[:])
}

type pk struct{ pointer, kind string }

func TestDiffCases(t *testing.T) {
	rec := func(task, tool, args string) string {
		return fmt.Sprintf(`{"task":%q,"tool":%q,"args":%s}`, task, tool, args)
	}
	ten := `[0,1,2,3,4,5,6,7,8,9]`
	cases := []struct {
		name     string
		a, b     string
		args     []string
		code     int
		diffs    []pk   // exact list, in order
		warns    []pk   // exact list
		absorbed []pk   // with --explain: exact list
		reason   string // a substring the first difference's (or warning's) reason must contain
	}{
		{name: "identical", a: `{"a":1}`, b: `{"a":1}`, code: 0},
		{name: "canonicalization absorbs order, whitespace, numbers, escapes",
			a:    "{\n  \"b\": 1.0,\n  \"a\": [1e2, \"\\u00e9\"]\n}",
			b:    `{"a":[100,"é"],"b":1}`,
			code: 0,
			absorbed: []pk{{"/args", "whitespace"}, {"/args", "member-order"}, {"/args/a/0", "number-format"},
				{"/args/a/1", "string-escape"}, {"/args/b", "number-format"}}},
		{name: "escaped member name", a: `{"\u0061":1}`, b: `{"a":1}`, code: 0,
			absorbed: []pk{{"/args/a", "name-escape"}}},
		{name: "minus zero", a: `[-0]`, b: `[0]`, code: 0, absorbed: []pk{{"/args/0", "number-format"}}, reason: "-0"},
		{name: "task id", a: rec("t-1", "pay", `{}`), b: rec("t-2", "pay", `{}`), code: 1,
			diffs: []pk{{"/task", "task"}}},
		{name: "tool name", a: rec("t", "pay", `{}`), b: rec("t", "refund", `{}`), code: 1,
			diffs: []pk{{"/tool", "tool"}}},
		{name: "tool name letter case", a: rec("t", "pay", `{}`), b: rec("t", "Pay", `{}`), code: 1,
			diffs: []pk{{"/tool", "tool"}}, reason: "U+0050 LATIN CAPITAL LETTER P"},
		{name: "record and bare args with the same call", a: rec("t", "pay", `{"x":1}`), b: `{"x":1}`, code: 0},
		{name: "number vs string", a: `{"x":1}`, b: `{"x":"1"}`, code: 1,
			diffs: []pk{{"/args/x", "type"}}, reason: `the number 1 and the string "1"`},
		{name: "null vs missing", a: `{"x":null,"y":1}`, b: `{"y":1}`, code: 1,
			diffs: []pk{{"/args/x", "null-vs-missing"}}},
		{name: "missing vs null", a: `{}`, b: `{"x":null}`, code: 1,
			diffs: []pk{{"/args/x", "null-vs-missing"}}},
		{name: "array vs object", a: `[]`, b: `{}`, code: 1, diffs: []pk{{"/args", "type"}}},
		{name: "null vs number", a: `{"x":null}`, b: `{"x":0}`, code: 1, diffs: []pk{{"/args/x", "type"}}},
		{name: "boolean", a: `[true]`, b: `[false]`, code: 1, diffs: []pk{{"/args/0", "value"}}},
		{name: "member added and removed", a: `{"a":1,"b":2}`, b: `{"b":2,"c":3}`, code: 1,
			diffs: []pk{{"/args/a", "member-removed"}, {"/args/c", "member-added"}}},
		{name: "nfc vs nfd", a: `{"s":"caf\u00e9"}`, b: `{"s":"cafe\u0301"}`, code: 1,
			diffs: []pk{{"/args/s", "unicode-normalization"}}, reason: "U+0301 COMBINING ACUTE ACCENT"},
		{name: "zero-width space", a: `{"s":"ab"}`, b: `{"s":"a\u200bb"}`, code: 1,
			diffs: []pk{{"/args/s", "invisible-character"}}, reason: "U+200B ZERO WIDTH SPACE at character 2"},
		{name: "byte order mark in a string", a: `["\ufeffid"]`, b: `["id"]`, code: 1,
			diffs: []pk{{"/args/0", "invisible-character"}}, reason: "U+FEFF"},
		{name: "soft hyphen", a: `["co\u00adop"]`, b: `["coop"]`, code: 1,
			diffs: []pk{{"/args/0", "invisible-character"}}, reason: "U+00AD SOFT HYPHEN"},
		{name: "non-breaking space", a: `["a\u00a0b"]`, b: `["a b"]`, code: 1,
			diffs: []pk{{"/args/0", "non-breaking-space"}}, reason: "U+00A0 NO-BREAK SPACE"},
		{name: "trailing whitespace", a: `["ok"]`, b: `["ok \n"]`, code: 1,
			diffs: []pk{{"/args/0", "trailing-whitespace"}}, reason: "U+0020 SPACE + U+000A LINE FEED"},
		{name: "leading whitespace", a: `["\tok"]`, b: `["ok"]`, code: 1,
			diffs: []pk{{"/args/0", "leading-whitespace"}}, reason: "CHARACTER TABULATION"},
		{name: "letter case", a: `["Alice"]`, b: `["alice"]`, code: 1,
			diffs: []pk{{"/args/0", "letter-case"}}, reason: "U+0041"},
		{name: "several look-alike traits", a: `["Cafe\u0301 "]`, b: `["caf\u00e9"]`, code: 1,
			diffs: []pk{{"/args/0", "look-alike"}}, reason: "letter case"},
		{name: "lone surrogates", a: `["\ud800x"]`, b: `["\ud801x"]`, code: 1,
			diffs: []pk{{"/args/0", "value"}}, reason: "lone surrogate"},
		{name: "different strings", a: `["abc"]`, b: `["abd"]`, code: 1,
			diffs: []pk{{"/args/0", "value"}}, reason: "character 3"},
		{name: "look-alike member names", a: `{"amount":5}`, b: `{"amount\u200b":6}`, code: 1,
			diffs: []pk{{"/args/amount", "invisible-character"}, {"/args/amount", "value"}}},
		{name: "member name needing escapes", a: `{"a/b":{"c~d":1}}`, b: `{"a/b":{"c~d":2}}`, code: 1,
			diffs: []pk{{"/args/a~1b/c~0d", "value"}}},
		{name: "reordered array", a: `{"l":[1,2,3]}`, b: `{"l":[3,1,2]}`, code: 1,
			diffs: []pk{{"/args/l", "reordered"}}, reason: "arrays are ordered: reordering changes the key"},
		{name: "inserted element", a: ten, b: `[0,1,42,2,3,4,5,6,7,8,9]`, code: 1,
			diffs: []pk{{"/args/2", "element-inserted"}}},
		{name: "removed element", a: ten, b: `[0,1,2,3,4,5,6,8,9]`, code: 1,
			diffs: []pk{{"/args/7", "element-removed"}}},
		{name: "moved element", a: `["a","b","c","d","e"]`, b: `["b","c","d","a","e","f"]`, code: 1,
			diffs: []pk{{"/args/0", "element-moved"}, {"/args/5", "element-inserted"}}},
		{name: "changed element after an insertion", a: `[{"id":1},{"id":2,"v":"x"},{"id":3}]`,
			b: `[{"id":0},{"id":1},{"id":2,"v":"y"},{"id":3}]`, code: 1,
			diffs: []pk{{"/args/0", "element-inserted"}, {"/args/1/v", "value"}}},
		{name: "numbers that collapse to one double", a: `{"id":9007199254740993}`, b: `{"id":9007199254740992}`, code: 0,
			warns: []pk{{"/args/id", "collapsed-number"}}, reason: "two different values share a key"},
		{name: "out of range number is null under js", a: `[1e400]`, b: `[null]`, code: 0,
			warns: []pk{{"/args/0", "out-of-range-number"}}},
		{name: "different numbers", a: `[1.5]`, b: `[1.25]`, code: 1, diffs: []pk{{"/args/0", "value"}}},
		{name: "duplicate member", a: `{"x":1,"y":{"z":5,"z":7}}`, b: `{"x":1,"y":{"z":7}}`, code: 0,
			warns: []pk{{"/args/y/z", "duplicate-member"}}, reason: "the earlier value 5 was silently dropped"},
		{name: "duplicate in a record", a: `{"task":"t","tool":"pay","args":{"k":[1,{"q":1,"q":2}]}}`, b: `{"k":[1,{"q":2}]}`, code: 0,
			warns: []pk{{"/args/k/1/q", "duplicate-member"}}},
		{name: "max caps the list", a: `{"a":1,"b":2,"c":3,"d":4}`, b: `{"a":5,"b":6,"c":7,"d":8}`,
			args: []string{"--max", "2"}, code: 1, diffs: []pk{{"/args/a", "value"}, {"/args/b", "value"}}},
		{name: "jcs scheme", a: `{"a":1e2}`, b: `{"a":100}`, args: []string{"--scheme", "jcs"}, code: 0,
			absorbed: []pk{{"/args/a", "number-format"}}},
		{name: "jcs rejects a duplicate", a: `{"a":1,"a":1}`, b: `{"a":1}`, args: []string{"--scheme", "jcs"}, code: 2},
		{name: "bad json", a: `{"a":}`, b: `{}`, code: 2},
		{name: "forced record", a: `{"a":1}`, b: `{"a":1}`, args: []string{"--record"}, code: 2},
	}
	// The task and tool come from the environment: --task or --tool on
	// the command line would make both sides bare arguments.
	t.Setenv("IDEMKEY_TASK", "t")
	t.Setenv("IDEMKEY_TOOL", "pay")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"--explain"}, c.args...)
			d, code := diffJSON(t, c.a, c.b, args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d: %+v", code, c.code, d)
			}
			if code == 2 {
				return
			}
			scheme := canon.JS
			if slices.Contains(c.args, "jcs") {
				scheme = canon.JCS
			}
			if ka, kb := keyOf(t, c.a, scheme), keyOf(t, c.b, scheme); d.KeyA != ka || d.KeyB != kb {
				t.Errorf("keys %s %s, want %s %s", d.KeyA, d.KeyB, ka, kb)
			}
			if d.Equal != (d.KeyA == d.KeyB) || d.Equal != (code == 0) {
				t.Errorf("equal %v with keys %s %s and exit %d", d.Equal, d.KeyA, d.KeyB, code)
			}
			var got, gotW, gotA []pk
			reasons := ""
			for _, x := range d.Differences {
				got = append(got, pk{x.Pointer, x.Kind})
				reasons += x.Reason + "\n"
			}
			for _, x := range d.Warnings {
				gotW = append(gotW, pk{x.Pointer, x.Kind})
				reasons += x.Message + "\n"
			}
			for _, x := range d.Absorbed {
				gotA = append(gotA, pk{x.Pointer, x.Kind})
				reasons += x.A + " " + x.B + "\n"
			}
			if !slices.Equal(got, c.diffs) {
				t.Errorf("differences %v, want %v", got, c.diffs)
			}
			if !slices.Equal(gotW, c.warns) {
				t.Errorf("warnings %v, want %v", gotW, c.warns)
			}
			if !slices.Equal(gotA, c.absorbed) {
				t.Errorf("absorbed %v, want %v", gotA, c.absorbed)
			}
			if !strings.Contains(reasons, c.reason) {
				t.Errorf("reasons do not mention %q:\n%s", c.reason, reasons)
			}
		})
	}
}

// TestDiffValues checks the a and b members: canonical JSON values, absent
// for a side without a value.
func TestDiffValues(t *testing.T) {
	t.Parallel()
	d, _ := diffJSON(t, `{"x":{"b":1.0,"a":"\u00e9"},"gone":1}`, `{"x":[1]}`, "--task", "t", "--tool", "pay")
	if len(d.Differences) != 2 {
		t.Fatalf("differences: %+v", d.Differences)
	}
	g, x := d.Differences[0], d.Differences[1]
	if g.Pointer != "/args/gone" || string(g.A) != "1" || g.B != nil {
		t.Errorf("removed member: %s %s %s", g.Pointer, g.A, g.B)
	}
	if x.Pointer != "/args/x" || string(x.A) != `{"a":"é","b":1}` || string(x.B) != "[1]" {
		t.Errorf("type change: %s %s %s", x.Pointer, x.A, x.B)
	}
}

func TestDiffOmitted(t *testing.T) {
	t.Parallel()
	var a, b strings.Builder
	a.WriteString("[")
	b.WriteString("[")
	for i := range 120 {
		if i > 0 {
			a.WriteString(",")
			b.WriteString(",")
		}
		fmt.Fprintf(&a, `{"i":%d,"v":"a"}`, i)
		fmt.Fprintf(&b, `{"i":%d,"v":"b"}`, i)
	}
	a.WriteString("]")
	b.WriteString("]")
	d, code := diffJSON(t, a.String(), b.String(), "--task", "t", "--tool", "pay")
	if code != 1 || len(d.Differences) != 50 || d.Omitted != 70 {
		t.Fatalf("exit %d, %d differences, %d omitted; want 1, 50, 70", code, len(d.Differences), d.Omitted)
	}
	for k, x := range d.Differences {
		if want := fmt.Sprintf("/args/%d/v", k); x.Pointer != want || x.Kind != "value" {
			t.Errorf("difference %d: %s %s, want %s value", k, x.Pointer, x.Kind, want)
		}
	}
	d, _ = diffJSON(t, a.String(), b.String(), "--task", "t", "--tool", "pay", "--max", "0")
	if len(d.Differences) != 120 || d.Omitted != 0 {
		t.Errorf("--max 0: %d differences, %d omitted", len(d.Differences), d.Omitted)
	}
	out, _, _ := diffFiles(t, a.String(), b.String(), "--task", "t", "--tool", "pay", "--max", "3")
	if !strings.Contains(out, "117 more differences not shown") || strings.Count(out, "/args/") != 3 {
		t.Errorf("human output with --max 3:\n%s", out)
	}
}

func TestDiffSchemes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, a, b string
		js, jcs    string
		agree      bool
	}{
		{"duplicate", `{"x":1,"x":2}`, `{"x":2}`, "equal", "rejected", false},
		{"out of range", `[1e400]`, `[null]`, "equal", "rejected", false},
		{"lone surrogate", `["\ud800"]`, `["\ud800"]`, "equal", "rejected", false},
		{"array-index names", `{"10":1,"2":2,"a":3}`, `{"a":3,"2":2,"10":1}`, "equal", "equal", true},
		{"a plain difference", `{"10":1}`, `{"10":2}`, "differ", "differ", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, _ := diffJSON(t, c.a, c.b, "--task", "t", "--tool", "pay", "--schemes")
			if d.Schemes == nil {
				t.Fatal("no schemes member")
			}
			if d.Schemes.JS.Verdict != c.js || d.Schemes.JCS.Verdict != c.jcs || d.Schemes.Agree != c.agree {
				t.Errorf("js %s, jcs %s, agree %v; want %s, %s, %v", d.Schemes.JS.Verdict, d.Schemes.JCS.Verdict,
					d.Schemes.Agree, c.js, c.jcs, c.agree)
			}
		})
	}
}

func TestDiffUsage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"no task for bare args", []string{"--tool", "pay"}, "missing task id"},
		{"bad max", []string{"--task", "t", "--tool", "p", "--max", "-1"}, "invalid --max"},
		{"bad scheme", []string{"--task", "t", "--tool", "p", "--scheme", "x"}, "unknown scheme"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, errs, code := diffFiles(t, `{}`, `{}`, c.args...)
			if code != 2 || out != "" || !strings.Contains(errs, c.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
			}
		})
	}
	out, errb, code := clitest.Run(t, "{}", "diff", "--task", "t", "--tool", "p", "-", "-")
	if code != 2 || out != "" || !strings.Contains(errb, "only one of A and B") {
		t.Errorf("- -: exit %d, %q %q", code, out, errb)
	}
}

func TestDiffHumanOutput(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 300)
	a := fmt.Sprintf(`{"memo":"%s1","n":[1,2]}`, long)
	b := fmt.Sprintf(`{"memo":"%s2","n":[1,2,3]}`, long)
	out, errs, code := diffFiles(t, a, b, "--task", "t", "--tool", "pay")
	if code != 1 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "keys differ (js): ") || strings.Count(lines[0], " != ") != 1 {
		t.Errorf("verdict line %q", lines[0])
	}
	// The shortened value shows where the strings differ.
	if !strings.Contains(out, `xxx1"`) || !strings.Contains(out, `xxx2"`) || strings.Contains(out, long) {
		t.Errorf("long values not shortened around the difference:\n%s", out)
	}
	if !strings.Contains(out, "/args/n/2  element-inserted") || strings.Contains(out, "\x1b[") {
		t.Errorf("output:\n%s", out)
	}
	// --json never shortens.
	d, _ := diffJSON(t, a, b, "--task", "t", "--tool", "pay")
	if string(d.Differences[0].A) != `"`+long+`1"` {
		t.Errorf("json value shortened: %s", d.Differences[0].A)
	}
	// Colour on request.
	out, _, _ = diffFiles(t, a, b, "--task", "t", "--tool", "pay", "--color", "always")
	if !strings.Contains(out, "\x1b[") {
		t.Errorf("--color always without escape codes:\n%q", out)
	}
	// Invisible characters are spelled out for people.
	out, _, _ = diffFiles(t, `["a\u200bb"]`, `["ab"]`, "--task", "t", "--tool", "pay")
	if !strings.Contains(out, `"a\u200bb"`) {
		t.Errorf("invisible character not revealed:\n%s", out)
	}
}

func TestDiffWarningsOnStderrWithJSON(t *testing.T) {
	t.Parallel()
	out, errs, code := diffFiles(t, `[9007199254740993]`, `[9007199254740992]`, "--task", "t", "--tool", "pay", "--json")
	if code != 0 || !strings.Contains(out, `"collapsed-number"`) ||
		!strings.HasPrefix(errs, "idemkey: warning: /args/0: 9007199254740993 and 9007199254740992") {
		t.Errorf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	out, errs, _ = diffFiles(t, `[9007199254740993]`, `[9007199254740992]`, "--task", "t", "--tool", "pay")
	if errs != "" || !strings.Contains(out, "warning: /args/0: ") {
		t.Errorf("human: warnings belong to the result on stdout\nstdout %s\nstderr %s", out, errs)
	}
}

func TestDiffApproximateAlignmentWarns(t *testing.T) {
	t.Parallel()
	// Two arrays that share nothing but their last element: beyond a small
	// budget the alignment is approximate, and said to be.
	var a, b []string
	for i := range 3000 {
		a = append(a, fmt.Sprint(i))
		b = append(b, fmt.Sprint(i+100000))
	}
	a, b = append(a, "1"), append(b, "1")
	d, code := diffJSON(t, "["+strings.Join(a, ",")+"]", "["+strings.Join(b, ",")+"]", "--task", "t", "--tool", "pay", "--max", "0")
	if code != 1 || len(d.Differences) != 3000 {
		t.Fatalf("exit %d, %d differences", code, len(d.Differences))
	}
	if len(d.Warnings) != 1 || d.Warnings[0].Kind != "approximate-alignment" {
		t.Errorf("warnings %+v", d.Warnings)
	}
}

// TestDiffKeysMatchKey: diff prints the keys key prints, under the same
// key options (--format, --prefix, --secret-env) and with --omit from the
// environment or the config file.
func TestDiffKeysMatchKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	cfg := filepath.Join(dir, "omit.yaml")
	for p, s := range map[string]string{a: `{"amount":1,"trace_id":"x1"}`, b: `{"amount":1,"trace_id":"x2"}`, cfg: "omit: [/trace_id]\n"} {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(env map[string]string, args ...string) (string, int) {
		o := clitest.Streams{Env: env}.Run(t, args...)
		if o.Code == 2 {
			t.Fatalf("%v: exit 2: %s", args, o.Stderr)
		}
		return o.Stdout, o.Code
	}
	cases := []struct {
		name  string
		env   map[string]string // for --secret-env (read through the streams)
		osEnv map[string]string // IDEMKEY_* (read by the configuration, through the streams too)
		flags []string
		equal bool
	}{
		{name: "uuid with a prefix", flags: []string{"--format", "uuid", "--prefix", "pay_"}},
		{name: "base64url", flags: []string{"--format", "base64url"}},
		{name: "hmac", env: map[string]string{"S": "s3cr3t"}, flags: []string{"--secret-env", "S"}},
		{name: "omit from the environment", osEnv: map[string]string{"IDEMKEY_OMIT": "/trace_id"}, equal: true},
		{name: "omit from the config file", flags: []string{"--config", cfg}, equal: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range c.env {
				env[k] = v
			}
			for k, v := range c.osEnv {
				env[k] = v
			}
			c.env = env
			base := append([]string{"--task", "t", "--tool", "pay"}, c.flags...)
			ka, _ := run(c.env, append(append([]string{"key"}, base...), a)...)
			kb, _ := run(c.env, append(append([]string{"key"}, base...), b)...)
			out, code := run(c.env, append(append(append([]string{"diff", "--json"}, base...), a), b)...)
			var d diffOut
			if err := json.Unmarshal([]byte(out), &d); err != nil {
				t.Fatal(err, out)
			}
			if d.KeyA != strings.TrimSpace(ka) || d.KeyB != strings.TrimSpace(kb) {
				t.Errorf("diff keys %s %s, key printed %s %s", d.KeyA, d.KeyB, ka, kb)
			}
			if d.Equal != c.equal || (code == 0) != c.equal {
				t.Errorf("equal %v exit %d, want equal %v", d.Equal, code, c.equal)
			}
		})
	}
}
