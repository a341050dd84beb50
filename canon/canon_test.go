package canon_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/canon"
)

// mustParse parses src under s or stops the test.
func mustParse(t *testing.T, src string, s canon.Scheme) *canon.Document {
	t.Helper()
	d, err := canon.Parse([]byte(src), s)
	if err != nil {
		t.Fatalf("%s: Parse(%.60q): %v", s, src, err)
	}
	return d
}

// canonical returns the canonical form of src under s, or stops the test.
func canonical(t *testing.T, src string, s canon.Scheme) string {
	t.Helper()
	return string(mustParse(t, src, s).Append(nil))
}

// parseErr parses src under s and returns the *Error, or stops the test.
func parseErr(t *testing.T, src string, s canon.Scheme) *canon.Error {
	t.Helper()
	d, err := canon.Parse([]byte(src), s)
	var e *canon.Error
	if !errors.As(err, &e) {
		if err == nil {
			t.Fatalf("%s: Parse(%.60q) succeeded: %.60s; want an error", s, src, d.Append(nil))
		}
		t.Fatalf("%s: Parse(%.60q): %T %v; want *canon.Error", s, src, err, err)
	}
	return e
}

var schemes = []canon.Scheme{canon.JS, canon.JCS}

// TestStringEscaping: string escaping: only '"', '\\' and U+0000–U+001F are escaped, with the
// short forms \b \t \n \f \r and lower-case \u00xx otherwise; everything
// else is written raw. Expected values are JSON.stringify(JSON.parse(src))
// on Node, and hold for both schemes.
func TestStringEscaping(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{`"\u0000\u0001\u0002\u0003\u0004\u0005\u0006\u0007\u0008\u0009\u000a\u000b\u000c\u000d\u000e\u000f\u0010\u0011\u0012\u0013\u0014\u0015\u0016\u0017\u0018\u0019\u001a\u001b\u001c\u001d\u001e\u001f"`,
			`"\u0000\u0001\u0002\u0003\u0004\u0005\u0006\u0007\b\t\n\u000b\f\r\u000e\u000f\u0010\u0011\u0012\u0013\u0014\u0015\u0016\u0017\u0018\u0019\u001a\u001b\u001c\u001d\u001e\u001f"`},
		{`"\u001A\u001F\u000B"`, `"\u001a\u001f\u000b"`},
		{`"\b\f\n\r\t"`, `"\b\f\n\r\t"`},
		{`"\u0008\u000C\u000A\u000D\u0009"`, `"\b\f\n\r\t"`},
		{`"\/"`, `"/"`},
		{`"\u002F"`, `"/"`},
		{`"a/b"`, `"a/b"`},
		{`"</script>"`, `"</script>"`},
		{`"\""`, `"\""`},
		{`"\u0022"`, `"\""`},
		{`"\\"`, `"\\"`},
		{`"\u005C"`, `"\\"`},
		{`"\u007f"`, "\"\x7f\""},
		{"\"\x7f\"", "\"\x7f\""},
		{`"\u0080"`, "\"\u0080\""},
		{`"\u2028\u2029"`, "\"\u2028\u2029\""},
		{"\"\u2028\"", "\"\u2028\""},
		{`"\u00E9"`, `"é"`},
		{`"\u0061\u0062"`, `"ab"`},
		{`"\uD83D\uDE00"`, `"😀"`},
		{`"\ud83d\ude00x"`, `"😀x"`},
		{`"\uDBFF\uDFFF"`, "\"\U0010ffff\""},
		{`"\uFFFF\uFEFF"`, "\"\uffff\ufeff\""},
		{"\"\ufeff\"", "\"\ufeff\""},
		{`"\\u0041"`, `"\\u0041"`},
		{`"a\"b\\c\/d\u0041"`, `"a\"b\\c/dA"`},
		{`""`, `""`},
		{`"\u0000"`, `"\u0000"`},
	} {
		for _, s := range schemes {
			// As a value and as a member name: names go through the arena
			// when escaped.
			if got := canonical(t, c.src, s); got != c.want {
				t.Errorf("%s: %s → %s, want %s", s, c.src, got, c.want)
			}
			obj := "{" + c.src + ":" + c.src + "}"
			if got, want := canonical(t, obj, s), "{"+c.want+":"+c.want+"}"; got != want {
				t.Errorf("%s: %s → %s, want %s", s, obj, got, want)
			}
		}
	}
}

func TestAppendQuoted(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", `""`},
		{"plain", `"plain"`},
		{"\x00\x01\x1f", `"\u0000\u0001\u001f"`},
		{"\b\t\n\f\r", `"\b\t\n\f\r"`},
		{`"\`, `"\"\\"`},
		{"/\x7f\u2028é😀", "\"/\x7f\u2028é😀\""},
		{"\xed\xa0\x80", `"\ud800"`},     // WTF-8 lone high surrogate
		{"a\xed\xbf\xbfb", `"a\udfffb"`}, // WTF-8 lone low surrogate
		{"\xed\x9f\xbf", "\"\ud7ff\""},   // U+D7FF is not a surrogate
		{"\xed\xa0\xbd😀", `"\ud83d😀"`},   // lone high, then a real pair
		{"x\xed\xb8\x80\x1f", `"x\ude00\u001f"`},
	} {
		if got := string(canon.AppendQuoted([]byte("<"), c.in)); got != "<"+c.want {
			t.Errorf("AppendQuoted(%q) = %s, want <%s", c.in, got, c.want)
		}
	}
}

// TestLoneSurrogates: lone surrogates: js keeps them (as JSON.parse does) and writes them as
// lower-case \udxxx (as JSON.stringify does); jcs rejects them, pointing at
// the escape. Expected js output computed on Node.
func TestLoneSurrogates(t *testing.T) {
	for _, c := range []struct {
		src, js string
		errOff  int // offset of the offending escape in src
	}{
		{`"\uDEAD"`, `"\udead"`, 1},
		{`"\ud800"`, `"\ud800"`, 1},
		{`"\ud800\ud800"`, `"\ud800\ud800"`, 1},
		{`"\udc00\ud800"`, `"\udc00\ud800"`, 1},
		{`"\ud83d\ude00\ud83d"`, `"😀\ud83d"`, 13},
		{`"x\uDBFFy"`, `"x\udbffy"`, 2},
		{`"\uD800\u0041"`, `"\ud800A"`, 1},
		{`"\ud800\\udc00"`, `"\ud800\\udc00"`, 1},
		{`"😀\uDFFF"`, `"😀\udfff"`, 5},
	} {
		if got := canonical(t, c.src, canon.JS); got != c.js {
			t.Errorf("js: %s → %s, want %s", c.src, got, c.js)
		}
		d := mustParse(t, "["+c.src+"]", canon.JS)
		if q := canon.AppendQuoted(nil, d.Root().Elements()[0].Text()); string(q) != c.js {
			t.Errorf("js: AppendQuoted(Text()) of %s = %s, want %s", c.src, q, c.js)
		}
		for _, wrap := range []struct {
			pre, post, ptr string
		}{{"", "", ""}, {`{"k":[`, `]}`, "/k/0"}, {"{", `:1}`, ""}} {
			src := wrap.pre + c.src + wrap.post
			e := parseErr(t, src, canon.JCS)
			if e.Offset != len(wrap.pre)+c.errOff || e.Pointer != wrap.ptr || !strings.Contains(e.Msg, "lone surrogate") {
				t.Errorf("jcs: %s: error %+v; want offset %d, pointer %q, a lone-surrogate message", src, e, len(wrap.pre)+c.errOff, wrap.ptr)
			}
		}
	}
	// The decoded text keeps a lone surrogate as its own three bytes (WTF-8).
	d := mustParse(t, `{"\ud800":"\udfff"}`, canon.JS)
	m := d.Root().Members()[0]
	if m.Name != "\xed\xa0\x80" || m.Value.Text() != "\xed\xbf\xbf" {
		t.Errorf("Name %q, Text %q; want WTF-8", m.Name, m.Value.Text())
	}
	if v, ok := d.Root().Get("\xed\xa0\x80"); !ok || v.Offset() != 10 {
		t.Errorf("Get(lone surrogate) = %v, %v", v.Offset(), ok)
	}
}

// TestDuplicates: duplicates: js keeps the last value (JSON.parse) and reports the dropped
// ones; jcs rejects the second occurrence.
func TestDuplicates(t *testing.T) {
	for _, c := range []struct {
		src, js string
		dups    []canon.Duplicate
		jcsOff  int
		jcsPtr  string
		jcsHint string
	}{
		{
			src:    `{"a":1,"b":2,"a":3}`,
			js:     `{"a":3,"b":2}`,
			dups:   []canon.Duplicate{{Name: "a", Dropped: 1, Kept: 13}},
			jcsOff: 13, jcsHint: "first defined at line 1, column 2",
		},
		{
			src:    `{"a":1,"a":2,"a":3}`,
			js:     `{"a":3}`,
			dups:   []canon.Duplicate{{"a", 1, 7}, {"a", 7, 13}},
			jcsOff: 7, jcsHint: "first defined at line 1, column 2",
		},
		{
			// The same name spelled with an escape.
			src:    `{"a":1,"\u0061":2}`,
			js:     `{"a":2}`,
			dups:   []canon.Duplicate{{"a", 1, 7}},
			jcsOff: 7, jcsHint: "first defined at line 1, column 2",
		},
		{
			src:    "{\"1\":1,\n  \"1\":[2]}",
			js:     `{"1":[2]}`,
			dups:   []canon.Duplicate{{"1", 1, 10}},
			jcsOff: 10, jcsHint: "first defined at line 1, column 2",
		},
		{
			// Inner objects close first.
			src:    `{"x":{"é":1,"é":2},"x":{"q":[{"z":0,"z":1}]}}`,
			js:     `{"x":{"q":[{"z":1}]}}`,
			dups:   []canon.Duplicate{{"é", 6, 13}, {"z", 32, 38}, {"x", 1, 21}},
			jcsOff: 13, jcsPtr: "/x", jcsHint: "first defined at line 1, column 7",
		},
		{
			src:    "[{\"\\ud800\":1,\"\\uD800\":2}]",
			js:     `[{"\ud800":2}]`,
			dups:   []canon.Duplicate{{"\xed\xa0\x80", 2, 13}},
			jcsOff: 3, jcsPtr: "/0", // jcs: the lone surrogate comes first
		},
	} {
		d := mustParse(t, c.src, canon.JS)
		if got := string(d.Append(nil)); got != c.js {
			t.Errorf("js: %s → %s, want %s", c.src, got, c.js)
		}
		got := d.Duplicates()
		if len(got) != len(c.dups) {
			t.Errorf("js: %s: Duplicates() = %+v, want %+v", c.src, got, c.dups)
		} else {
			for i := range got {
				if got[i] != c.dups[i] {
					t.Errorf("js: %s: Duplicates()[%d] = %+v, want %+v", c.src, i, got[i], c.dups[i])
				}
			}
		}
		// Members and Get see the kept value.
		if d.Root().Kind() == canon.Object {
			for _, m := range d.Root().Members() {
				v, ok := d.Root().Get(m.Name)
				if !ok || v.Offset() != m.Value.Offset() {
					t.Errorf("js: %s: Get(%q) disagrees with Members", c.src, m.Name)
				}
			}
		}

		e := parseErr(t, c.src, canon.JCS)
		if e.Offset != c.jcsOff || e.Pointer != c.jcsPtr || !strings.Contains(e.Hint, c.jcsHint) {
			t.Errorf("jcs: %s: error %+v; want offset %d, pointer %q, hint %q", c.src, e, c.jcsOff, c.jcsPtr, c.jcsHint)
		}
		if c.jcsHint != "" && !strings.Contains(e.Msg, "duplicate member name") {
			t.Errorf("jcs: %s: message %q", c.src, e.Msg)
		}
	}
	if d := mustParse(t, `{"a":1,"b":{"a":2}}`, canon.JS); len(d.Duplicates()) != 0 {
		t.Errorf("Duplicates() = %v for an object without duplicates", d.Duplicates())
	}
}

// TestWhitespace: whitespace (space, tab, LF, CR) is allowed around every token and dropped.
func TestWhitespace(t *testing.T) {
	src := " \t\r\n{ \"a\" :\t[ 1 ,\r\n2 , { } , [ ] , \"x y\" ] ,\n\"b\"\r:\rnull } \n\t"
	want := `{"a":[1,2,{},[],"x y"],"b":null}`
	for _, s := range schemes {
		if got := canonical(t, src, s); got != want {
			t.Errorf("%s: %q → %s, want %s", s, src, got, want)
		}
	}
	for _, v := range []string{"true", "false", "null", "0", `""`, "[]", "{}"} {
		for _, s := range schemes {
			if got := canonical(t, "\n "+v+"\r\n", s); got != v {
				t.Errorf("%s: %q → %s", s, v, got)
			}
		}
	}
}

func nested(depth int, open, close string) string {
	return strings.Repeat(open, depth) + "1" + strings.Repeat(close, depth)
}

func TestNesting(t *testing.T) {
	for _, depth := range []int{1, 1000, canon.MaxDepth} {
		for _, n := range [][2]string{{"[", "]"}, {`{"a":`, "}"}, {`[{"":`, "}]"}} {
			src := nested(depth, n[0], n[1])
			if n[0] == `[{"":` && depth*2 > canon.MaxDepth {
				continue
			}
			for _, s := range schemes {
				d := mustParse(t, src, s)
				if got := string(d.Append(nil)); got != src {
					t.Errorf("%s: depth %d %s: output differs", s, depth, n[0])
				}
				var buf bytes.Buffer
				if _, err := d.WriteTo(&buf); err != nil || buf.String() != src {
					t.Errorf("%s: depth %d %s: WriteTo differs (%v)", s, depth, n[0], err)
				}
			}
		}
	}

	// One level past the limit: an error at the first bracket too many,
	// with the pointer down to it.
	src := nested(canon.MaxDepth+1, "[", "]")
	e := parseErr(t, src, canon.JS)
	if e.Offset != canon.MaxDepth || e.Line != 1 || e.Column != canon.MaxDepth+1 ||
		e.Pointer != strings.Repeat("/0", canon.MaxDepth) || !strings.Contains(e.Msg, "nesting deeper than 10000 levels") {
		t.Errorf("depth %d: %v (offset %d, pointer length %d)", canon.MaxDepth+1, e, e.Offset, len(e.Pointer))
	}

	// A 3,000,000-deep document is an error, not a crash.
	for _, n := range [][2]string{{"[", "]"}, {`{"a":`, "}"}} {
		for _, s := range schemes {
			e := parseErr(t, nested(3000000, n[0], n[1]), s)
			if !strings.Contains(e.Msg, "nesting deeper than") {
				t.Errorf("%s: 3,000,000 × %s: %v", s, n[0], e)
			}
		}
		// Unterminated as well: the depth limit comes first.
		e := parseErr(t, strings.Repeat(n[0], 3000000), canon.JS)
		if !strings.Contains(e.Msg, "nesting deeper than") {
			t.Errorf("3,000,000 × %s, unterminated: %v", n[0], e)
		}
	}

	// ParseDepth with a smaller limit.
	if _, err := canon.ParseDepth([]byte("[[[1]]]"), canon.JS, 3); err != nil {
		t.Errorf("ParseDepth 3 levels, limit 3: %v", err)
	}
	if _, err := canon.ParseDepth([]byte(`[[{"a":1}]]`), canon.JS, 2); err == nil || !strings.Contains(err.Error(), "nesting deeper than 2 levels") {
		t.Errorf("ParseDepth 3 levels, limit 2: %v", err)
	}
}

// TestNodeAPI exercises the accessors on one document.
func TestNodeAPI(t *testing.T) {
	src := `{ "s" : "a\nb" , "n": -1.50e1, "arr" :[ 1, "x", { "k" : true } ,[] ],
 "a/b": {"c~d": null}, "f": false, "dup": 1, "e": {}, "dup": [2], "10": 10, "9": 9 }`
	d := mustParse(t, src, canon.JS)
	if d.Scheme() != canon.JS || string(d.Source()) != src {
		t.Fatal("Scheme or Source")
	}
	root := d.Root()
	if root.Kind() != canon.Object || root.Offset() != 0 || root.End() != len(src) || string(root.Raw()) != src || root.Document() != d {
		t.Fatalf("root: kind %v offset %d end %d", root.Kind(), root.Offset(), root.End())
	}

	var names []string
	for _, m := range root.Members() {
		names = append(names, m.Name)
		if src[m.NameOffset] != '"' || !strings.HasPrefix(src[m.NameOffset+1:], m.Name+`"`) {
			t.Errorf("member %q: NameOffset %d points at %.10q", m.Name, m.NameOffset, src[m.NameOffset:])
		}
	}
	if got := strings.Join(names, ","); got != "9,10,a/b,arr,dup,e,f,n,s" {
		t.Errorf("Members order: %s", got)
	}

	get := func(name string) canon.Node {
		t.Helper()
		n, ok := root.Get(name)
		if !ok {
			t.Fatalf("Get(%q) not found", name)
		}
		return n
	}
	if n := get("s"); n.Kind() != canon.String || n.Text() != "a\nb" || string(n.Raw()) != `"a\nb"` {
		t.Errorf("s: %v %q %q", n.Kind(), n.Text(), n.Raw())
	}
	if n := get("n"); n.Kind() != canon.Number || n.Text() != "-1.50e1" || string(n.Append(nil)) != "-15" {
		t.Errorf("n: %v %q %s", n.Kind(), n.Text(), n.Append(nil))
	}
	if f, ok := get("n").Float(); !ok || f != -15 {
		t.Errorf("n: Float %v %v", f, ok)
	}
	if n := get("dup"); n.Kind() != canon.Array || string(n.Raw()) != "[2]" {
		t.Errorf("dup: last value wins, got %s", n.Raw())
	}
	if n := get("f"); n.Kind() != canon.False || n.Text() != "" || string(n.Raw()) != "false" {
		t.Errorf("f: %v %q", n.Kind(), n.Raw())
	}
	arr := get("arr")
	if string(arr.Raw()) != `[ 1, "x", { "k" : true } ,[] ]` || string(arr.Append(nil)) != `[1,"x",{"k":true},[]]` {
		t.Errorf("arr: Raw %q Append %s", arr.Raw(), arr.Append(nil))
	}
	es := arr.Elements()
	if len(es) != 4 || es[0].Text() != "1" || es[1].Text() != "x" || es[2].Kind() != canon.Object || es[3].Kind() != canon.Array || len(es[3].Elements()) != 0 {
		t.Errorf("arr: Elements %v", es)
	}
	if _, ok := get("e").Get("x"); ok || len(get("e").Members()) != 0 {
		t.Error("e: empty object has members")
	}
	if _, ok := arr.Get("0"); ok || arr.Members() != nil || root.Elements() != nil {
		t.Error("Get/Members on an array or Elements on an object returned something")
	}
	if _, ok := root.Get("missing"); ok {
		t.Error("Get(missing) found something")
	}

	for _, c := range []struct {
		ptr, raw string
	}{
		{"", src},
		{"/s", `"a\nb"`},
		{"/arr/0", "1"},
		{"/arr/2/k", "true"},
		{"/arr/3", "[]"},
		{"/a~1b/c~0d", "null"},
		{"/dup/0", "2"},
		{"/10", "10"},
		{"/e", "{}"},
	} {
		n, ok := root.At(c.ptr)
		if !ok || string(n.Raw()) != c.raw {
			t.Errorf("At(%q) = %q, %v; want %q", c.ptr, n.Raw(), ok, c.raw)
		}
	}
	for _, ptr := range []string{"s", "/nope", "/arr/4", "/arr/01", "/arr/-", "/arr/-1", "/arr/x", "/s/0", "/a/b/c~d", "/arr/0/x", "/e/"} {
		if n, ok := root.At(ptr); ok {
			t.Errorf("At(%q) found %q", ptr, n.Raw())
		}
	}

	// Node.WriteTo equals Node.Append; the document streams the same.
	var buf bytes.Buffer
	if n, err := arr.WriteTo(&buf); err != nil || n != int64(buf.Len()) || buf.String() != string(arr.Append(nil)) {
		t.Errorf("Node.WriteTo: %q, %d, %v", buf.String(), n, err)
	}
	want := `{"9":9,"10":10,"a/b":{"c~d":null},"arr":[1,"x",{"k":true},[]],"dup":[2],"e":{},"f":false,"n":-15,"s":"a\nb"}`
	if got := string(d.Append([]byte("<"))); got != "<"+want {
		t.Errorf("Append: %s", got)
	}
}

// TestWriteToLarge checks that streaming output (flushed in chunks) equals
// Append on a document far larger than the writer's buffer.
func TestWriteToLarge(t *testing.T) {
	var b strings.Builder
	b.WriteString("[")
	for i := 0; i < 20000; i++ {
		if i > 0 {
			b.WriteString(" , ")
		}
		b.WriteString(`{ "z":"\u00e9\/x", "a": [1.50, -0, 1e400] }`)
	}
	b.WriteString("]")
	d := mustParse(t, b.String(), canon.JS)
	var buf bytes.Buffer
	n, err := d.WriteTo(&buf)
	want := d.Append(nil)
	if err != nil || n != int64(len(want)) || !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("WriteTo: %d bytes, %v; Append %d bytes", n, err, len(want))
	}
	if !strings.HasPrefix(string(want), `[{"a":[1.5,0,null],"z":"é/x"},`) {
		t.Errorf("unexpected output %.60s", want)
	}
	// A failing writer's error is returned.
	if _, err := d.WriteTo(failWriter{}); err == nil {
		t.Error("WriteTo ignored a write error")
	}
}

type failWriter struct{}

func (failWriter) Write(p []byte) (int, error) { return 0, errors.New("disk full") }

func TestSchemeNames(t *testing.T) {
	for _, s := range schemes {
		p, err := canon.ParseScheme(s.String())
		if err != nil || p != s {
			t.Errorf("ParseScheme(%q) = %v, %v", s.String(), p, err)
		}
	}
	if _, err := canon.ParseScheme("JCS"); err == nil {
		t.Error("ParseScheme accepted JCS")
	}
	if canon.JS.String() != "js" || canon.JCS.String() != "jcs" {
		t.Error("scheme names")
	}
}

func TestPointerToken(t *testing.T) {
	for in, want := range map[string]string{"a": "a", "a/b": "a~1b", "~": "~0", "~1/": "~01~1", "": ""} {
		if got := canon.PointerToken(in); got != want {
			t.Errorf("PointerToken(%q) = %q, want %q", in, got, want)
		}
	}
}

// bigDoc builds a document of at least size bytes from genDoc values, as
// the members of a root object (obj) or the elements of a root array. Each
// value is kept only if keep accepts it. Under obj, the names dup0 … dup9
// appear both near the start and near the end, so that they repeat across
// any split of the root's children.
func bigDoc(r *rand.Rand, size int, obj bool, keep func(v []byte) bool) []byte {
	var b bytes.Buffer
	open, close := byte('['), byte(']')
	if obj {
		open, close = '{', '}'
	}
	b.WriteByte(open)
	// A pool of accepted values, drawn from at random.
	var pool [][]byte
	seed := make([]byte, 64)
	for len(pool) < 3000 {
		for j := range seed {
			seed[j] = byte(r.Uint32())
		}
		if v := genDoc(seed); keep(v) {
			pool = append(pool, v)
		}
	}
	for i := 0; b.Len() < size; i++ {
		v := pool[r.IntN(len(pool))]
		if i > 0 {
			b.WriteString(",\n")
		}
		if obj {
			switch {
			case i < 10:
				fmt.Fprintf(&b, `"dup%d":`, i)
			case b.Len()+len(v) >= size && i%2 == 0:
				fmt.Fprintf(&b, `"dup%d":`, i%10)
			default:
				fmt.Fprintf(&b, `"m%d\u00e9":`, i)
			}
		}
		b.Write(v)
	}
	// The last few members repeat dup0 … dup9 after the size is reached.
	if obj {
		for i := 0; i < 10; i++ {
			fmt.Fprintf(&b, ",\n\"dup%d\":[%d]", i, i)
		}
	}
	b.WriteByte(close)
	return b.Bytes()
}

// parseBoth parses src with all cores (Parse splits large documents across
// two) and with one (the sequential parse), and checks that they agree on
// the canonical text, the duplicates and the error.
func parseBoth(t *testing.T, src []byte, s canon.Scheme) (*canon.Document, error) {
	t.Helper()
	d, err := canon.Parse(src, s)
	prev := runtime.GOMAXPROCS(1)
	d1, err1 := canon.Parse(src, s)
	runtime.GOMAXPROCS(prev)
	if (err == nil) != (err1 == nil) {
		t.Fatalf("%s: all cores: %v; one core: %v", s, err, err1)
	}
	if err != nil {
		var e, e1 *canon.Error
		errors.As(err, &e)
		errors.As(err1, &e1)
		if *e != *e1 {
			t.Fatalf("%s: all cores: %+v\none core: %+v", s, e, e1)
		}
		return nil, err
	}
	out, out1 := d.Append(nil), d1.Append(nil)
	if !bytes.Equal(out, out1) {
		t.Fatalf("%s: canonical text differs between all cores and one core", s)
	}
	if fmt.Sprint(d.Duplicates()) != fmt.Sprint(d1.Duplicates()) {
		t.Fatalf("%s: duplicates differ:\n%v\n%v", s, d.Duplicates(), d1.Duplicates())
	}
	var buf bytes.Buffer
	if _, err := d.WriteTo(&buf); err != nil || !bytes.Equal(buf.Bytes(), out) {
		t.Fatalf("%s: WriteTo differs from Append (%v)", s, err)
	}
	return d, nil
}

// TestLargeDocuments runs documents past the size from which Parse and
// WriteTo use several cores through the same references as the fuzz
// target: encoding/json for js, jsontext for jcs, and the one-core parse.
func TestLargeDocuments(t *testing.T) {
	if testing.Short() {
		t.Skip("large documents")
	}
	const size = 8<<20 + 1<<18 // just past the size from which Parse uses two cores
	r := rand.New(rand.NewPCG(3, 4))
	// Numbers that strconv.ParseFloat converts slowly (hundreds of digits,
	// subnormal halfway cases) are left out: they are tested elsewhere and
	// would make this test take seconds.
	cheap := func(v []byte) bool {
		return !bytes.Contains(v, []byte("0000000000")) && !bytes.Contains(v, []byte("e-324"))
	}
	noLone := func(v []byte) bool {
		if !cheap(v) {
			return false
		}
		out, err := canon.Append(nil, v, canon.JS)
		return err == nil && !hasLoneEscape(out)
	}
	jcsOK := func(v []byte) bool {
		if !cheap(v) {
			return false
		}
		_, err := canon.Parse(v, canon.JCS)
		return err == nil
	}

	for _, obj := range []bool{true, false} {
		src := bigDoc(r, size, obj, noLone)
		d, err := parseBoth(t, src, canon.JS)
		if err != nil {
			t.Fatalf("js: %v", err)
		}
		want, err := refJS(src)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Append(nil); !bytes.Equal(got, want) {
			i := 0
			for i < len(got) && i < len(want) && got[i] == want[i] {
				i++
			}
			t.Fatalf("js (root object %v): differs from the reference at byte %d:\n got %.80q\nwant %.80q", obj, i, got[i:], want[i:])
		}
		if obj {
			// Every dupN is repeated across the split: js keeps the last.
			for k := 0; k < 10; k++ {
				if v, ok := d.Root().Get(fmt.Sprintf("dup%d", k)); !ok || string(v.Raw()) != fmt.Sprintf("[%d]", k) {
					t.Errorf("dup%d = %s, want the last value [%d]", k, v.Raw(), k)
				}
			}
			// jcs rejects the repetition with the same error on one core
			// and on two.
			if _, err := parseBoth(t, src, canon.JCS); err == nil || !strings.Contains(err.Error(), "duplicate member name") {
				t.Errorf("jcs: %v; want a duplicate name error", err)
			}
		}

		src = bigDoc(r, size, obj, jcsOK)
		if obj {
			// No repeated names for jcs.
			src = bytes.ReplaceAll(src, []byte(`"dup`), []byte(`"first`))
			src = append(src[:bytes.LastIndex(src, []byte(`,`+"\n"+`"first0"`))], '}')
		}
		if _, err := parseBoth(t, src, canon.JCS); err != nil {
			t.Fatalf("jcs: %v", err)
		}
		jcs, _ := canon.Append(nil, src, canon.JCS)
		compareJSONText(t, src, jcs)

		// An error near the end: the same exact error on one core and two.
		bad := append(bytes.Clone(src[:len(src)-1]), ",]"[:1]...)
		bad = append(bad, src[len(src)-1])
		for _, s := range schemes {
			_, err := parseBoth(t, bad, s)
			var e *canon.Error
			if !errors.As(err, &e) || e.Offset != len(bad)-1 || !strings.Contains(e.Msg, "trailing comma") {
				t.Errorf("%s: trailing comma at the end of a large document: %v", s, err)
			}
		}
	}
}

func TestEscapeSurrogates(t *testing.T) {
	for _, c := range []struct{ in, out string }{
		{"{\"a\":\"\xed\xa0\x80\"}", `{"a":"\ud800"}`},
		{"[\"\xed\xbf\xbfx\xed\xa0\xbd\xed\xb8\x80\"]", `["\udfffx\ud83d\ude00"]`},
		{"[\xed\xa0\x80]", "[\xed\xa0\x80]"},                        // outside a string: left for the parser to refuse
		{`["\"` + "\xed\xa0\x80" + `"]`, `["\"\ud800"]`},            // after an escaped quote, still inside
		{`["\\"` + "\xed\xa0\x80" + `]`, `["\\"` + "\xed\xa0\x80]"}, // after an escaped backslash, outside
		{"\"é😀\"", "\"é😀\""},
	} {
		got, at := canon.EscapeSurrogates([]byte(c.in))
		if string(got) != c.out {
			t.Errorf("%q: %q, want %q", c.in, got, c.out)
		}
		for _, i := range at {
			if !strings.HasPrefix(string(got[i:]), `\ud`) {
				t.Errorf("%q: replacement offset %d is not at an escape", c.in, i)
			}
		}
	}
}

func TestParsePointer(t *testing.T) {
	for _, c := range []struct {
		p    string
		toks []string
		err  string
	}{
		{"", nil, ""},
		{"/", []string{""}, ""},
		{"/a/0", []string{"a", "0"}, ""},
		{"/a~1b/c~0d/~01", []string{"a/b", "c~d", "~1"}, ""},
		{"//", []string{"", ""}, ""},
		{"a", nil, "a JSON pointer is empty or starts with '/'"},
		{"/~", nil, "'~' at byte 2 is not followed by 0 or 1"},
		{"/a~2", nil, "'~' at byte 3 is not followed by 0 or 1"},
		{"/a/b~", nil, "'~' at byte 5 is not followed by 0 or 1"},
		{"/a\xed\xa0\x80", []string{"a\xed\xa0\x80"}, ""}, // a lone surrogate, as names hold it
		{"/\uFFFD", []string{"\uFFFD"}, ""},
	} {
		toks, err := canon.ParsePointer(c.p)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%q: %v, want %q", c.p, err, c.err)
			}
			continue
		}
		if err != nil || fmt.Sprint(toks) != fmt.Sprint(c.toks) || len(toks) != len(c.toks) {
			t.Errorf("%q: %q, %v; want %q", c.p, toks, err, c.toks)
		}
	}
	d, err := canon.Parse([]byte(`{"a/b":{"~":[1,2]}}`), canon.JS)
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := d.Root().At("/a~1b/~0/1"); !ok || string(n.Raw()) != "2" {
		t.Errorf("At: %v %v", n, ok)
	}
	if _, ok := d.Root().At("/a~1b/~"); ok {
		t.Errorf("At accepted an invalid pointer")
	}
}
