package derive

// A generator of tricky JSON documents, as raw text, for the differential
// test against the reference harness (node_test.go) and for the unit
// tests. Documents are built from UTF-16 code units so that lone
// surrogates and surrogate order can be expressed; every document is valid
// UTF-8 text (lone surrogates only ever appear as \u escapes), because that
// is the only kind of text the reference harness can receive as a string.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// docGen writes random documents. Its output depends only on its seed.
type docGen struct {
	r        *rand.Rand
	maxDepth int // nesting limit of the documents it writes
}

func newDocGen(seed uint64) *docGen {
	return &docGen{r: rand.New(rand.NewPCG(seed, 0x1de4_4e7)), maxDepth: 1000}
}

// maxDiffDepth is the deepest nesting the differential test generates. The
// reference harness runs out of stack somewhere between 1,000 and 5,000
// levels (V8's JSON.stringify recurses), where idemkey still works: deeper
// documents are not a fair comparison.
const maxDiffDepth = 1000

// trickyNames: member names that exercise the ordering rules: canonical array indices
// (which JavaScript puts first, in numeric order) and the strings that only
// look like them, BMP private-use and U+FFFF (which sort after astral
// characters by UTF-16 code units but before them by code point), lone
// surrogates in both orders, and names with special meaning in JavaScript.
var trickyNames = []string{
	"0", "1", "2", "9", "10", "11", "99", "100", "01", "00", "007",
	"4294967293", "4294967294", "4294967295", "4294967296", "9007199254740991",
	"9007199254740992", "18446744073709551616", "-1", "-0", "+1", "1.0", "1e3",
	" 1", "1 ", "0x1", "١", // Arabic-Indic digit one
	"", " ", "a", "A", "b", "B", "aa", "ab", "a\x00", "a b", "Z", "_", "~", "/", "~1",
	"__proto__", "constructor", "toJSON", "prototype", "hasOwnProperty", "length",
	"é", "e\u0301", "\u00ff", "\u0100", "\u07ff", "\u0800", "\u2028", "\u2029",
	"\ud7ff", "\ue000", "\uf8ff", "\ufb01", "\uff61", "\ufffd", "\ufffe", "\uffff",
	"\U00010000", "\U0001f600", "\U0001f601", "\U0010ffff", "\U000e0001",
	"\x01", "\x1f", "\x7f", "\"", "\\", "\t", "\n",
	// surrogate units that cannot live in a Go string are written by unit
	// sequences in trickyUnitNames
}

// trickyUnitNames are names given as UTF-16 code units: lone surrogates and
// pairs in both orders.
var trickyUnitNames = [][]uint16{
	{0xd800}, {0xdbff}, {0xdc00}, {0xdfff},
	{0xd800, 0xdc00}, {0xdc00, 0xd800}, // a pair, and the same units reversed
	{0xd83d, 0xde00}, {0xde00, 0xd83d},
	{0xd83d}, {0xde00}, {0xd83d, 0xd83d}, {0xde00, 0xde00},
	{0xd800, 'a'}, {'a', 0xdc00}, {0xdbff, 0xdfff, 0xdbff},
	{0xe000}, {0xffff}, {0xd7ff},
}

// trickyNumbers: number literals at the formatting boundaries of ECMAScript
// Number::toString and of double parsing.
var trickyNumbers = []string{
	"0", "-0", "0.0", "-0.0", "0e0", "0E+0", "-0e-0", "0.000", "1", "-1", "1.0", "1.00000000000000000000001",
	"1e20", "1e21", "1E21", "1e+21", "-1e21", "100000000000000000000", "1000000000000000000000",
	"999999999999999999999", "123456789012345678901", "12345678901234567890",
	"1e-6", "1e-7", "0.000001", "0.0000001", "1.5e-6", "1.5e-7", "0.00001234", "1e-06", "1e-07",
	"9007199254740991", "9007199254740992", "9007199254740993", "-9007199254740993",
	"9007199254740994", "9007199254740995", "18014398509481985", "295147905179352825856",
	"4.9e-324", "5e-324", "2e-324", "2.4703282292062327e-324", "2.4703282292062328e-324",
	"1e-323", "2.2250738585072009e-308", "2.2250738585072014e-308", "2.225073858507201e-308",
	"1.7976931348623157e308", "1.7976931348623158e308", "1.7976931348623159e308",
	"-1.7976931348623157e+308", "1.797693134862315708145274237317043567981e308",
	"1e308", "1e309", "1e400", "-1e400", "1e-400", "-1e-400", "1e99999999999", "1e-99999999999",
	"0.1", "0.2", "0.3", "0.30000000000000004", "1.1", "123.456", "-123.456e-7",
	"3.141592653589793238462643383279502884197169399375105820974944592307816406286",
	"0.1000000000000000055511151231257827021181583404541015625",
	"1.0000000000000002", "1.0000000000000001", "0.9999999999999999", "0.99999999999999999",
	"1e1", "1E1", "1e+1", "1e-1", "1E-1", "10e-1", "0.5e1", "5e-1", "1e0001", "1e-0001",
	"1234567890123456789012345678901234567890e-30", "0.00000000000000000000000000001e29",
	"123e18", "123e19", "123e-9", "123e-10", "1.5", "-1.5", "2.5e-5",
	"4294967294", "4294967295", "4294967296", "1e3", "10", "100",
	// halfway cases: just above a tie must round up
	"9007199254740993.0000000000000000000000000001", "9007199254740993" + strings.Repeat("0", 60) + "1e-60",
	"9007199254740995", "1.00000000000000011102230246251565404236316680908203125",
	"1.00000000000000011102230246251565404236316680908203125000000000000000001",
	"2.4703282292062327208828439643411068618252990130716238221279284125033775363510437593264991818081799618989828234772285886546332835517796989819938739800539093906315035659515570226392290858392449105184435931802849936536152500319370457678249219365623669863658480757001585769269903706311928279558551332927834338409351978015531246597263579574622766465272827220056374006485499977096599470454020828166226237857393450736339007967761930577506740176324673600968951340535537458516661134223766678604162159680461914467291840300530057530849048765391711386591646239524912623653881879636239373280423891018672348497668235089863388587925628302755995657524455507255189313690836254779186948667994968324049705821028513185451396213837722826145437693412532098591327667236328125e-324",
	"1" + strings.Repeat("0", 308), "1" + strings.Repeat("0", 309), "-" + "9" + strings.Repeat("9", 310),
	"0." + strings.Repeat("0", 400) + "1", "-0." + strings.Repeat("0", 330) + "7",
	"0." + strings.Repeat("0", 322) + "4940656458412465441765687928682213723651",
	strings.Repeat("1", 800) + "e-790",
}

// doc returns one random document's text.
func (g *docGen) doc() []byte {
	var b []byte
	b = g.ws(b)
	switch n := g.r.IntN(100); {
	case n < 6:
		b = g.deep(b)
	case n < 14:
		b = g.scalar(b)
	case n < 57:
		b = g.object(b, 0, 1+g.r.IntN(5))
	default:
		b = g.array(b, 0, 1+g.r.IntN(5))
	}
	return g.ws(b)
}

// ws writes random JSON whitespace, usually none.
func (g *docGen) ws(b []byte) []byte {
	if g.r.IntN(3) != 0 {
		return b
	}
	for n := 1 + g.r.IntN(3); n > 0; n-- {
		b = append(b, " \t\n\r"[g.r.IntN(4)])
	}
	return b
}

func (g *docGen) value(b []byte, depth, budget int) []byte {
	if depth >= g.maxDepth-1 || budget <= 0 {
		return g.scalar(b)
	}
	switch n := g.r.IntN(10); {
	case n < 3:
		return g.object(b, depth+1, budget-1)
	case n < 5:
		return g.array(b, depth+1, budget-1)
	}
	return g.scalar(b)
}

func (g *docGen) scalar(b []byte) []byte {
	switch g.r.IntN(10) {
	case 0:
		return append(b, []string{"true", "false", "null"}[g.r.IntN(3)]...)
	case 1, 2, 3, 4:
		return append(b, g.number()...)
	}
	return g.str(b, g.strUnits())
}

// object writes an object; some names repeat, with a different escaping.
func (g *docGen) object(b []byte, depth, budget int) []byte {
	b = append(b, '{')
	b = g.ws(b)
	n := g.r.IntN(7)
	if g.r.IntN(8) == 0 {
		n += g.r.IntN(30)
	}
	var names [][]uint16
	for i := 0; i < n; i++ {
		if i > 0 {
			b = append(b, ',')
			b = g.ws(b)
		}
		var name []uint16
		if len(names) > 0 && g.r.IntN(6) == 0 {
			name = names[g.r.IntN(len(names))] // a duplicate
		} else {
			name = g.nameUnits()
		}
		names = append(names, name)
		b = g.str(b, name)
		b = g.ws(b)
		b = append(b, ':')
		b = g.ws(b)
		b = g.value(b, depth, budget-1)
		b = g.ws(b)
	}
	return append(b, '}')
}

func (g *docGen) array(b []byte, depth, budget int) []byte {
	b = append(b, '[')
	b = g.ws(b)
	n := g.r.IntN(6)
	for i := 0; i < n; i++ {
		if i > 0 {
			b = append(b, ',')
			b = g.ws(b)
		}
		b = g.value(b, depth, budget-1)
		b = g.ws(b)
	}
	return append(b, ']')
}

// deep writes a chain of arrays and objects up to maxDepth levels, with
// siblings at some levels.
func (g *docGen) deep(b []byte) []byte {
	d := 1 + g.r.IntN(g.maxDepth)
	if g.r.IntN(4) == 0 {
		d = g.maxDepth
	}
	closers := make([]byte, 0, d)
	for i := 0; i < d; i++ {
		if g.r.IntN(2) == 0 {
			b = append(b, '[')
			if g.r.IntN(16) == 0 {
				b = g.scalar(b)
				b = append(b, ',')
			}
			closers = append(closers, ']')
		} else {
			b = append(b, '{')
			if g.r.IntN(16) == 0 {
				b = g.str(b, g.nameUnits())
				b = append(b, ':')
				b = g.scalar(b)
				b = append(b, ',')
			}
			b = g.str(b, g.nameUnits())
			b = append(b, ':')
			closers = append(closers, '}')
		}
	}
	b = g.scalar(b)
	for i := len(closers) - 1; i >= 0; i-- {
		b = append(b, closers[i])
	}
	return b
}

func (g *docGen) nameUnits() []uint16 {
	switch n := g.r.IntN(10); {
	case n < 5:
		return utf16.Encode([]rune(trickyNames[g.r.IntN(len(trickyNames))]))
	case n < 7:
		return trickyUnitNames[g.r.IntN(len(trickyUnitNames))]
	case n < 8:
		return utf16.Encode([]rune(strconv.FormatUint(g.r.Uint64N(5_000_000_000), 10)))
	}
	return g.strUnits()
}

// strUnits returns a random string as UTF-16 code units, drawn from
// characters of every UTF-8 length and from the troublesome ranges.
func (g *docGen) strUnits() []uint16 {
	n := g.r.IntN(8)
	if g.r.IntN(20) == 0 {
		n += g.r.IntN(200)
	}
	var u []uint16
	for i := 0; i < n; i++ {
		switch g.r.IntN(12) {
		case 0:
			u = append(u, uint16(g.r.IntN(0x20))) // control
		case 1:
			u = append(u, uint16("\"\\/\x7f"[g.r.IntN(4)]))
		case 2:
			u = append(u, uint16(0x80+g.r.IntN(0x780))) // two UTF-8 bytes
		case 3:
			u = append(u, uint16(0x800+g.r.IntN(0xd800-0x800))) // three bytes
		case 4:
			u = append(u, uint16(0xe000+g.r.IntN(0x2000))) // BMP after the surrogates
		case 5:
			u = append(u, []uint16{0x2028, 0x2029, 0xfeff, 0xfffd, 0xffff, 0xfffe}[g.r.IntN(6)])
		case 6:
			u = utf16.AppendRune(u, rune(0x10000+g.r.IntN(0x100000))) // astral: a pair
		case 7:
			u = append(u, uint16(0xd800+g.r.IntN(0x800))) // a lone surrogate
		default:
			u = append(u, uint16(0x20+g.r.IntN(0x5f)))
		}
	}
	return u
}

// str writes a string token for code units u, choosing for each character
// at random between its raw UTF-8 form and the escapes JSON allows.
func (g *docGen) str(b []byte, u []uint16) []byte {
	b = append(b, '"')
	for i := 0; i < len(u); i++ {
		c := u[i]
		if utf16.IsSurrogate(rune(c)) {
			if c < 0xdc00 && i+1 < len(u) && u[i+1] >= 0xdc00 && u[i+1] < 0xe000 {
				if g.r.IntN(2) == 0 {
					b = utf8.AppendRune(b, utf16.DecodeRune(rune(c), rune(u[i+1])))
				} else {
					b = g.uEscape(b, c)
					b = g.uEscape(b, u[i+1])
				}
				i++
				continue
			}
			b = g.uEscape(b, c) // a lone surrogate has no UTF-8 form
			continue
		}
		switch e, ok := shortEscapes[c]; {
		case c < 0x20 || c == '"' || c == '\\':
			if ok && g.r.IntN(2) == 0 {
				b = append(b, '\\', e)
			} else {
				b = g.uEscape(b, c)
			}
		case ok && g.r.IntN(2) == 0:
			b = append(b, '\\', e) // \/
		case g.r.IntN(5) == 0:
			b = g.uEscape(b, c)
		default:
			b = utf8.AppendRune(b, rune(c))
		}
	}
	return append(b, '"')
}

// shortEscapes are the two-character escapes JSON allows.
var shortEscapes = map[uint16]byte{'"': '"', '\\': '\\', '/': '/', '\b': 'b', '\f': 'f', '\n': 'n', '\r': 'r', '\t': 't'}

// uEscape writes \uXXXX with hex digits in random case.
func (g *docGen) uEscape(b []byte, c uint16) []byte {
	h := fmt.Sprintf("%04x", c)
	switch g.r.IntN(3) {
	case 0:
		h = strings.ToUpper(h)
	case 1:
		var m []byte
		for _, d := range []byte(h) {
			if g.r.IntN(2) == 0 && d >= 'a' {
				d -= 'a' - 'A'
			}
			m = append(m, d)
		}
		h = string(m)
	}
	return append(append(b, '\\', 'u'), h...)
}

// number returns a number literal: a boundary case, a random double in one
// of Go's formats, or a random literal with a long mantissa or exponent.
func (g *docGen) number() string {
	switch g.r.IntN(6) {
	case 0, 1:
		return trickyNumbers[g.r.IntN(len(trickyNumbers))]
	case 2:
		f := math.Float64frombits(g.r.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			f = 0
		}
		fmtc := []byte{'e', 'E', 'g', 'f'}[g.r.IntN(4)]
		if fmtc == 'f' && math.Abs(f) > 1e30 {
			fmtc = 'e'
		}
		if fmtc == 'f' && math.Abs(f) < 1e-30 && f != 0 {
			fmtc = 'e'
		}
		return strconv.FormatFloat(f, fmtc, []int{-1, 17, 20, 3}[g.r.IntN(4)], 64)
	case 3:
		return strconv.FormatInt(g.r.Int64()>>g.r.IntN(64), 10)
	case 4:
		// a power of ten or a value near the 1e21 and 1e-7 switch-overs
		m := strconv.FormatUint(1+g.r.Uint64N(999), 10)
		return m + "e" + strconv.Itoa(g.r.IntN(60)-30)
	}
	var b strings.Builder
	if g.r.IntN(2) == 0 {
		b.WriteByte('-')
	}
	if g.r.IntN(3) == 0 {
		b.WriteByte('0')
	} else {
		b.WriteByte(byte('1' + g.r.IntN(9)))
		for n := g.r.IntN(40); n > 0; n-- {
			b.WriteByte(byte('0' + g.r.IntN(10)))
		}
	}
	if g.r.IntN(2) == 0 {
		b.WriteByte('.')
		for n := 1 + g.r.IntN(40); n > 0; n-- {
			b.WriteByte(byte('0' + g.r.IntN(10)))
		}
	}
	if g.r.IntN(2) == 0 {
		b.WriteByte("eE"[g.r.IntN(2)])
		switch g.r.IntN(3) {
		case 0:
			b.WriteByte('+')
		case 1:
			b.WriteByte('-')
		}
		b.WriteString(strconv.Itoa(g.r.IntN(400)))
	}
	return b.String()
}

// mutationFragments: fragments a mutation inserts: the invalid JSON of every kind the issue
// lists, and near misses that are valid.
var mutationFragments = []string{
	",", ",]", ",}", "]", "}", "[", "{", ":", "\"", "\\", "'", "/", "//c\n", "/*c*/", "#",
	"NaN", "Infinity", "-Infinity", "undefined", "+", "+1", ".", ".5", "1.", "-", "01", "-01", "00",
	"1e", "1e+", "1E-", "0x10", "1_000", "tru", "nul", "True", "None",
	"\x00", "\x01", "\x1f", "\x7f", "\v", "\f", "\u00a0", "\u2028", "\ufeff", "\u3000",
	" ", "\t", "\r\n", "\\x41", "\\u12", "\\u", "\\U0041", "\\'", "\\a", "\\ud800", "\\udc00", "\\u0000",
	"\"\\u00e9\"", "0", "1e400", "\"a\":1", "null", "[]", "{}",
}

// mutate returns a copy of doc with a random edit that usually makes it
// invalid: truncation, a deleted or replaced character, an inserted
// fragment, or trailing data. The result is still valid UTF-8.
func (g *docGen) mutate(doc []byte) []byte {
	// pick a character boundary
	at := func() int {
		if len(doc) == 0 {
			return 0
		}
		i := g.r.IntN(len(doc) + 1)
		for i < len(doc) && !utf8.RuneStart(doc[i]) {
			i++
		}
		return i
	}
	frag := mutationFragments[g.r.IntN(len(mutationFragments))]
	out := make([]byte, 0, len(doc)+len(frag))
	switch g.r.IntN(6) {
	case 0: // truncate
		out = append(out, doc[:at()]...)
	case 1: // delete a character
		i := at()
		_, n := utf8.DecodeRune(doc[i:])
		out = append(append(out, doc[:i]...), doc[i+n:]...)
	case 2: // replace a character
		i := at()
		_, n := utf8.DecodeRune(doc[i:])
		out = append(append(append(out, doc[:i]...), frag...), doc[i+n:]...)
	case 3: // trailing data
		out = append(append(out, doc...), frag...)
	default: // insert
		i := at()
		out = append(append(append(out, doc[:i]...), frag...), doc[i:]...)
	}
	return out
}

// Task ids and tool names, non-ASCII included, and characters that need
// escaping in the hashed text.
var (
	trickyTasks = []string{"t1", "task-42", "タスク-7", "задача", "😀", "e\u0301", "é", "a\"b", "back\\slash",
		"tab\there", "nl\nline", "\u2028", "\x01", "\x7f", "\ufffd", "\uffff", "\U0010ffff", " ", "0", "null"}
	trickyTools = []string{"pay", "github.open_pull_request", "créer_facture", "送信", "🛠️", "a/b", "x\u00a0y",
		"\"", "\x1f", "tool\u2029", "ツール", "__proto__", "4294967294"}
)

func (g *docGen) task() string { return trickyTasks[g.r.IntN(len(trickyTasks))] }
func (g *docGen) tool() string { return trickyTools[g.r.IntN(len(trickyTools))] }
