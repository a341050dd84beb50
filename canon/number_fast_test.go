package canon

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestNumberTokenAgainstGeneralPath checks appendNumberToken, whose fast
// paths write most numbers without converting them to a double, against
// the general path (ParseNumber, then AppendNumber) on random literals
// around every boundary the fast paths decide on: 15 and 16 significant
// digits, integers around 2^53 and 10^19, leading and trailing zeros,
// exponents near the plain-notation limits and the normal range, signs.
func TestNumberTokenAgainstGeneralPath(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	digits := func(n int, lead bool) string {
		var b strings.Builder
		for k := 0; k < n; k++ {
			d := r.IntN(10)
			if k == 0 && lead && d == 0 {
				d = 1 + r.IntN(9)
			}
			b.WriteByte(byte('0' + d))
		}
		return b.String()
	}
	fast, general := 0, 0
	for n := 0; n < 300000; n++ {
		var b strings.Builder
		neg := r.IntN(2) == 0
		if neg {
			b.WriteByte('-')
		}
		ip := "0"
		switch r.IntN(4) {
		case 0:
		case 1:
			// around 2^53 = 9007199254740992 and 10^19
			ip = strconv.FormatUint(1<<53-3+uint64(r.IntN(7)), 10)
			if r.IntN(2) == 0 {
				ip = strconv.FormatUint(9999999999999999990+uint64(r.IntN(9)), 10)
			}
		default:
			ip = digits(1+r.IntN(20), true) + strings.Repeat("0", r.IntN(4))
		}
		b.WriteString(ip)
		var fp string
		if r.IntN(2) == 0 {
			fp = strings.Repeat("0", r.IntN(8)) + digits(r.IntN(18), false) + strings.Repeat("0", r.IntN(3))
			if fp == "" {
				fp = "0"
			}
			b.WriteString("." + fp)
		}
		if r.IntN(2) == 0 {
			b.WriteByte("eE"[r.IntN(2)])
			b.WriteString([]string{"", "+", "-"}[r.IntN(3)])
			var e int
			switch r.IntN(4) {
			case 0:
				e = r.IntN(30)
			case 1:
				e = 280 + r.IntN(50)
			default:
				e = r.IntN(400)
			}
			b.WriteString(strconv.Itoa(e))
		}
		lit := b.String()
		src := []byte(lit)
		got, end, inRange := appendNumberToken([]byte("x"), src, 0)
		if end != len(src) {
			t.Fatalf("%s: end %d, want %d", lit, end, len(src))
		}
		f, ok := ParseNumber(src)
		if inRange != ok {
			t.Fatalf("%s: in range %v, ParseNumber says %v", lit, inRange, ok)
		}
		if !ok {
			if string(got) != "x" {
				t.Fatalf("%s: out of range, but wrote %q", lit, got)
			}
			continue
		}
		if want := "x" + string(AppendNumber(nil, f)); string(got) != want {
			t.Fatalf("%s: %s, general path %s", lit, got, want)
		}
		if _, ok := appendDecimal(nil, neg, []byte(ip), []byte(fp), 0); ok && !strings.ContainsAny(lit, "eE") {
			fast++
		} else {
			general++
		}
	}
	if fast < 50000 || general < 50000 {
		t.Fatalf("%d literals took a fast path, %d the general one: the generator misses one", fast, general)
	}
	for _, tc := range []struct{ in, want string }{
		{"1.0", "1"}, {"-0.0", "0"}, {"-0", "0"}, {"-0e5", "0"}, {"0.000001", "0.000001"},
		{"0.0000010", "0.000001"}, {"123456789012345.0", "123456789012345"}, {"-1.50", "-1.5"},
		{"0.10", "0.1"}, {"3.112e+17", "311200000000000000"}, {"6.505E+29", "6.505e+29"},
		{"5e20", "500000000000000000000"}, {"1e21", "1e+21"}, {"2.600E18", "2600000000000000000"},
		{"9007199254740993", "9007199254740992"}, {"9007199254740993.0", "9007199254740992"},
		{"10439570269183495", "10439570269183496"}, {"1E-7", "1e-7"}, {"12e-7", "0.0000012"},
	} {
		got, end, ok := appendNumberToken(nil, []byte(tc.in), 0)
		if !ok || end != len(tc.in) || string(got) != tc.want {
			t.Errorf("%s: got %q, end %d, in range %v; want %q", tc.in, got, end, ok, tc.want)
		}
	}
}

// TestNumberTokenSyntax checks that appendNumberToken accepts exactly the
// tokens scanNumber accepts, and ends where it ends.
func TestNumberTokenSyntax(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const alphabet = "0123456789-+.eE "
	for n := 0; n < 200000; n++ {
		b := make([]byte, 1+r.IntN(8))
		for k := range b {
			b[k] = alphabet[r.IntN(len(alphabet))]
		}
		if b[0] != '-' && b[0]-'0' >= 10 {
			continue // not a number's first byte: never passed in
		}
		want, _, err := scanNumber(b, 0)
		_, end, _ := appendNumberToken(nil, b, 0)
		if err != nil {
			want = -1
		}
		if end != want {
			t.Fatalf("%q: end %d, scanNumber says %d (%v)", b, end, want, err)
		}
	}
}

// scanStringSimple is scanString byte by byte, with utf8.DecodeRune: the
// reference its eight-bytes-at-a-time loop is checked against.
func scanStringSimple(src []byte, i int) (int, strInfo, *perr) {
	start := i
	var info strInfo
	for i++; i < len(src); {
		c := src[i]
		switch {
		case c == '"':
			return i + 1, info, nil
		case c == '\\':
			n, lone, err := scanEscape(src, i)
			if err != nil {
				return 0, 0, err
			}
			info |= strEscaped
			if lone {
				info |= strLone
			}
			i = n
		case c < 0x20:
			return 0, 0, controlErr(i, c)
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && size <= 1 {
				return 0, 0, utf8Err(i, c)
			}
			i += size
		}
	}
	return 0, 0, &perr{off: start, msg: "unterminated string", hint: "a string must end with '\"' before the end of input"}
}

// checkScanString compares scanString with scanStringSimple on the token
// that starts at src[i].
func checkScanString(t *testing.T, src []byte, i int) {
	t.Helper()
	end, info, err := scanString(src, i)
	wend, winfo, werr := scanStringSimple(src, i)
	if end != wend || info != winfo || (err == nil) != (werr == nil) ||
		err != nil && (err.off != werr.off || err.msg != werr.msg || err.hint != werr.hint) {
		t.Fatalf("%q at %d: scanString %d %d %v, want %d %d %v", src, i, end, info, err, wend, winfo, werr)
	}
}

// TestScanStringMatchesSimple checks scanString, which validates UTF-8 as
// it meets it eight bytes at a time, against the byte-by-byte reference on
// random mixes of ASCII, every kind of multi-byte sequence, broken ones,
// escapes (valid, lone surrogates, broken), control characters and quotes,
// at every alignment and near the end of the input.
func TestScanStringMatchesSimple(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	pieces := []string{
		"a", "abcdefghijk", "é", "€", "😀", "\u07ff", "\u0800", "\ud7ff", "\ue000", "\uffff", "\U00010000", "\U0010ffff",
		"\xc0\x80", "\xc1\xbf", "\xe0\x80\x80", "\xe0\x9f\xbf", "\xed\xa0\x80", "\xed\xbf\xbf", "\xf0\x8f\xbf\xbf",
		"\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xff", "\x80", "\xc3", "\xe2\x82", "\xf0\x9f\x98",
		`\n`, `\"`, `\\`, `\u00e9`, `\ud83d\ude00`, `\ud83d`, `\ude00x`, `\u12`, `\x`, "\x01", "\n", "\x7f", `"`, "plain text ",
	}
	ok := 0
	for n := 0; n < 300000; n++ {
		b := []byte(strings.Repeat(" ", r.IntN(9)) + `"`)
		for k := r.IntN(10); k >= 0; k-- {
			b = append(b, pieces[r.IntN(len(pieces))]...)
		}
		if r.IntN(4) > 0 {
			b = append(b, '"')
		}
		b = append(b, strings.Repeat("x", r.IntN(10))...)
		i := strings.IndexByte(string(b), '"')
		checkScanString(t, b, i)
		if _, _, err := scanString(b, i); err == nil {
			ok++
		}
	}
	if ok < 30000 {
		t.Fatalf("only %d valid strings", ok)
	}
}

// FuzzScanString checks scanString against scanStringSimple on any input.
func FuzzScanString(f *testing.F) {
	for _, s := range []string{`"abc"`, "\"caf\xc3\xa9 \xff\"", `"\ud83d\ude00"`, "\"\xe2\x82\"", "\"abcdefgh\x01\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || b[0] != '"' {
			b = append([]byte{'"'}, b...)
		}
		checkScanString(t, b, 0)
	})
}

// TestRequoted checks appendRequoted, which rewrites a string's escapes in
// one pass, against decoding the string and quoting it again, on random
// mixes of every kind of escape, surrogates paired and lone, and text.
func TestRequoted(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	pieces := []string{
		`a`, `é`, `😀`, `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\u0000`, `\u001F`, `\u001f`, `\u0020`,
		`\u0022`, `\u005C`, `\u002f`, `\u007f`, `\u0080`, `\u00E9`, `\u2028`, `\uFFFF`, `\uD83D\uDE00`, `\ud83d`,
		`\ude00`, `\uDBFF\uDFFF`, `\uD800\uD800`, `\uDC00\uD800`, "\u2028", `/`, ` `,
	}
	for n := 0; n < 100000; n++ {
		var b strings.Builder
		for k := r.IntN(6); k >= 0; k-- {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		body := []byte(b.String())
		want := appendQuoted(nil, appendDecoded(nil, body))
		if got := appendRequoted(nil, body); string(got) != string(want) {
			t.Fatalf("%s: %s, want %s", body, got, want)
		}
	}
}
