package canon_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/idemkey/idemkey/canon"
)

// fuzzSeeds are tricky inputs for FuzzCanonical's corpus.
var fuzzSeeds = []string{
	`{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `""`, ` [ 1 , 2 ] `,
	`{"a":1,"b":[true,false,null],"c":{"d":"e"}}`,
	`{"1":1,"0":0,"10":10,"2":2,"4294967294":0,"4294967295":0,"01":1,"-1":-1,"":""}`,
	`{"😀":1,"\uffff":2,"\ue000":3,"z":4}`,
	`{"a":1,"a":2}`, `{"a":1,"\u0061":2,"b":{"c":1,"c":[2]}}`,
	`"\ud800"`, `{"\udc00":"\ud83d\ude00\ud83d"}`, `"\uD83D\uDE00"`,
	`"\u0000\u001f\b\f\n\r\t\"\\\/\u007f\u2028"`, "\"\u2028\x7f/\"",
	`[1.0,1e21,1e20,1e-7,0.000001,9007199254740993,5e-324,1.7976931348623157e308,1e-400]`,
	`[1e400]`, `{"n":-1e400}`, `[0.1,0.30000000000000004,333333333.33333329,4.50,2e-3]`,
	`[[[[[[[[[[[[[[[[[[[[{"a":[[[[[[1]]]]]]}]]]]]]]]]]]]]]]]]]]`,
	`[1,]`, `{"a":1,}`, `{'a':1}`, `[NaN]`, `01`, `+1`, `.5`, `1.`, `-`, `"\x"`, `"\u12"`,
	"\"a\nb\"", "\xff", "\"\xff\"", "\xef\xbb\xbf{}", "\xff\xfe[\x00]\x00", `1 2`, `{"a" 1}`, `[1 2]`,
	`{"a":"b`, `[`, `{`,
}

func FuzzCanonical(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		checkAll(t, src)
		// The same bytes, read as instructions for building a valid but
		// tricky document: random bytes rarely make one.
		checkAll(t, genDoc(src))
	})
}

func checkAll(t *testing.T, src []byte) {
	{
		var outs [2][]byte
		for _, s := range schemes {
			outs[s] = checkScheme(t, src, s)
		}
		js, jcs := outs[canon.JS], outs[canon.JCS]

		// Everything jcs accepts, js accepts; each scheme's canonical form
		// of the other's output is its own canonical form of the input.
		if jcs != nil {
			if js == nil {
				t.Fatalf("jcs accepts %q, js does not", src)
			}
			if got, err := canon.Append(nil, jcs, canon.JS); err != nil || !bytes.Equal(got, js) {
				t.Fatalf("js(jcs(%q)) = %q, %v; want %q", src, got, err, js)
			}
			if got, err := canon.Append(nil, js, canon.JCS); err != nil || !bytes.Equal(got, jcs) {
				t.Fatalf("jcs(js(%q)) = %q, %v; want %q", src, got, err, jcs)
			}
		}

		compareJSReference(t, src, js)
		compareJSONText(t, src, jcs)
	}
}

// Pieces genDoc builds documents from.
var (
	genNames = []string{
		`""`, `"a"`, `"A"`, `"ab"`, `"0"`, `"1"`, `"2"`, `"10"`, `"01"`, `"-1"`, `"1.0"`,
		`"4294967294"`, `"4294967295"`, `"4294967296"`, `"\u0031"`, `"😀"`, `"\ud83d\ude00"`,
		`"\uffff"`, `"\ue000"`, "\"\ue000\"", `"\u00e9"`, `"é"`, `"\ud800"`, `"\udfff"`, `"\ud83d"`,
		`"a\u0000"`, `"\/"`, `"/"`, `"\n"`, `"\u001f"`, "\"\x7f\"", "\"\u2028\"",
	}
	genNumbers = []string{
		"0", "-0", "1", "-1", "1.0", "1e21", "1e20", "1E+21", "1e-7", "1e-6", "0.000001", "0.0000001",
		"9007199254740993", "5e-324", "2.4703282292062327e-324", "1.7976931348623157e308", "1e400",
		"-1e400", "1e-400", "0.1", "0.30000000000000004", "333333333.33333329", "4.50", "2e-3",
		"123456789012345678901234567890", "100", "1e2", "-0.0", "0.5e1", "12.34", "999999999999999",
		"0.0000010", "-123456789012345.0", "1" + strings.Repeat("0", 309),
	}
	genStrings = []string{
		`""`, `"x"`, `"\u0000\b\t\n\f\r\u001f"`, `"\"\\\/"`, `"\u00E9"`, `"\uD83D\uDE00"`, `"\ud800"`,
		`"\udc00\ud800"`, "\"\x7f\u2028\u2029\"", `"\u007F"`, `"😀\udfff"`, `"a\\u0041"`,
	}
	genSpace = []string{"", "", "", " ", "\n", "\t", "\r\n "}
)

// genDoc turns arbitrary bytes into a valid JSON document (valid under js;
// jcs may reject its duplicates, lone surrogates and huge numbers).
func genDoc(b []byte) []byte {
	var out []byte
	next := func() int {
		if len(b) == 0 {
			return 0
		}
		c := int(b[0])
		b = b[1:]
		return c
	}
	pick := func(list []string) string { return list[next()%len(list)] }
	var value func(depth int)
	value = func(depth int) {
		out = append(out, pick(genSpace)...)
		c := next()
		if depth > 8 {
			c %= 4
		}
		switch c % 7 {
		case 0:
			out = append(out, pick([]string{"null", "true", "false"})...)
		case 1, 2:
			out = append(out, pick(genNumbers)...)
		case 3:
			out = append(out, pick(genStrings)...)
		case 4:
			out = append(out, '[')
			for i, n := 0, next()%5; i < n; i++ {
				if i > 0 {
					out = append(out, ',')
				}
				value(depth + 1)
			}
			out = append(out, ']')
		default:
			out = append(out, '{')
			for i, n := 0, next()%6; i < n; i++ {
				if i > 0 {
					out = append(out, ',')
				}
				out = append(out, pick(genSpace)...)
				out = append(out, pick(genNames)...)
				out = append(out, pick(genSpace)...)
				out = append(out, ':')
				value(depth + 1)
			}
			out = append(out, pick(genSpace)...)
			out = append(out, '}')
		}
		out = append(out, pick(genSpace)...)
	}
	value(0)
	return out
}

// TestGenDoc checks that the generator makes valid documents of every
// kind, so that the fuzz target's second half is not checking errors only.
func TestGenDoc(t *testing.T) {
	var kinds [7]int
	for i := 0; i < 2000; i++ {
		b := make([]byte, 40)
		for j := range b {
			b[j] = byte(i*31 + j*j*7 + i*j)
		}
		src := genDoc(b)
		d, err := canon.Parse(src, canon.JS)
		if err != nil {
			t.Fatalf("genDoc made invalid JSON %q: %v", src, err)
		}
		kinds[d.Root().Kind()]++
		checkAll(t, src)
	}
	for k, n := range kinds {
		if n == 0 {
			t.Errorf("genDoc never made a top-level %v", canon.Kind(k))
		}
	}
}

// checkScheme checks the scheme's invariants on src and returns its
// canonical form, or nil if src is invalid under it.
func checkScheme(t *testing.T, src []byte, s canon.Scheme) []byte {
	d, err := canon.Parse(src, s)
	onePass(t, src, s, d, err)
	if err != nil {
		var e *canon.Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: %q: error %T %v is not a *canon.Error", s, src, err, err)
		}
		if e.Offset < 0 || e.Offset > len(src) || e.Line < 1 || e.Column < 1 || e.Msg == "" {
			t.Fatalf("%s: %q: bad error position %+v", s, src, e)
		}
		if l, c := canon.Position(src, e.Offset); l != e.Line || c != e.Column {
			t.Fatalf("%s: %q: Position(%d) = %d:%d, error says %d:%d", s, src, e.Offset, l, c, e.Line, e.Column)
		}
		return nil
	}
	out := d.Append(nil)
	var buf bytes.Buffer
	if _, err := d.WriteTo(&buf); err != nil || !bytes.Equal(buf.Bytes(), out) {
		t.Fatalf("%s: %q: WriteTo %q differs from Append %q", s, src, buf.Bytes(), out)
	}
	if r := d.Root(); r.Offset() < 0 || r.End() > len(src) || !bytes.Equal(r.Append(nil), out) {
		t.Fatalf("%s: %q: root node [%d,%d) disagrees", s, src, r.Offset(), r.End())
	}
	walk(t, d.Root(), s, src)

	// Canonicalizing the canonical form returns it unchanged.
	d2, err := canon.Parse(out, s)
	if err != nil {
		t.Fatalf("%s: %q: canonical form %q does not parse: %v", s, src, out, err)
	}
	if again := d2.Append(nil); !bytes.Equal(again, out) {
		t.Fatalf("%s: %q: not a fixed point: %q → %q", s, src, out, again)
	}
	if len(d2.Duplicates()) != 0 {
		t.Fatalf("%s: %q: canonical form %q has duplicates", s, src, out)
	}
	return out
}

// onePass checks that WriteCanonical and AppendCanonical, which validate
// and serialize in one pass, agree with Parse: the same error, or the same
// canonical text.
func onePass(t *testing.T, src []byte, s canon.Scheme, d *canon.Document, perr error) {
	t.Helper()
	var buf bytes.Buffer
	n, err := canon.WriteCanonical(&buf, src, s)
	app, aerr := canon.AppendCanonical([]byte("x"), src, s)
	limitsAgree(t, src, s, d, perr)
	if perr != nil {
		if err == nil || err.Error() != perr.Error() || aerr == nil || aerr.Error() != perr.Error() {
			t.Fatalf("%s: %q: Parse fails with %v; WriteCanonical %v, AppendCanonical %v", s, src, perr, err, aerr)
		}
		if string(app) != "x" {
			t.Fatalf("%s: %q: AppendCanonical changed dst on error: %q", s, src, app)
		}
		return
	}
	want := d.Append(nil)
	if err != nil || n != int64(buf.Len()) || !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("%s: %q: WriteCanonical = %q, %d, %v; want %q", s, src, buf.Bytes(), n, err, want)
	}
	if aerr != nil || string(app) != "x"+string(want) {
		t.Fatalf("%s: %q: AppendCanonical = %q, %v; want x%q", s, src, app, aerr, want)
	}
	passAgrees(t, src, s, d, perr)
}

// onePassLimits are the one pass's limits (open objects from which a value
// takes the indexed path; dead bytes from which a member object is moved
// down) that limitsAgree tries: lowered, shallow inputs take the paths
// that deep and large ones take with the real limits.
var onePassLimits = [][2]int{{0, 0}, {1, 1}, {2, 0}, {3, 1 << 30}, {1 << 30, 0}}

// limitsAgree checks the one pass and Pass.Members with lowered limits
// against Parse.
func limitsAgree(t *testing.T, src []byte, s canon.Scheme, d *canon.Document, perr error) {
	t.Helper()
	want := []byte("x")
	var members []canon.Member
	if perr == nil {
		want = d.Append(want)
		members = d.Root().Members()
	}
	for _, lim := range onePassLimits {
		got, ok := canon.AppendCanonicalLimits([]byte("x"), src, s, lim[0], lim[1])
		if ok != (perr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("%s: %q: the one pass with limits %v = %q, %v; Parse: %q, %v", s, src, lim, got, ok, want, perr)
		}
		mems, ok := passPool.MembersLimits(src, s, lim[0], lim[1])
		if ok != (perr == nil && d.Root().Kind() == canon.Object) || len(mems) != len(members) && ok {
			t.Fatalf("%s: %q: Pass.Members with limits %v: %d members, %v; Parse: %d, %v", s, src, lim, len(mems), ok, len(members), perr)
		}
		for k := range mems {
			if string(mems[k].Name) != members[k].Name || string(mems[k].Value) != string(members[k].Value.Append(nil)) {
				t.Fatalf("%s: %q: Pass.Members with limits %v: [%d] = %q: %q", s, src, lim, k, mems[k].Name, mems[k].Value)
			}
		}
	}
}

// passPool is one canon.Pass that every check reuses, as a batch does,
// so that what one text leaves in it meets the next.
var passPool canon.Pass

// passAgrees checks canon.Pass against Parse: Append gives the canonical
// text or fails as Parse does, and Members gives the members of a root
// object in Node.Members's order with their canonical texts.
func passAgrees(t *testing.T, src []byte, s canon.Scheme, d *canon.Document, perr error) {
	t.Helper()
	p := &passPool
	out, ok := p.Append([]byte("x"), src, s)
	if ok != (perr == nil) || (perr == nil && string(out) != "x"+string(d.Append(nil))) || (perr != nil && string(out) != "x") {
		t.Fatalf("%s: %q: Pass.Append = %q, %v; Parse: %v", s, src, out, ok, perr)
	}
	mems, ok := p.Members(src, s)
	isObj := perr == nil && d.Root().Kind() == canon.Object
	if ok != isObj {
		t.Fatalf("%s: %q: Pass.Members ok = %v; Parse: %v", s, src, ok, perr)
	}
	if !ok {
		return
	}
	want := d.Root().Members()
	if len(mems) != len(want) {
		t.Fatalf("%s: %q: Pass.Members gives %d members, Node.Members %d", s, src, len(mems), len(want))
	}
	for k, m := range want {
		if string(mems[k].Name) != m.Name || string(mems[k].Value) != string(m.Value.Append(nil)) {
			t.Fatalf("%s: %q: Pass.Members[%d] = %q: %q; want %q: %q", s, src, k, mems[k].Name, mems[k].Value, m.Name, m.Value.Append(nil))
		}
	}
}

// walk checks that every node's canonical form is what its parent writes
// for it, and that At finds it by pointer.
func walk(t *testing.T, n canon.Node, s canon.Scheme, src []byte) {
	root := n.Document().Root()
	var rec func(n canon.Node, ptr string, depth int)
	rec = func(n canon.Node, ptr string, depth int) {
		if depth > 50 {
			return
		}
		if got, ok := root.At(ptr); !ok || got.Offset() != n.Offset() {
			t.Fatalf("%s: %q: At(%q) = %d, %v; want %d", s, src, ptr, got.Offset(), ok, n.Offset())
		}
		if !bytes.Equal(n.Raw(), src[n.Offset():n.End()]) {
			t.Fatalf("%s: %q: Raw of %q", s, src, ptr)
		}
		switch n.Kind() {
		case canon.Object:
			var b []byte
			b = append(b, '{')
			for i, m := range n.Members() {
				if i > 0 {
					b = append(b, ',')
				}
				b = canon.AppendQuoted(b, m.Name)
				b = append(b, ':')
				b = m.Value.Append(b)
				if v, ok := n.Get(m.Name); !ok || v.Offset() != m.Value.Offset() {
					t.Fatalf("%s: %q: Get(%q) disagrees with Members", s, src, m.Name)
				}
				rec(m.Value, ptr+"/"+canon.PointerToken(m.Name), depth+1)
			}
			b = append(b, '}')
			if !bytes.Equal(b, n.Append(nil)) {
				t.Fatalf("%s: %q: object %q written from Members as %q, Append %q", s, src, ptr, b, n.Append(nil))
			}
		case canon.Array:
			for i, e := range n.Elements() {
				rec(e, ptr+"/"+strconv.Itoa(i), depth+1)
			}
		case canon.String:
			if q := canon.AppendQuoted(nil, n.Text()); !bytes.Equal(q, n.Append(nil)) {
				t.Fatalf("%s: %q: string %q: AppendQuoted(Text()) %q, Append %q", s, src, ptr, q, n.Append(nil))
			}
		case canon.Number:
			f, ok := n.Float()
			want := []byte("null")
			if ok {
				want = canon.AppendNumber(nil, f)
			}
			if !bytes.Equal(want, n.Append(nil)) {
				t.Fatalf("%s: %q: number %q: %q, Append %q", s, src, n.Text(), want, n.Append(nil))
			}
		}
	}
	rec(n, "", 0)
}

// compareJSReference compares the js scheme (js: its output, or nil if it
// rejected src) with refJS, a canonicalizer written from the reference
// harness's definition on top of encoding/json.
func compareJSReference(t *testing.T, src, js []byte) {
	// encoding/json replaces invalid UTF-8 and lone surrogates with U+FFFD
	// where JSON.parse on a UTF-8 file keeps lone surrogates (and idemkey
	// rejects invalid UTF-8): those inputs are out of its reach.
	if !utf8.Valid(src) {
		return
	}
	want, err := refJS(src)
	if (err == nil) != (js != nil) {
		t.Fatalf("js: %q: idemkey output %q, reference error %v", src, js, err)
	}
	if js == nil || hasLoneEscape(js) {
		return
	}
	if !bytes.Equal(js, want) {
		t.Fatalf("js: %q:\n got %q\nwant %q (reference)", src, js, want)
	}
}

// hasLoneEscape reports whether canonical output contains a \udxxx escape,
// which the js scheme writes only for a lone surrogate.
func hasLoneEscape(b []byte) bool {
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '\\' {
			if b[i+1] == 'u' && b[i+2] == 'd' {
				return true
			}
			i++
		}
	}
	return false
}

// refJS is the reference harness's canonical() restated in Go:
// JSON.parse (duplicates: last wins), then JSON.stringify with members
// sorted by UTF-16 code units, array-index names first in numeric order.
func refJS(src []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data")
	}
	return refAppend(nil, v), nil
}

func refAppend(b []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, v)
	case json.Number:
		f, _ := strconv.ParseFloat(string(v), 64)
		if math.IsInf(f, 0) {
			return append(b, "null"...)
		}
		return canon.AppendNumber(b, f)
	case string:
		return refQuote(b, v)
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = refAppend(b, e)
		}
		return append(b, ']')
	case map[string]any:
		names := make([]string, 0, len(v))
		for k := range v {
			names = append(names, k)
		}
		slices.SortFunc(names, func(x, y string) int {
			return refCompare(canon.JS, utf16.Encode([]rune(x)), utf16.Encode([]rune(y)))
		})
		b = append(b, '{')
		for i, k := range names {
			if i > 0 {
				b = append(b, ',')
			}
			b = refQuote(b, k)
			b = append(b, ':')
			b = refAppend(b, v[k])
		}
		return append(b, '}')
	}
	panic("unexpected type")
}

// refQuote is JSON.stringify's QuoteJSONString for valid UTF-8.
func refQuote(b []byte, s string) []byte {
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"':
			b = append(b, `\"`...)
		case r == '\\':
			b = append(b, `\\`...)
		case r == '\b':
			b = append(b, `\b`...)
		case r == '\f':
			b = append(b, `\f`...)
		case r == '\n':
			b = append(b, `\n`...)
		case r == '\r':
			b = append(b, `\r`...)
		case r == '\t':
			b = append(b, `\t`...)
		case r < 0x20:
			b = append(b, `\u00`...)
			b = append(b, "0123456789abcdef"[r>>4], "0123456789abcdef"[r&0xf])
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return append(b, '"')
}

// compareJSONText compares the jcs scheme (jcs: its output, or nil if it
// rejected src) with jsontext.Value.Canonicalize, a second RFC 8785
// implementation. Where they legitimately differ:
//
//   - a number outside the double range (1e400): RFC 8785 §3.2.2.3 allows
//     only finite doubles and idemkey rejects it; jsontext writes the
//     largest double, ±1.7976931348623157e+308.
func compareJSONText(t *testing.T, src, jcs []byte) {
	v := jsontext.Value(slices.Clone(src))
	err := v.Canonicalize()
	if jcs == nil {
		if err == nil {
			_, ourErr := canon.Parse(src, canon.JCS)
			if strings.Contains(ourErr.Error(), "outside the IEEE-754 double range") {
				return
			}
			t.Fatalf("jcs: %q: idemkey: %v; jsontext accepts it as %q", src, ourErr, v)
		}
		return
	}
	if err != nil {
		t.Fatalf("jcs: %q: idemkey writes %q; jsontext: %v", src, jcs, err)
	}
	if !bytes.Equal(jcs, v) {
		t.Fatalf("jcs: %q:\n got %q\nwant %q (jsontext)", src, jcs, []byte(v))
	}
}
