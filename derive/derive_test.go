package derive

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/canon"
)

func mustParse(t testing.TB, text string, s canon.Scheme) canon.Node {
	t.Helper()
	doc, err := canon.Parse([]byte(text), s)
	if err != nil {
		t.Fatalf("parse %q: %v", text, err)
	}
	return doc.Root()
}

func TestValidate(t *testing.T) {
	args := mustParse(t, `{}`, canon.JS)
	for _, tc := range []struct {
		task, tool string
		want       error
	}{
		{"t1", "pay", nil},
		{"タスク", "送信", nil},
		{"😀", "\U0010ffff", nil},
		{" ", "\x00", nil}, // odd but scoped: only emptiness and encoding are refused
		{"", "pay", ErrEmptyTask},
		{"", "", ErrEmptyTask},
		{"t1", "", ErrEmptyTool},
		{"\xff", "pay", ErrInvalidUTF8},
		{"t1", "pa\xc3", ErrInvalidUTF8},
		// A lone surrogate as canon decodes \ud800 (WTF-8): the js harness
		// hashes such a string (as "\ud800"), so only jcs refuses it.
		{"\xed\xa0\x80", "pay", nil},
		{"t1", "x\xed\xbf\xbf", nil},
		{"\xed\xa0", "pay", ErrInvalidUTF8}, // truncated
	} {
		err := Call{Task: tc.task, Tool: tc.tool, Args: args}.Validate()
		if !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
			t.Errorf("Validate(%q, %q) = %v, want %v", tc.task, tc.tool, err, tc.want)
		}
	}
	jcsArgs := mustParse(t, `{}`, canon.JCS)
	if err := (Call{Task: "\xed\xa0\x80", Tool: "pay", Args: jcsArgs}).Validate(); !errors.Is(err, ErrLoneSurrogate) {
		t.Errorf("jcs: Validate of a lone surrogate = %v, want %v", err, ErrLoneSurrogate)
	}
	if err := (Call{Task: "t1", Tool: "pay", Args: jcsArgs}).Validate(); err != nil {
		t.Errorf("jcs: Validate = %v", err)
	}
	// The key of a lone-surrogate task id is the js harness's: node computed
	// sha256 of JSON.stringify(["\ud800x","pay",1]).
	one := mustParse(t, `1`, canon.JS)
	if got := fmt.Sprintf("%x", (Call{Task: "\xed\xa0\x80x", Tool: "pay", Args: one}).Key()); got != "cd259dd70da76028a81288554e7a601b9b7da8dc49d8db07597170e744d3c6a8" {
		t.Errorf("lone-surrogate task key %s", got)
	}
}

// The hashed text of one call, written out by hand from the reference
// harness's definition: JSON.stringify of ["t1","pay",args], members sorted.
const (
	sampleArgs = `{"b":1,"a":"\u00e9"}`
	sampleText = `["t1","pay",{"a":"é","b":1}]`
)

func TestAppendText(t *testing.T) {
	for _, tc := range []struct {
		task, tool, args string
		want             string
	}{
		{"t1", "pay", sampleArgs, sampleText},
		{"a", "bc", "null", `["a","bc",null]`},
		{"ab", "c", " [ 1.0 , -0 ] ", `["ab","c",[1,0]]`},
		// task and tool are escaped as JSON.stringify escapes: only '"',
		// '\\' and controls; U+2028, U+007F and '/' stay raw
		{"a\"b\\c\x01\n", "x/\u2028\x7f", "{}", "[\"a\\\"b\\\\c\\u0001\\n\",\"x/\u2028\x7f\",{}]"},
		{"タスク", "🛠️", `"\ud800"`, `["タスク","🛠️","\ud800"]`},
	} {
		c := Call{Task: tc.task, Tool: tc.tool, Args: mustParse(t, tc.args, canon.JS)}
		if got := string(c.AppendText(nil)); got != tc.want {
			t.Errorf("AppendText(%q, %q, %s) = %q, want %q", tc.task, tc.tool, tc.args, got, tc.want)
		}
		// AppendText appends: what dst held stays in front
		if got := string(c.AppendText([]byte("prefix:"))); got != "prefix:"+tc.want {
			t.Errorf("AppendText with a prefix = %q", got)
		}
	}
}

// TestKeyIsHashOfText checks Key == sha256(AppendText) and WriteText ==
// AppendText on generated documents, under both schemes.
func TestKeyIsHashOfText(t *testing.T) {
	t.Parallel()
	n := 0
	for _, c := range diffCorpus(42, 2000) {
		for _, s := range []canon.Scheme{canon.JS, canon.JCS} {
			doc, err := canon.Parse([]byte(c.Text), s)
			if err != nil {
				continue
			}
			call := Call{Task: c.Task, Tool: c.Tool, Args: doc.Root()}
			text := call.AppendText(nil)
			if k := call.Key(); k != sha256.Sum256(text) {
				t.Fatalf("%s: Key() = %x, sha256(AppendText) = %x\n  args %q", s, k, sha256.Sum256(text), c.Text)
			}
			var buf bytes.Buffer
			if err := call.WriteText(&buf); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), text) {
				t.Fatalf("%s: WriteText = %q, AppendText = %q", s, buf.Bytes(), text)
			}
			n++
		}
	}
	if n < 2000 {
		t.Fatalf("only %d calls checked", n)
	}
	t.Logf("%d calls: Key == sha256(AppendText) and WriteText == AppendText", n)
}

// TestKeyScoping checks what each input of the key is for: the task scopes
// it, member order does not matter, and hashing an array keeps ("a","bc")
// apart from ("ab","c").
func TestKeyScoping(t *testing.T) {
	key := func(task, tool, args string) [32]byte {
		return Call{Task: task, Tool: tool, Args: mustParse(t, args, canon.JS)}.Key()
	}
	base := key("t1", "pay", `{"a":1,"b":2}`)
	if key("t1", "pay", `{"b":2,"a":1}`) != base {
		t.Error("member order changed the key")
	}
	if key("t1", "pay", " {\n\"a\" : 1.0, \"b\":2e0}") != base {
		t.Error("whitespace or number spelling changed the key")
	}
	for _, other := range [][3]string{
		{"t2", "pay", `{"a":1,"b":2}`},
		{"t1", "refund", `{"a":1,"b":2}`},
		{"t1", "pay", `{"a":1,"b":3}`},
		{"t1", "pay", `{"a":1,"b":"2"}`},
	} {
		if key(other[0], other[1], other[2]) == base {
			t.Errorf("%q gives the same key as t1/pay", other)
		}
	}
	if key("a", "bc", "null") == key("ab", "c", "null") {
		t.Error(`("a","bc") and ("ab","c") collide`)
	}
}

func TestHMAC(t *testing.T) {
	c := Call{Task: "t1", Tool: "pay", Args: mustParse(t, sampleArgs, canon.JS)}
	// Keys from RFC 4231 §4.2, §4.3 and §4.7: shorter than, and longer
	// than, the SHA-256 block size.
	secrets := [][]byte{
		bytes.Repeat([]byte{0x0b}, 20),
		[]byte("Jefe"),
		bytes.Repeat([]byte{0xaa}, 131),
		{},
	}
	seen := map[[32]byte]bool{c.Key(): true}
	for _, secret := range secrets {
		m := hmac.New(sha256.New, secret)
		io.WriteString(m, sampleText)
		want := m.Sum(nil)
		got := c.HMAC(secret)
		if !hmac.Equal(got[:], want) {
			t.Errorf("HMAC(%x) = %x, want %x", secret, got, want)
		}
		if seen[got] {
			t.Errorf("HMAC(%x) = %x repeats another key", secret, got)
		}
		seen[got] = true
	}
	// computed by Node: crypto.createHmac("sha256", "Jefe")
	//   .update('["t1","pay",{"a":"é","b":1}]').digest("hex")
	const nodeJefe = "a51fcf86fa6eee78dd0f6714d8e7b21794cdf9c5d0094137b04b3633b628bab9"
	if got := c.HMAC([]byte("Jefe")); hex.EncodeToString(got[:]) != nodeJefe {
		t.Errorf("HMAC(Jefe) = %x, node says %s", got, nodeJefe)
	}
}

// failWriter accepts n bytes, then fails.
type failWriter struct{ n int }

var errWrite = errors.New("disk full")

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) <= w.n {
		w.n -= len(p)
		return len(p), nil
	}
	k := w.n
	w.n = 0
	return k, errWrite
}

func TestWriteTextError(t *testing.T) {
	c := Call{Task: "t1", Tool: "pay", Args: mustParse(t, `{"a":[1,2,3],"b":"`+strings.Repeat("x", 100<<10)+`"}`, canon.JS)}
	total := len(c.AppendText(nil))
	// fail in the prefix, in the args, and at the closing bracket
	for _, n := range []int{0, 3, 12, 13, 20, 64 << 10, total - 1} {
		if err := c.WriteText(&failWriter{n: n}); !errors.Is(err, errWrite) {
			t.Errorf("WriteText to a writer failing after %d of %d bytes: %v, want %v", n, total, err, errWrite)
		}
	}
	if err := c.WriteText(&failWriter{n: total}); err != nil {
		t.Errorf("WriteText with room for all %d bytes: %v", total, err)
	}
}

// recorder keeps what is written and the size of the largest write.
type recorder struct {
	bytes.Buffer
	writes, largest int
}

func (r *recorder) Write(p []byte) (int, error) {
	r.writes++
	r.largest = max(r.largest, len(p))
	return r.Buffer.Write(p)
}

// largeDoc returns a document of about size bytes: many small members with
// escapes, non-ASCII names, array-index names and numbers to reformat.
func largeDoc(size int) []byte {
	var b bytes.Buffer
	b.WriteString("[\n")
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `{"z":%d.50,"%d":"n\u00e9 %d \"q\" \ud83d\ude00 é","a":[1e21,1E-7,-0,%de-3],"名前":{"y":true,"x":null,"10":"ten","9":"nine"},"a":"last"}`, i, i%50, i, i)
	}
	b.WriteString("\n]")
	return b.Bytes()
}

// TestStreamingLargeDoc checks that streaming a large call into the hash
// and to a writer gives the in-memory text, without ever holding it whole.
func TestStreamingLargeDoc(t *testing.T) {
	t.Parallel()
	src := largeDoc(8 << 20)
	c := Call{Task: "task-big", Tool: "bulk_import", Args: mustParse(t, string(src), canon.JS)}
	text := c.AppendText(nil)
	var r recorder
	if err := c.WriteText(&r); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(r.Bytes(), text) {
		t.Fatalf("WriteText differs from AppendText at byte %d of %d", firstDiff(r.Bytes(), text), len(text))
	}
	if r.largest >= len(text)/2 {
		t.Errorf("WriteText wrote %d of %d bytes in one call: not streamed", r.largest, len(text))
	}
	if k := c.Key(); k != sha256.Sum256(text) {
		t.Fatalf("streamed Key() = %x, sha256 of the in-memory text = %x", k, sha256.Sum256(text))
	}
	secret := []byte("Jefe")
	m := hmac.New(sha256.New, secret)
	m.Write(text)
	if got := c.HMAC(secret); !hmac.Equal(got[:], m.Sum(nil)) {
		t.Errorf("streamed HMAC() = %x, HMAC of the in-memory text = %x", got, m.Sum(nil))
	}
	t.Logf("%d-byte document, %d-byte canonical text, written in %d writes of at most %d bytes", len(src), len(text), r.writes, r.largest)

	// and the reference harness agrees, when it is there
	node, err := exec.LookPath("node")
	if err != nil {
		t.Logf("node not found (%v): not compared with the reference harness", err)
		return
	}
	res := runNode(t, node, "lines", []diffCase{{Task: c.Task, Tool: c.Tool, Text: string(src)}})[0]
	if k := c.Key(); res.Key != hex.EncodeToString(k[:]) {
		t.Errorf("key %x, the reference harness says %s (%s)", k, res.Key, res.Error)
	}
}

// TestKeyAroundPipelineSize checks Key and HMAC for arguments just below,
// at and just above the size from which hashing runs in its own goroutine,
// with values whose canonical form is shorter or longer than their source.
func TestKeyAroundPipelineSize(t *testing.T) {
	for _, n := range []int{pipelineMin - 1, pipelineMin, pipelineMin + 1, 3*pipelineMin + 7} {
		for _, mk := range []func(n int) string{
			func(n int) string {
				return `"` + strings.Repeat("\\u00e9", (n-2)/6) + strings.Repeat("x", (n-2)%6) + `"`
			},
			func(n int) string {
				body := strings.Repeat(`{"b":1.0e0,"a":"\/"},`, n/24)
				return "[" + body + strings.Repeat(" ", n-3-len(body)) + "0]"
			},
		} {
			src := mk(n)
			c := Call{Task: "t", Tool: "x", Args: mustParse(t, src, canon.JS)}
			if got := c.Args.End() - c.Args.Offset(); got != n {
				t.Fatalf("test bug: args of %d bytes, want %d", got, n)
			}
			text := c.AppendText(nil)
			if k := c.Key(); k != sha256.Sum256(text) {
				t.Errorf("%d-byte args: Key() = %x, sha256(AppendText) = %x", n, k, sha256.Sum256(text))
			}
			m := hmac.New(sha256.New, []byte("k"))
			m.Write(text)
			if got := c.HMAC([]byte("k")); !hmac.Equal(got[:], m.Sum(nil)) {
				t.Errorf("%d-byte args: HMAC differs from HMAC of AppendText", n)
			}
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestArgsSubNode: the sub-documents of a call do not depend on where Args came from: a
// node inside a larger document gives the same key as the same value
// parsed on its own.
func TestArgsSubNode(t *testing.T) {
	outer := mustParse(t, `{"call":{"b":[1.0,"\u00e9"],"a":{"10":1,"9":2}},"other":1}`, canon.JS)
	inner, ok := outer.Get("call")
	if !ok {
		t.Fatal(`no "call" member`)
	}
	alone := mustParse(t, `{"a":{"9":2,"10":1},"b":[1,"é"]}`, canon.JS)
	a := Call{Task: "t", Tool: "x", Args: inner}
	b := Call{Task: "t", Tool: "x", Args: alone}
	if a.Key() != b.Key() {
		t.Errorf("sub-node text %q, alone %q", a.AppendText(nil), b.AppendText(nil))
	}
	if want := `["t","x",{"a":{"9":2,"10":1},"b":[1,"é"]}]`; string(a.AppendText(nil)) != want {
		t.Errorf("text %q, want %q", a.AppendText(nil), want)
	}
}

// TestTextMatchesCall checks that Text, which canonicalizes in one pass,
// gives Call's key and HMAC for every document of the differential
// corpus, under both schemes, and the same error where Call's path fails;
// and the same for large documents, which take the parallel runs.
func TestTextMatchesCall(t *testing.T) {
	t.Parallel()
	cases := defaultCorpus()
	big := []diffCase{
		{Task: "t", Tool: "bulk", Text: string(largeDoc(canon.ParallelMin + 1000))},
		{Task: "t", Tool: "bulk", Text: string(largeDoc(3*pipelineMin + 7))},
		{Task: "t", Tool: "bulk", Text: strings.Replace(string(largeDoc(canon.ParallelMin+1000)), "\n", "\n  ", 1)},
		{Task: "t", Tool: "bulk", Text: string(largeDoc(canon.ParallelMin+1000)) + ","},
		{Task: "t", Tool: "bulk", Text: strings.Replace(string(largeDoc(canon.ParallelMin+1000)), "true", "ture", 1)},
		// blank lines, and nested lines at the root's indentation that
		// mislead the guessed run ends
		{Task: "t", Tool: "bulk", Text: strings.Replace(string(largeDoc(canon.ParallelMin+1000)), ",\n{", ",\n\n{", 1000)},
		{Task: "t", Tool: "bulk", Text: strings.ReplaceAll(string(largeDoc(canon.ParallelMin+1000)), `"a":[1e21,`, "\"a\":[\n1e21,\n")},
		// objects around a large array (canon's object runs), one of them
		// with a later array too long for the backward scan (a rewind)
		{Task: "t", Tool: "bulk", Text: `{"items":` + string(largeDoc(canon.ParallelMin+1000)) + "}\n"},
		{Task: "t", Tool: "bulk", Text: `{"z":1,"items":` + string(largeDoc(canon.ParallelMin+1000)) + `,"count":2,"a":{"b":[3]}}`},
		{Task: "t", Tool: "bulk", Text: `{"items":` + string(largeDoc(canon.ParallelMin+1000)) + `,"a":[` + strings.Repeat("1,", 70<<10) + `1]}`},
		{Task: "t", Tool: "bulk", Text: `{"items":` + strings.Replace(string(largeDoc(canon.ParallelMin+1000)), "true", "ture", 1) + `}`},
	}
	cases = append(cases, big...)
	secret := []byte("k")
	compared := 0
	for i, c := range cases {
		for _, s := range []canon.Scheme{canon.JS, canon.JCS} {
			var want [32]byte
			var wantMAC [32]byte
			doc, err := canon.Parse([]byte(c.Text), s)
			if err == nil {
				call := Call{Task: c.Task, Tool: c.Tool, Args: doc.Root()}
				if err = call.Validate(); err == nil {
					want, wantMAC = call.Key(), call.HMAC(secret)
				}
			}
			text := Text{Task: c.Task, Tool: c.Tool, Args: []byte(c.Text), Scheme: s}
			got, gerr := text.Key()
			gotMAC, merr := text.HMAC(secret)
			switch {
			case (err == nil) != (gerr == nil) || (err == nil) != (merr == nil):
				t.Fatalf("case %d, %s: Call's path says %v, Text.Key %v, Text.HMAC %v\n%.200q", i, s, err, gerr, merr, c.Text)
			case err != nil && (err.Error() != gerr.Error() || err.Error() != merr.Error()):
				t.Fatalf("case %d, %s: Call's path fails with %v, Text with %v / %v", i, s, err, gerr, merr)
			case err == nil && (got != want || gotMAC != wantMAC):
				t.Fatalf("case %d, %s: Text key %x, Call key %x\n%.200q", i, s, got, want, c.Text)
			}
			compared++
		}
	}
	t.Logf("%d documents, %d comparisons", len(cases), compared)
}

// TestKeyerMatchesCall checks that a Keyer, reused from call to call as a
// batch reuses it, gives Call's key and HMAC for every valid document of
// the differential corpus under both schemes: KeyText from the arguments'
// JSON text, Key from their canonical text, and both fail where Parse
// does.
func TestKeyerMatchesCall(t *testing.T) {
	t.Parallel()
	secret := []byte("k")
	keyer, macer := NewKeyer(nil), NewKeyer(secret)
	var pass canon.Pass
	compared := 0
	for i, c := range defaultCorpus() {
		for _, s := range []canon.Scheme{canon.JS, canon.JCS} {
			task, tool := canon.AppendQuoted(nil, c.Task), canon.AppendQuoted(nil, c.Tool)
			doc, err := canon.Parse([]byte(c.Text), s)
			_, ok := keyer.KeyText(task, tool, &pass, []byte(c.Text), s)
			if ok != (err == nil) {
				t.Fatalf("case %d, %s: Parse says %v, KeyText ok %v\n%.200q", i, s, err, ok, c.Text)
			}
			if err != nil {
				continue
			}
			call := Call{Task: c.Task, Tool: c.Tool, Args: doc.Root()}
			want, wantMAC := call.Key(), call.HMAC(secret)
			args := doc.Root().Append(nil)
			got, _ := keyer.KeyText(task, tool, &pass, []byte(c.Text), s)
			gotMAC, _ := macer.KeyText(task, tool, &pass, []byte(c.Text), s)
			if got != want || gotMAC != wantMAC || keyer.Key(task, tool, args) != want || macer.Key(task, tool, args) != wantMAC {
				t.Fatalf("case %d, %s: Keyer's keys differ from Call's %x\n%.200q", i, s, want, c.Text)
			}
			compared++
		}
	}
	if compared == 0 {
		t.Fatal("no valid documents compared")
	}
	t.Logf("%d comparisons", compared)
}
