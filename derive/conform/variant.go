package conform

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/idemkey/idemkey/canon"
	"golang.org/x/text/unicode/norm"
)

// A Variant is a canonicalization, right or wrong, described along the
// dimensions where implementations are known to differ. The diagnosis
// computes the answers of variants with one known defect (or a known
// implementation's set of them) and looks for the one that reproduces what
// an implementation answered. JSVariant and JCSVariant are the two schemes
// themselves; the tests check that they agree with canon on every case.
type Variant struct {
	Order      Order
	IndexFirst bool // array-index names first, in numeric order (JavaScript's property order)
	Numbers    Numbers
	ExactInts  bool     // integer literals kept exact (as Python's int, or a big-number parser)
	Overflow   Overflow // a number beyond the double range
	Dups       Dups
	Escapes    Escapes
	Lone       Lone
	Spaces     bool // ", " and ": " between tokens
	AllowNaN   bool // NaN, Infinity and -Infinity accepted as numbers
	MaxDepth   int  // arguments nested deeper are rejected; 0: no limit
	Shape      Shape
	Newline    bool // a newline after the text (what echo … | sha256sum hashes)
	Shallow    bool // only the arguments' own members sorted (when they are an object), not those of nested objects
	NFC        bool // strings normalized to NFC when read
	DropProto  bool // members named __proto__ lost (JavaScript's obj[name] = value sets the prototype)
	// NameList: JSON.stringify(x, Object.keys(args).sort()), the replacer
	// array keeping, in every object, only the arguments' own names, in
	// that list's order.
	NameList bool
	// HashUTF16: the key is of the text's UTF-16LE bytes (C#'s
	// Encoding.Unicode), not its UTF-8; the text itself is right.
	HashUTF16 bool
}

// Hashed returns the bytes v hashes for its canonical text.
func (v Variant) Hashed(text string) string {
	if !v.HashUTF16 {
		return text
	}
	var b []byte
	for _, u := range utf16.Encode([]rune(text)) {
		b = append(b, byte(u), byte(u>>8))
	}
	return string(b)
}

// Shape is what is canonicalized and hashed.
type Shape uint8

const (
	ShapeCall      Shape = iota // [task, tool, args]
	ShapeArgs                   // the arguments alone
	ShapeObject                 // {"args":…,"task":…,"tool":…}
	ShapeToolFirst              // [tool, task, args]
	ShapeConcat                 // task, tool and the canonical arguments concatenated, without separators
)

// Order is how object members are ordered.
type Order uint8

const (
	OrderUTF16     Order = iota // UTF-16 code units
	OrderCodePoint              // code points, the order of UTF-8 bytes
	OrderInput                  // not sorted
	OrderLocale                 // a locale's collation (localeCompare, Intl.Collator): the Unicode root collation
)

// Numbers is how numbers are read and written.
type Numbers uint8

const (
	NumJS      Numbers = iota // the nearest double, written as Number::toString
	NumGo                     // as NumJS, but negative zero written as -0
	NumPyFloat                // the nearest double, written as Python's float repr (1e-07, 1.0)
	NumLiteral                // as written
	NumNoPlus                 // as NumJS, but a positive exponent without its + (1e21)
	NumGoG                    // every number the nearest double, written with Go's strconv 'g' (1e+06, 1e-05)
	NumJava                   // fractions and exponents as Java's Double.toString (1.0, 1.0E21, 1.0E-7); integers as NumJS
	NumDecimal                // fractions and exponents as Python's str(Decimal(repr(f)).normalize()) (1E+2, 1E-7); integers as NumJS
	NumJq                     // as jq 1.6 prints: exponents for 1e+16 (one digit) and from 1e-05, two exponent digits
)

// Overflow is what happens to a number beyond the double range.
type Overflow uint8

const (
	OverNull     Overflow = iota // null, as JSON.stringify(Infinity)
	OverReject                   // rejected
	OverInfinity                 // written as Infinity or -Infinity
	OverClamp                    // written as the largest double
)

// Dups is what happens to a repeated name.
type Dups uint8

const (
	DupLast   Dups = iota // the last value wins, at the first name's place
	DupFirst              // the first value wins
	DupReject             // rejected
)

// Escapes is a set of characters escaped beyond what the schemes escape.
type Escapes uint16

const (
	EscNonASCII Escapes = 1 << iota // every character from U+0080, as \uxxxx
	EscHTML                         // <, > and &
	EscLineSep                      // U+2028 and U+2029
	EscUpperHex                     // \u escapes in upper-case hex
	EscNoShort                      // controls as \u00xx, never \b \t \n \f \r
	EscSlash                        // / as \/
	EscDEL                          // U+007F
)

// Lone is what happens to a lone surrogate.
type Lone uint8

const (
	LoneEscape  Lone = iota // written as \udxxx
	LoneReplace             // replaced with U+FFFD
	LoneReject              // rejected
)

// The two schemes.
var (
	JSVariant  = Variant{Order: OrderUTF16, IndexFirst: true, Numbers: NumJS, Overflow: OverNull, Dups: DupLast, Lone: LoneEscape}
	JCSVariant = Variant{Order: OrderUTF16, Numbers: NumJS, Overflow: OverReject, Dups: DupReject, Lone: LoneReject}
)

// SchemeVariant returns the variant of scheme s.
func SchemeVariant(s canon.Scheme) Variant {
	if s == canon.JCS {
		return JCSVariant
	}
	return JSVariant
}

var errRejected = errors.New("rejected")

// Canonical returns the text v makes of c, [task, tool, args], or ok false
// when v rejects c.
func (v Variant) Canonical(c Case) (text string, ok bool) {
	p := &parser{src: c.Args, v: &v}
	val, err := p.document()
	if err != nil {
		return "", false
	}
	task, err1 := p.wtf8(c.Task)
	tool, err2 := p.wtf8(c.Tool)
	if err1 != nil || err2 != nil {
		return "", false
	}
	w := &writer{v: &v}
	if v.NameList {
		if val.kind == 'n' {
			return "", false // Object.keys(null) throws
		}
		w.list = nameList(val)
	}
	switch v.Shape {
	case ShapeArgs:
		err = w.value(val)
	case ShapeObject:
		w.b.WriteString(`{"args"`)
		w.sep(':')
		err = w.value(val)
		w.sep(',')
		w.b.WriteString(`"task"`)
		w.sep(':')
		w.str(task)
		w.sep(',')
		w.b.WriteString(`"tool"`)
		w.sep(':')
		w.str(tool)
		w.b.WriteByte('}')
	case ShapeToolFirst:
		w.argsDepth = 1
		err = w.value(value{kind: 'a', elems: []value{{kind: 's', str: tool}, {kind: 's', str: task}, val}})
	case ShapeConcat:
		w.b.WriteString(string(utf16.Decode(task)) + string(utf16.Decode(tool)))
		err = w.value(val)
	default:
		w.argsDepth = 1
		err = w.value(value{kind: 'a', elems: []value{{kind: 's', str: task}, {kind: 's', str: tool}, val}})
	}
	if err != nil {
		return "", false
	}
	if v.Newline {
		w.b.WriteByte('\n')
	}
	return w.b.String(), true
}

// ---- parsing ----

// parseKey is what a parse depends on.
type parseKey struct {
	args     string
	proto    bool
	dups     Dups
	lone     Lone
	allowNaN bool
	maxDepth int
	nfc      bool
}

type parsed struct {
	val value
	err error
}

// parseCache holds the trees of arguments, which the diagnosis parses
// again for every defect it tries; trees are never modified. It stops
// growing at cacheMax entries (the suite needs a few thousand).
var (
	cacheMu    sync.Mutex
	parseCache = map[parseKey]parsed{}
)

const cacheMax = 1 << 14

func (p *parser) document() (value, error) {
	key := parseKey{p.src, p.v.DropProto, p.v.Dups, p.v.Lone, p.v.AllowNaN, p.v.MaxDepth, p.v.NFC}
	cacheMu.Lock()
	r, ok := parseCache[key]
	cacheMu.Unlock()
	if ok {
		return r.val, r.err
	}
	p.space()
	val, err := p.value(0)
	if err == nil {
		p.space()
		if p.i != len(p.src) {
			err = errRejected
		}
	}
	cacheMu.Lock()
	if len(parseCache) < cacheMax {
		parseCache[key] = parsed{val, err}
	}
	cacheMu.Unlock()
	return val, err
}

type value struct {
	kind    byte // 'n' null, 't', 'f', '0' number, 's' string, 'a' array, 'o' object
	num     string
	str     []uint16
	elems   []value
	members []member
	// objectPrototype: Object.prototype, reached by NameList's lookups
	objectPrototype bool
}

type member struct {
	name []uint16
	val  value
}

type parser struct {
	src string
	i   int
	v   *Variant
}

func (p *parser) space() {
	for p.i < len(p.src) && strings.IndexByte(" \t\n\r", p.src[p.i]) >= 0 {
		p.i++
	}
}

func (p *parser) lit(s string) bool {
	if strings.HasPrefix(p.src[p.i:], s) {
		p.i += len(s)
		return true
	}
	return false
}

func (p *parser) value(depth int) (value, error) {
	if p.i >= len(p.src) {
		return value{}, errRejected
	}
	if c := p.src[p.i]; (c == '[' || c == '{') && p.v.MaxDepth > 0 && depth >= p.v.MaxDepth {
		return value{}, errRejected
	}
	switch c := p.src[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		p.i++
		a := value{kind: 'a'}
		p.space()
		if p.lit("]") {
			return a, nil
		}
		for {
			p.space()
			e, err := p.value(depth + 1)
			if err != nil {
				return value{}, err
			}
			a.elems = append(a.elems, e)
			p.space()
			if p.lit("]") {
				return a, nil
			}
			if !p.lit(",") {
				return value{}, errRejected
			}
		}
	case c == '"':
		s, err := p.string()
		return value{kind: 's', str: s}, err
	case p.lit("null"):
		return value{kind: 'n'}, nil
	case p.lit("true"):
		return value{kind: 't'}, nil
	case p.lit("false"):
		return value{kind: 'f'}, nil
	}
	if p.v.AllowNaN {
		for _, l := range []string{"NaN", "Infinity", "-Infinity"} {
			if p.lit(l) {
				return value{kind: '0', num: l}, nil
			}
		}
	}
	return p.number()
}

func (p *parser) object(depth int) (value, error) {
	p.i++
	o := value{kind: 'o'}
	p.space()
	if p.lit("}") {
		return o, nil
	}
	index := map[string]int{} // the place of each name in o.members
	for {
		p.space()
		if p.i >= len(p.src) || p.src[p.i] != '"' {
			return value{}, errRejected
		}
		name, err := p.string()
		if err != nil {
			return value{}, err
		}
		p.space()
		if !p.lit(":") {
			return value{}, errRejected
		}
		p.space()
		val, err := p.value(depth + 1)
		if err != nil {
			return value{}, err
		}
		key := unitsKey(name)
		j, seen := index[key]
		switch {
		case p.v.DropProto && string(utf16.Decode(name)) == "__proto__":
		case !seen:
			index[key] = len(o.members)
			o.members = append(o.members, member{name, val})
		case p.v.Dups == DupLast:
			o.members[j].val = val
		case p.v.Dups == DupReject:
			return value{}, errRejected
		}
		p.space()
		if p.lit("}") {
			return o, nil
		}
		if !p.lit(",") {
			return value{}, errRejected
		}
	}
}

// unitsKey returns a string that is equal for equal code unit sequences.
func unitsKey(u []uint16) string {
	b := make([]byte, 0, 2*len(u))
	for _, c := range u {
		b = append(b, byte(c>>8), byte(c))
	}
	return string(b)
}

func (p *parser) number() (value, error) {
	start := p.i
	p.lit("-")
	digits := func() int {
		n := 0
		for p.i < len(p.src) && p.src[p.i] >= '0' && p.src[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	switch {
	case p.lit("0"):
	case digits() == 0:
		return value{}, errRejected
	}
	if p.lit(".") && digits() == 0 {
		return value{}, errRejected
	}
	if p.lit("e") || p.lit("E") {
		if !p.lit("+") {
			p.lit("-")
		}
		if digits() == 0 {
			return value{}, errRejected
		}
	}
	return value{kind: '0', num: p.src[start:p.i]}, nil
}

// string reads a string token into UTF-16 code units, applying the
// variant's treatment of lone surrogates.
func (p *parser) string() ([]uint16, error) {
	p.i++
	var u []uint16
	for {
		if p.i >= len(p.src) {
			return nil, errRejected
		}
		c := p.src[p.i]
		switch {
		case c == '"':
			p.i++
			return p.lone(u)
		case c < 0x20:
			return nil, errRejected
		case c == '\\':
			if p.i+1 >= len(p.src) {
				return nil, errRejected
			}
			e := p.src[p.i+1]
			p.i += 2
			if r, ok := map[byte]uint16{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}[e]; ok {
				u = append(u, r)
				continue
			}
			if e != 'u' || p.i+4 > len(p.src) {
				return nil, errRejected
			}
			n, err := strconv.ParseUint(p.src[p.i:p.i+4], 16, 16)
			if err != nil {
				return nil, errRejected
			}
			u = append(u, uint16(n))
			p.i += 4
		default:
			r, size := utf8.DecodeRuneInString(p.src[p.i:])
			u = utf16.AppendRune(u, r)
			p.i += size
		}
	}
}

// lone applies the variant's treatment of lone surrogates to u, then its
// normalization (none for a string that keeps a lone surrogate).
func (p *parser) lone(u []uint16) ([]uint16, error) {
	u, err := p.loneOnly(u)
	if err != nil || !p.v.NFC {
		return u, err
	}
	for i := 0; i < len(u); i++ {
		if utf16.IsSurrogate(rune(u[i])) {
			if u[i] >= 0xdc00 || i+1 == len(u) || u[i+1] < 0xdc00 || u[i+1] > 0xdfff {
				return u, nil
			}
			i++
		}
	}
	return utf16.Encode([]rune(norm.NFC.String(string(utf16.Decode(u))))), nil
}

func (p *parser) loneOnly(u []uint16) ([]uint16, error) {
	for i := 0; i < len(u); i++ {
		if !utf16.IsSurrogate(rune(u[i])) {
			continue
		}
		if u[i] < 0xdc00 && i+1 < len(u) && u[i+1] >= 0xdc00 && u[i+1] <= 0xdfff {
			i++
			continue
		}
		switch p.v.Lone {
		case LoneReject:
			return nil, errRejected
		case LoneReplace:
			u[i] = utf8.RuneError
		}
	}
	return u, nil
}

// wtf8 converts a task id or tool name (WTF-8) to UTF-16 code units.
func (p *parser) wtf8(s string) ([]uint16, error) {
	var u []uint16
	for i := 0; i < len(s); {
		if s[i] == 0xed && i+2 < len(s) && s[i+1] >= 0xa0 {
			u = append(u, uint16(0xd000|uint16(s[i+1]&0x3f)<<6|uint16(s[i+2]&0x3f)))
			i += 3
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		u = utf16.AppendRune(u, r)
		i += size
	}
	return p.lone(u)
}

// ---- writing ----

type writer struct {
	b         strings.Builder
	v         *Variant
	depth     int        // arrays and objects open around the value being written
	argsDepth int        // the depth of the arguments (inside [task, tool, args]: 1)
	list      [][]uint16 // with NameList, the names kept in every object
}

func (w *writer) sep(c byte) {
	w.b.WriteByte(c)
	if w.v.Spaces {
		w.b.WriteByte(' ')
	}
}

func (w *writer) value(x value) error {
	switch x.kind {
	case 'n':
		w.b.WriteString("null")
	case 't':
		w.b.WriteString("true")
	case 'f':
		w.b.WriteString("false")
	case '0':
		return w.number(x.num)
	case 's':
		return w.str(x.str)
	case 'a':
		w.depth++
		defer func() { w.depth-- }()
		w.b.WriteByte('[')
		for i, e := range x.elems {
			if i > 0 {
				w.sep(',')
			}
			if err := w.value(e); err != nil {
				return err
			}
		}
		w.b.WriteByte(']')
	case 'o':
		ms := slices.Clone(x.members)
		if w.v.NameList {
			ms = w.listed(x)
		} else {
			w.v.sort(ms, w.v.Shallow && w.depth != w.argsDepth)
		}
		w.depth++
		defer func() { w.depth-- }()
		w.b.WriteByte('{')
		for i, m := range ms {
			if i > 0 {
				w.sep(',')
			}
			if err := w.str(m.name); err != nil {
				return err
			}
			w.sep(':')
			if err := w.value(m.val); err != nil {
				return err
			}
		}
		w.b.WriteByte('}')
	}
	return nil
}

// sort orders an object's members; unsorted, they keep the order of the
// input (but array-index names still come first with IndexFirst, as in a
// JavaScript object).
func (v *Variant) sort(ms []member, unsorted bool) {
	order := v.Order
	if unsorted {
		order = OrderInput
	}
	switch order {
	case OrderUTF16:
		slices.SortFunc(ms, func(a, b member) int { return slices.Compare(a.name, b.name) })
	case OrderLocale:
		slices.SortStableFunc(ms, func(a, b member) int { return collateCompare(a.name, b.name) })
	case OrderCodePoint:
		keys := make(map[*uint16][]rune, len(ms))
		key := func(m member) []rune {
			if len(m.name) == 0 {
				return nil
			}
			k, ok := keys[&m.name[0]]
			if !ok {
				k = codePoints(m.name)
				keys[&m.name[0]] = k
			}
			return k
		}
		slices.SortFunc(ms, func(a, b member) int { return slices.Compare(key(a), key(b)) })
	}
	if v.IndexFirst {
		// ECMAScript's own property order: array indices first, ascending,
		// then the other names in the order they were created (sorted).
		slices.SortStableFunc(ms, func(a, b member) int {
			ia, oka := arrayIndex(a.name)
			ib, okb := arrayIndex(b.name)
			switch {
			case oka && okb:
				return cmp.Compare(ia, ib)
			case oka:
				return -1
			case okb:
				return 1
			}
			return 0
		})
	}
}

// arrayIndex reports whether name is an ECMAScript array index: the
// canonical decimal form of an integer from 0 to 2^32-2.
func arrayIndex(name []uint16) (uint64, bool) {
	if len(name) == 0 || len(name) > 10 || (name[0] == '0' && len(name) > 1) {
		return 0, false
	}
	var n uint64
	for _, c := range name {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, n <= math.MaxUint32-1
}

func codePoints(u []uint16) []rune { return utf16.Decode(u) }

func (w *writer) str(u []uint16) error {
	esc := w.v.Escapes
	hex := "0123456789abcdef"
	if esc&EscUpperHex != 0 {
		hex = "0123456789ABCDEF"
	}
	uesc := func(c uint16) {
		w.b.WriteString(`\u`)
		for s := 12; s >= 0; s -= 4 {
			w.b.WriteByte(hex[c>>s&0xf])
		}
	}
	w.b.WriteByte('"')
	for i := 0; i < len(u); i++ {
		c := u[i]
		r := rune(c)
		pair := false
		if utf16.IsSurrogate(r) {
			if c < 0xdc00 && i+1 < len(u) && u[i+1] >= 0xdc00 && u[i+1] <= 0xdfff {
				r = utf16.DecodeRune(r, rune(u[i+1]))
				pair = true
			} else {
				uesc(c) // a lone surrogate the parser kept
				continue
			}
		}
		switch {
		case r == '"':
			w.b.WriteString(`\"`)
		case r == '\\':
			w.b.WriteString(`\\`)
		case r < 0x20:
			short := map[rune]string{'\b': `\b`, '\t': `\t`, '\n': `\n`, '\f': `\f`, '\r': `\r`}[r]
			if short != "" && esc&EscNoShort == 0 {
				w.b.WriteString(short)
			} else {
				uesc(c)
			}
		case r == '/' && esc&EscSlash != 0:
			w.b.WriteString(`\/`)
		case r == 0x7f && esc&EscDEL != 0,
			(r == '<' || r == '>' || r == '&') && esc&EscHTML != 0,
			(r == 0x2028 || r == 0x2029) && esc&EscLineSep != 0:
			uesc(c)
		case r >= 0x80 && esc&EscNonASCII != 0:
			uesc(c)
			if pair {
				uesc(u[i+1])
			}
		default:
			w.b.WriteRune(r)
		}
		if pair {
			i++
		}
	}
	w.b.WriteByte('"')
	return nil
}

func (w *writer) number(lit string) error {
	v := w.v
	integer := !strings.ContainsAny(lit, ".eE") && lit != "NaN" && !strings.HasSuffix(lit, "Infinity")
	switch {
	case v.Numbers == NumLiteral:
		w.b.WriteString(lit)
		return nil
	case lit == "NaN" || strings.HasSuffix(lit, "Infinity"):
		w.b.WriteString(lit)
		return nil
	case integer && v.ExactInts:
		if lit == "-0" {
			lit = "0"
		}
		w.b.WriteString(lit)
		return nil
	}
	f, ok := canon.ParseNumber([]byte(lit))
	if !ok {
		switch v.Overflow {
		case OverNull:
			w.b.WriteString("null")
		case OverReject:
			return errRejected
		case OverInfinity:
			w.b.WriteString(map[bool]string{false: "Infinity", true: "-Infinity"}[lit[0] == '-'])
		case OverClamp:
			f = math.Copysign(math.MaxFloat64, map[bool]float64{false: 1, true: -1}[lit[0] == '-'])
			w.b.Write(canon.AppendNumber(nil, f))
		}
		return nil
	}
	switch {
	case v.Numbers == NumPyFloat && !integer:
		w.b.WriteString(pythonRepr(f))
	case v.Numbers == NumJava && !integer:
		w.b.WriteString(javaString(f))
	case v.Numbers == NumDecimal && !integer:
		w.b.WriteString(decimalString(f))
	case v.Numbers == NumGoG:
		w.b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	case v.Numbers == NumJq:
		w.b.WriteString(jqString(f))
	case v.Numbers == NumGo && f == 0 && math.Signbit(f):
		w.b.WriteString("-0")
	case v.Numbers == NumNoPlus:
		w.b.WriteString(strings.Replace(string(canon.AppendNumber(nil, f)), "e+", "e", 1))
	default:
		w.b.Write(canon.AppendNumber(nil, f))
	}
	return nil
}

// pythonRepr writes f as Python's repr(float) does: the shortest digits,
// in plain notation with a ".0" for exponents from -4 to 15, otherwise as
// d.ddde±XX with at least two exponent digits.
func pythonRepr(f float64) string {
	if f == 0 {
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // -d.ddde±XX
	mant, exp, _ := strings.Cut(e, "e")
	x, _ := strconv.Atoi(exp)
	if x >= -4 && x < 16 {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	sign := "+"
	if x < 0 {
		sign, x = "-", -x
	}
	return fmt.Sprintf("%se%s%02d", mant, sign, x)
}

// shortest returns the shortest digits that round-trip |f| (f not 0) and
// n, such that |f| = 0.digits × 10^n (ECMAScript's k and n).
func shortest(f float64) (digits string, n int) {
	e := strconv.FormatFloat(math.Abs(f), 'e', -1, 64)
	mant, exp, _ := strings.Cut(e, "e")
	x, _ := strconv.Atoi(exp)
	return strings.Replace(mant, ".", "", 1), x + 1
}

// plain writes 0.digits × 10^n in plain notation.
func plain(digits string, n int) string {
	k := len(digits)
	switch {
	case n <= 0:
		return "0." + strings.Repeat("0", -n) + digits
	case n >= k:
		return digits + strings.Repeat("0", n-k)
	}
	return digits[:n] + "." + digits[n:]
}

func sign(f float64) string {
	if math.Signbit(f) {
		return "-"
	}
	return ""
}

// javaString writes f as Java's Double.toString does (the shortest digits,
// as since JDK 19): plain with at least one fraction digit from 1e-3 to
// 1e7, otherwise d.dddE±n without a + sign.
func javaString(f float64) string {
	if f == 0 {
		return sign(f) + "0.0"
	}
	d, n := shortest(f)
	if a := math.Abs(f); a >= 1e-3 && a < 1e7 {
		s := plain(d, n)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return sign(f) + s
	}
	frac := d[1:]
	if frac == "" {
		frac = "0"
	}
	return fmt.Sprintf("%s%s.%sE%d", sign(f), d[:1], frac, n-1)
}

// decimalString writes f as Python's str(Decimal(repr(f)).normalize())
// does: trailing zeros dropped, plain notation only for a number with no
// zeros left of the point whose adjusted exponent is at least -6.
func decimalString(f float64) string {
	if f == 0 {
		return sign(f) + "0"
	}
	d, n := shortest(f)
	exp := n - len(d) // f = d × 10^exp
	if adjusted := n - 1; exp <= 0 && adjusted >= -6 {
		return sign(f) + plain(d, n)
	}
	frac := ""
	if len(d) > 1 {
		frac = "." + d[1:]
	}
	return fmt.Sprintf("%s%s%sE%+d", sign(f), d[:1], frac, n-1)
}

// jqString writes f as jq 1.6 does: the shortest digits, in exponent
// notation when n <= -4 or n > k+15, with at least two exponent digits.
func jqString(f float64) string {
	if f == 0 {
		return sign(f) + "0"
	}
	d, n := shortest(f)
	if n > -4 && n <= len(d)+15 {
		return sign(f) + plain(d, n)
	}
	frac := ""
	if len(d) > 1 {
		frac = "." + d[1:]
	}
	es := "+"
	x := n - 1
	if x < 0 {
		es, x = "-", -x
	}
	return fmt.Sprintf("%s%s%se%s%02d", sign(f), d[:1], frac, es, x)
}

// collateCompare compares two names by the Unicode root collation, as
// JavaScript's localeCompare does in most locales: by their ranks in
// collationNames (collation_table.go, written by TestCollationTable with
// -update from golang.org/x/text/collate). The binary does not link
// x/text/collate, whose init parsed a hundred locale tags on every run of
// idemkey key. Every name the suite's cases hold under a variant is in the
// table (the test checks it); another falls back to UTF-16 order.
func collateCompare(a, b []uint16) int {
	ra, oka := collationRank(string(utf16.Decode(a)))
	rb, okb := collationRank(string(utf16.Decode(b)))
	if oka && okb {
		return cmp.Compare(ra, rb)
	}
	return slices.Compare(a, b)
}

// collateSeen, when set (by the table's test), is told each name compared.
var collateSeen func(name string)

// collationRank is a name's rank in the root collation (names that
// collate alike share one), if the table has it.
func collationRank(name string) (int32, bool) {
	if collateSeen != nil {
		collateSeen(name)
	}
	i, ok := slices.BinarySearch(collationNames[:], name)
	if !ok {
		return 0, false
	}
	return collationRanks[i], true
}

// nameList returns Object.keys(args).sort(): an object's own names, an
// array's or a string's indices, sorted as strings (by UTF-16 code units).
func nameList(args value) [][]uint16 {
	var names [][]uint16
	switch args.kind {
	case 'o':
		for _, m := range args.members {
			names = append(names, m.name)
		}
	case 'a', 's':
		n := len(args.elems)
		if args.kind == 's' {
			n = len(args.str)
		}
		for i := range n {
			names = append(names, utf16.Encode([]rune(strconv.Itoa(i))))
		}
	}
	slices.SortFunc(names, slices.Compare)
	return slices.CompactFunc(names, slices.Equal)
}

// listed returns the members of object x whose names are in w.list, in
// its order, as JSON.stringify finds them with [[Get]]: a name x does not
// have is looked up on its prototype, where only "__proto__" is not a
// function (it is Object.prototype, and Object.prototype's own is null).
func (w *writer) listed(x value) []member {
	var out []member
	for _, name := range w.list {
		if i := slices.IndexFunc(x.members, func(m member) bool { return slices.Equal(m.name, name) }); i >= 0 {
			out = append(out, x.members[i])
		} else if string(utf16.Decode(name)) == "__proto__" {
			proto := value{kind: 'o', objectPrototype: true}
			if x.objectPrototype {
				proto = value{kind: 'n'}
			}
			out = append(out, member{name, proto})
		}
	}
	return out
}
