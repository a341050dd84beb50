package key_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/clitest"
)

// randomCall returns a call record line with arguments of about 400 bytes
// in varied shapes, or, for bad, a line that is not a valid call.
func randomCall(r *rand.Rand, i int, bad bool) string {
	if bad {
		switch i % 3 {
		case 0:
			return fmt.Sprintf(`{"task":"t-%d","tool":"x","args":{"a":1,}}`, i)
		case 1:
			return fmt.Sprintf(`{"task":"t-%d","args":{}}`, i)
		default:
			return `{"task":"t","tool":"x","args":` // truncated
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `{"tool":"tool_%d","task":"tâche-%d","args":{`, r.IntN(5), r.IntN(50))
	n := 4 + r.IntN(8)
	for k := 0; k < n; k++ {
		if k > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"f%d_%c":`, r.IntN(100), 'a'+rune(r.IntN(26)))
		switch r.IntN(6) {
		case 0:
			fmt.Fprintf(&b, "%d", r.Int64N(1<<60)-1<<59)
		case 1:
			fmt.Fprintf(&b, "%g", r.NormFloat64()*1e6)
		case 2:
			fmt.Fprintf(&b, `"s\u00e9%d\n\/%x"`, r.IntN(1000), r.Uint32())
		case 3:
			fmt.Fprintf(&b, `[1.50,"%d",null,true,{"z":1,"a":[]}]`, r.IntN(9))
		case 4:
			b.WriteString(`{"10":1,"9":2,"b":"😀","a":false}`)
		default:
			b.WriteString(`"Ünïcödé ✓ \ud83d\ude00"`)
		}
	}
	b.WriteString("}}")
	return b.String()
}

// TestBatchMatchesOneByOne derives thousands of keys in one batch, with
// bad lines mixed in, and checks each against a separate key invocation.
func TestBatchMatchesOneByOne(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	const n = 3000
	lines := make([]string, n)
	for i := range lines {
		lines[i] = randomCall(r, i, i%97 == 13)
	}
	for _, format := range []string{"hex", "uuid"} {
		out, stderr, code := clitest.Run(t, strings.Join(lines, "\n")+"\n", "key", "--batch", "--from", "call", "--format", format)
		if code != cli.ExitUsage {
			t.Fatalf("batch exit code %d, want 2 (bad lines present)", code)
		}
		got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(got) != n {
			t.Fatalf("batch wrote %d lines, want %d", len(got), n)
		}
		bad := 0
		for i, line := range lines {
			want, _, code := clitest.Run(t, line, "key", "--from", "call", "--format", format)
			if i%97 == 13 {
				bad++
				if code != cli.ExitUsage || got[i] != "" {
					t.Fatalf("line %d: bad line gave %q (single-run exit %d)", i+1, got[i], code)
				}
				if !strings.Contains(stderr, fmt.Sprintf("<stdin>:%d", i+1)) {
					t.Fatalf("line %d: not reported on stderr", i+1)
				}
				continue
			}
			if code != 0 || got[i]+"\n" != want {
				t.Fatalf("line %d: batch %q, single %q (exit %d)", i+1, got[i], want, code)
			}
		}
		if !strings.Contains(stderr, fmt.Sprintf("%d of %d lines failed", bad, n)) {
			t.Errorf("summary missing from stderr: %q", stderr[max(0, len(stderr)-200):])
		}
	}
}

func TestKeyFormatLengths(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		format string
		n      int
	}{{"hex", 64}, {"base64url", 43}, {"uuid", 36}} {
		out, _, code := clitest.Run(t, `{"a":1}`, "key", "--task", "t", "--tool", "x", "--format", tc.format, "--prefix", "p-")
		if code != 0 {
			t.Fatalf("%s: exit %d", tc.format, code)
		}
		key := strings.TrimSuffix(out, "\n")
		if len(key) != tc.n+2 || !strings.HasPrefix(key, "p-") {
			t.Errorf("%s: %q has length %d, want %d with prefix", tc.format, key, len(key), tc.n+2)
		}
		if _, _, code := clitest.Run(t, `{"a":1}`, "key", "--task", "t", "--tool", "x", "--format", tc.format, "--prefix", "p-", "--max-len", fmt.Sprint(tc.n+1)); code != cli.ExitUsage {
			t.Errorf("%s: --max-len %d accepted a %d-character key", tc.format, tc.n+1, tc.n+2)
		}
	}
}

// TestDeepInputOneLineError feeds 3,000,000 levels of nesting: the error
// is one readable line (the pointer is shortened), exit 2, no stdout.
func TestDeepInputOneLineError(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{
		strings.Repeat("[", 3000000) + strings.Repeat("]", 3000000),
		strings.Repeat(`{"a/b":`, 3000000) + "1" + strings.Repeat("}", 3000000),
	} {
		out, stderr, code := clitest.Run(t, doc, "key", "--task", "t", "--tool", "x")
		if code != cli.ExitUsage || out != "" {
			t.Fatalf("exit %d, stdout %q", code, out)
		}
		first, _, _ := strings.Cut(stderr, "\n")
		if len(first) > 300 || !strings.Contains(first, "nesting deeper than 10000 levels") || !strings.Contains(first, "10000 levels deep)") {
			t.Errorf("diagnostic %d bytes long: %.300s", len(first), first)
		}
	}
}

// TestLargeFileReadInParts reads a file above the size at which it is read
// in parts on every core, for the one-pass key and for key --json (which
// parses), and compares with the same bytes on stdin; and the same file
// made invalid near its end, which the one-pass path must report exactly
// as the parsing path does.
func TestLargeFileReadInParts(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("[\n")
	for i := 0; b.Len() < 9<<20; i++ {
		fmt.Fprintf(&b, "{\"n\": %d, \"s\": \"é%d\", \"b\": [1.50, true]},\n", i, i)
	}
	b.WriteString("{}\n]\n")
	path := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	fromFile, _, code := clitest.Run(t, "", "key", "--task", "t", "--tool", "x", path)
	fromStdin, _, code2 := clitest.Run(t, b.String(), "key", "--task", "t", "--tool", "x")
	asJSON, _, code3 := clitest.Run(t, "", "key", "--json", "--task", "t", "--tool", "x", path)
	if code != 0 || code2 != 0 || code3 != 0 || fromFile != fromStdin || len(fromFile) != 65 ||
		!strings.Contains(asJSON, `"key":"`+strings.TrimSpace(fromFile)+`"`) {
		t.Fatalf("file %q (exit %d), stdin %q (exit %d), --json %.100q (exit %d)", fromFile, code, fromStdin, code2, asJSON, code3)
	}

	// A large object around one array, from a mapped file and from a
	// stream: the object runs (see TestLargeObjects).
	obj := filepath.Join(t.TempDir(), "obj.json")
	if err := os.WriteFile(obj, []byte("{\"items\": "+b.String()+"}"), 0o644); err != nil {
		t.Fatal(err)
	}
	fromObj, _, code := clitest.Run(t, "", "key", "--task", "t", "--tool", "x", obj)
	fromObjStdin, _, code2 := clitest.Run(t, "{\"items\": "+b.String()+"}", "key", "--task", "t", "--tool", "x")
	if code != 0 || code2 != 0 || fromObj != fromObjStdin || fromObj == fromFile || len(fromObj) != 65 {
		t.Fatalf("object file %q (exit %d), stdin %q (exit %d)", fromObj, code, fromObjStdin, code2)
	}

	bad := strings.Replace(b.String(), "{}\n]", "{},\n]", 1)
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errFile, code := clitest.Run(t, "", "key", "--task", "t", "--tool", "x", path)
	_, errStdin, code2 := clitest.Run(t, bad, "key", "--task", "t", "--tool", "x")
	if code != 2 || code2 != 2 || out != "" || errFile != strings.Replace(errStdin, "<stdin>", path, 1) || !strings.Contains(errFile, "trailing comma") {
		t.Fatalf("file: exit %d, %q %q; stdin: exit %d, %q", code, out, errFile, code2, errStdin)
	}
}

// TestBatchQuickPathEdges checks key --batch, which derives plain lines in
// one pass without parsing them (batchWorker.quickKey), against separate
// key invocations, which parse, on the lines that pass must hand over or
// get exactly right: escaped and repeated member names, escaped and
// invalid task ids, contradictions with --task and --tool, non-objects,
// envelope-shaped bare arguments; with each --from, scheme and a secret.
func TestBatchQuickPathEdges(t *testing.T) {
	t.Parallel()
	lines := []string{
		`{"task":"t","tool":"x","args":{"b":1,"a":2}}`,
		`{"t\u0061sk":"t","tool":"x","args":1}`,
		`{"task":"t","task":"u","tool":"x","args":1}`,
		`{"task":"t\u00e9","tool":"x","args":[]}`,
		`{"task":"t\ud800","tool":"x","args":[]}`,
		`{"task":"t\"q","tool":"x","args":[]}`,
		`{"task":"","tool":"x","args":1}`,
		`{"task":1,"tool":"x","args":1}`,
		`{"task":"t","tool":"x"}`,
		`{"task":"t","tool":"y","args":{}}`,
		`{"tool":"x","args":{},"task":"t"}`,
		`{"task":"t","tool":"x","args":{"a":1,"a":[2,{"d":1,"c":0}]},"extra":[1e400]}`,
		` {"task":"t","tool":"x","args":null} `,
		`{"task":"t","tool":"x","args":{}}` + "\r",
		`[1,2]`,
		`"str"`,
		`{}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}`,
		`{"task":"t","tool":"x","args":{"a":1,}}`,
	}
	env := func(k string) string {
		if k == "K" {
			return "s3cret"
		}
		return ""
	}
	runEnv := func(stdin string, args ...string) (string, string, int) {
		return clitest.Streams{In: strings.NewReader(stdin), Getenv: env}.Run(t, args...).Values()
	}
	for _, flags := range [][]string{
		{"--from", "call"},
		{"--from", "call", "--task", "t"},
		{"--from", "call", "--tool", "x"},
		{"--from", "call", "--scheme", "jcs"},
		{"--from", "call", "--secret-env", "K", "--format", "base64url"},
		{"--task", "T", "--tool", "X"},
		{"--from", "args", "--task", "T", "--tool", "X", "--scheme", "jcs"},
		{"--task", "T\xed\xa0\x80", "--tool", "X", "--scheme", "jcs"},
	} {
		out, stderr, bcode := runEnv(strings.Join(lines, "\n")+"\n", append([]string{"key", "--batch"}, flags...)...)
		got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(got) != len(lines) {
			t.Fatalf("%q: batch wrote %d lines, want %d:\n%s%s", flags, len(got), len(lines), out, stderr)
		}
		for i, line := range lines {
			want, werr, code := runEnv(line, append([]string{"key"}, flags...)...)
			if code != 0 {
				want = ""
				if bcode == 0 {
					t.Errorf("%q, line %d: the single run fails (%s) but the batch succeeds", flags, i+1, strings.TrimSpace(werr))
				}
			}
			if got[i]+"\n" != want && !(code != 0 && got[i] == "") {
				t.Errorf("%q, line %d %q: batch %q, single %q (exit %d, %s)", flags, i+1, line, got[i], want, code, strings.TrimSpace(werr))
			}
			if code == 0 && strings.Contains(werr, "looks like") && !strings.Contains(stderr, fmt.Sprintf("<stdin>:%d: the line looks like", i+1)) && !batchShapeCovers(stderr, werr, i+1) {
				t.Errorf("%q, line %d: the single run warns (%s), the batch does not:\n%s", flags, i+1, strings.TrimSpace(werr), stderr)
			}
		}
	}
}

// batchShapeCovers reports whether a batch's standard error warns of
// line n's shape (as named in single, a single run's warning) in a warning
// that counts several lines: "<stdin>:F: this line and M more look like
// WHAT," with F <= n, and M more lines of that shape at most after it.
func batchShapeCovers(batch, single string, n int) bool {
	m := regexp.MustCompile(`looks like (.*?), read as bare arguments`).FindStringSubmatch(single)
	if m == nil {
		return false
	}
	re := regexp.MustCompile(`<stdin>:(\d+): this line and \d+ more look like ` + regexp.QuoteMeta(m[1]) + `, read as bare arguments`)
	for _, w := range re.FindAllStringSubmatch(batch, -1) {
		if first, _ := strconv.Atoi(w[1]); first <= n {
			return true
		}
	}
	return false
}

// TestLargeObjects keys large documents whose root is an object, mapped
// from files: those whose bulk is one array go to canon's object runs,
// others to the indexed path; the keys must be key --json's (which
// parses), and the envelope warning must be given as for a small input,
// also when the large array is the one it looks into (tool_calls).
func TestLargeObjects(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("[\n")
	for i := 0; b.Len() < 9<<20; i++ {
		fmt.Fprintf(&b, "{\"n\": %d, \"s\": \"é%d\", \"b\": [1.50, true]},\n", i, i)
	}
	b.WriteString("{}\n]")
	arr := b.String()
	openai := `{"id":"c1","type":"function","function":{"name":"x","arguments":"{}"}}`
	dir := t.TempDir()
	for i, c := range []struct {
		doc, warn string
	}{
		{`{"items":` + arr + `}`, ""},
		{`{"next":"n","items":` + arr + `,"count":3,"a":[1]}`, ""},
		{`{"a":` + arr + `,"b":` + arr + `}`, ""}, // two large arrays: the indexed path
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}},"pad":` + arr + `}`, "an MCP tools/call request"},
		{`{"role":"assistant","tool_calls":` + strings.Replace(arr, "{}\n]", openai+"\n]", 1) + `}`, "an OpenAI assistant message with tool_calls"},
		{`{"role":"assistant","content":` + arr + `}`, ""},
	} {
		path := filepath.Join(dir, fmt.Sprintf("obj%d.json", i))
		if err := os.WriteFile(path, []byte(c.doc), 0o644); err != nil {
			t.Fatal(err)
		}
		key, stderr, code := clitest.Run(t, "", "key", "--task", "t", "--tool", "x", path)
		asJSON, _, code2 := clitest.Run(t, "", "key", "--json", "--task", "t", "--tool", "x", path)
		if code != 0 || code2 != 0 || len(key) != 65 || !strings.Contains(asJSON, `"key":"`+strings.TrimSpace(key)+`"`) {
			t.Fatalf("case %d: key %q (exit %d, %s); --json %.100q (exit %d)", i, key, code, stderr, asJSON, code2)
		}
		if c.warn == "" && stderr != "" || c.warn != "" && !strings.Contains(stderr, "the input looks like "+c.warn) {
			t.Errorf("case %d: stderr %q, want a warning about %q", i, stderr, c.warn)
		}
	}
}
