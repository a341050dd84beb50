package canon

// The syntax layer: a validating recursive-descent parser (RFC 8259) that
// keeps the input bytes and builds a compact index of every object's
// members, sorted in the scheme's order, for the serializer to walk.

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strconv"
	"strings"
	"unsafe"
)

// Document is a valid JSON text, parsed under a scheme, ready to be written
// in canonical form. It keeps a reference to the input bytes, which must not
// change while the Document is in use.
type Document struct {
	src    []byte
	scheme Scheme
	root   int
	objs   []object // in order of their opening brace
	mems   []member // each object's members, contiguous, in canonical order
	arena  []byte   // names that contained escapes: 4-byte source offset, then the decoded name
	dups   []Duplicate

	// The ends of arrays, for skip: scanned for until the scans have read
	// as much as the input, then indexed (see arrayEnd). Both are read and
	// written atomically (a Document is read from many goroutines), with
	// sync/atomic's functions: a field of its types would make a Document,
	// and every struct holding a Parser, impossible to copy.
	walked int64
	arrs   unsafe.Pointer // *[]span
}

// span is an array's offsets: its '[' and just past its ']'.
type span struct{ start, end uint32 }

// Duplicate records a member name that appeared more than once in one
// object. Under JS the last value wins, as in JSON.parse, and the earlier
// ones are dropped; under JCS a duplicate is an error.
type Duplicate struct {
	Name    string // the decoded name
	Dropped int    // byte offset of the name whose value was dropped
	Kept    int    // byte offset of the name whose value was kept
}

type object struct {
	start, end uint32 // offsets of '{' and just past '}'
	first, n   uint32 // the members are mems[first : first+n]
}

// member is one object member. name is the offset of the name's first
// byte inside its quotes, or, with the inArena bit, of its decoded form in
// the arena (preceded by the name token's source offset); the value's
// offset is found again from the name's end when needed, which keeps the
// index at eight bytes a member.
type member struct {
	name, nlen uint32
}

const inArena = 1 << 31

// Parse validates src, a complete JSON text in UTF-8, under scheme s and
// indexes it. Invalid input yields an *Error with its position.
func Parse(src []byte, s Scheme) (*Document, error) {
	return ParseDepth(src, s, MaxDepth)
}

// ParseDepth is Parse with a nesting limit other than MaxDepth.
func ParseDepth(src []byte, s Scheme, maxDepth int) (*Document, error) {
	p := &Parser{MaxDepth: maxDepth}
	return p.Parse(src, s)
}

// A Parser parses many documents one after another and reuses its memory:
// the Document it returns is valid only until its next call to Parse. The
// zero Parser is ready to use, with the nesting limit MaxDepth.
type Parser struct {
	MaxDepth int // 0 means MaxDepth
	p        parser
}

// Parse is like the package's Parse, reusing the parser's memory.
func (pp *Parser) Parse(src []byte, s Scheme) (*Document, error) {
	if err := checkEncoding(src); err != nil {
		return nil, finish(src, err)
	}
	maxDepth := pp.MaxDepth
	if maxDepth == 0 {
		maxDepth = MaxDepth
	}
	if useParallel(src) {
		if d, ok := pp.parseParallel(src, s, maxDepth); ok {
			return d, nil
		}
	}
	return pp.parseSequential(src, s, maxDepth)
}

func (pp *Parser) parseSequential(src []byte, s Scheme, maxDepth int) (*Document, error) {
	p := &pp.p
	p.src, p.s, p.maxDepth = src, s, maxDepth
	p.stack = p.stack[:0]
	objs, mems := p.doc.objs[:0], p.doc.mems[:0]
	if len(src) > 4<<10 {
		// Size the index once, from upper bounds that cost a fast count:
		// growing it by appending would leave as much garbage as it keeps,
		// and the collector would let the process grow to twice the live
		// heap. Capacity that is never touched costs no resident memory.
		if n := bytes.Count(src, []byte{'{'}); cap(objs) < n {
			objs = make([]object, 0, n)
		}
		if n := bytes.Count(src, []byte{':'}); cap(mems) < n {
			mems = make([]member, 0, n)
		}
	}
	p.doc = Document{src: src, scheme: s, objs: objs, mems: mems, arena: p.doc.arena[:0]}
	i := skipWS(src, 0)
	if i == len(src) {
		msg := "empty input: expected a JSON value"
		if i > 0 {
			msg = "input holds only white space: expected a JSON value"
		}
		return nil, finish(src, &perr{off: i, msg: msg, hint: "the arguments must be a JSON value, e.g. {} or null"})
	}
	p.doc.root = i
	end, err := p.value(i, 0)
	if err == nil {
		if j := skipWS(src, end); j < len(src) {
			err = errAt(j, "unexpected %s after the JSON value", describe(src, j))
			err.hint = "the input must hold exactly one JSON value"
		}
	}
	if err != nil {
		return nil, finish(src, err)
	}
	return &p.doc, nil
}

// checkEncoding rejects input that is not UTF-8 JSON at all, with a
// diagnosis better than "invalid character".
func checkEncoding(src []byte) *perr {
	if len(src) > MaxSize {
		return &perr{off: 0, msg: "input larger than " + strconv.Itoa(MaxSize) + " bytes"}
	}
	switch {
	case len(src) >= 4 && src[0]|src[1]|src[2]|src[3] == 0:
		// UTF-16 and UTF-32 put a character in the first four bytes.
		return &perr{off: 0, msg: "input starts with NUL bytes: it is not JSON text", hint: "JSON never holds a NUL byte; check the file (or device) given"}
	case len(src) >= 2 && (src[0] == 0xFE && src[1] == 0xFF || src[0] == 0xFF && src[1] == 0xFE),
		len(src) >= 2 && (src[0] == 0 || src[1] == 0):
		return &perr{off: 0, msg: "input looks like UTF-16; JSON must be UTF-8", hint: "convert it first, e.g. iconv -f UTF-16 -t UTF-8"}
	case len(src) >= 3 && src[0] == 0xEF && src[1] == 0xBB && src[2] == 0xBF:
		return &perr{off: 0, msg: "input starts with a UTF-8 byte order mark", hint: "JSON.parse rejects it too; remove the first three bytes"}
	}
	return nil
}

type parser struct {
	src      []byte
	s        Scheme
	maxDepth int
	doc      Document
	stack    []member  // members of the objects still open
	keys     []sortKey // scratch for order
}

func (p *parser) value(i, depth int) (int, *perr) {
	src := p.src
	switch c := src[i]; c {
	case '{':
		return p.object(i, depth+1)
	case '[':
		return p.array(i, depth+1)
	case '"':
		end, info, err := scanString(src, i)
		if err != nil {
			return 0, err
		}
		if info&strLone != 0 && p.s == JCS {
			return 0, p.loneErr(i, end)
		}
		return end, nil
	case 't':
		return p.literal(i, "true")
	case 'f':
		return p.literal(i, "false")
	case 'n':
		return p.literal(i, "null")
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			end, integer, err := scanNumber(src, i)
			if err != nil {
				return 0, err
			}
			// Only an exponent or over 300 digits can leave the double range.
			if p.s == JCS && (end-i > 300 || !integer && hasExponent(src[i:end])) {
				if _, ok := ParseNumber(src[i:end]); !ok {
					e := errAt(i, "number %s is outside the IEEE-754 double range", src[i:end])
					e.hint = "RFC 8785 §3.2.2.3 accepts only finite doubles; the js scheme writes null as JSON.stringify does"
					return 0, e
				}
			}
			return end, nil
		}
		return 0, p.unexpected(i, "looking for a value")
	}
}

func (p *parser) unexpected(i int, looking string) *perr {
	e := errAt(i, "unexpected %s %s", describe(p.src, i), looking)
	if i < len(p.src) {
		switch c := p.src[i]; {
		case c == '\'':
			e.hint = "JSON strings use double quotes"
		case c == '/':
			e.hint = "JSON has no comments"
		case c == '+':
			e.hint = "JSON numbers have no leading '+'"
		case c == '.':
			e.hint = "write 0.5, not .5"
		case isLetter(c):
			e.hint = wordHint(word(p.src, i))
		case invalidUTF8At(p.src, i):
			e.hint = utf8Hint
		}
	}
	return e
}

// unclosed adds to an error at the end of input a hint that names where
// the unclosed array or object (what) at src[open] starts.
func (p *parser) unclosed(e *perr, what string, open int) *perr {
	if e.off >= len(p.src) && e.hint == "" {
		line, col := Position(p.src, open)
		e.relLine, e.relCol = line, col
		e.hint = "the " + what + " opened at line " + strconv.Itoa(line) + ", column " + strconv.Itoa(col) + " is not closed"
	}
	return e
}

func (p *parser) literal(i int, lit string) (int, *perr) {
	if len(p.src)-i >= len(lit) && string(p.src[i:i+len(lit)]) == lit {
		return i + len(lit), nil
	}
	w := word(p.src, i)
	if strings.HasPrefix(lit, w) {
		// Cut short: "tru" at the end of input or before a ']'.
		if i+len(w) == len(p.src) {
			return 0, errAt(i, "invalid literal: expected %s", lit)
		}
		return 0, errAt(i, "invalid literal %s: expected %s", quoteWord(w), lit)
	}
	e := errAt(i, "invalid literal %s", quoteWord(w))
	if e.hint = wordHint(w); e.hint == "" {
		e.hint = "JSON's literals are true, false and null; a string needs double quotes"
	}
	return 0, e
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// word returns the run of ASCII letters, digits and '_' at src[i], at
// most 40 bytes of it.
func word(src []byte, i int) string {
	j := i
	for j < len(src) && j-i < 40 && (isLetter(src[j]) || src[j] >= '0' && src[j] <= '9' || src[j] == '_') {
		j++
	}
	return string(src[i:j])
}

func quoteWord(w string) string {
	if len(w) == 40 {
		w += "…"
	}
	return "'" + w + "'"
}

// wordHint explains a word that other languages write for a JSON value,
// or returns "".
func wordHint(w string) string {
	switch strings.ToLower(w) {
	case "nan", "inf", "infinity":
		return "NaN and Infinity are not JSON values"
	case "true", "false", "null":
		return "JSON's literals are lower case: true, false, null"
	case "none", "nil", "undefined":
		return "JSON writes an absent value as null"
	}
	return ""
}

func (p *parser) loneErr(start, end int) *perr {
	body := p.src[start+1 : end-1]
	for k := 0; k+5 < len(body); k++ {
		if body[k] == '\\' {
			if body[k+1] == 'u' {
				v := hex4(body, k+2)
				if v >= 0xD800 && v < 0xE000 {
					if v < 0xDC00 && k+11 < len(body) && body[k+6] == '\\' && body[k+7] == 'u' {
						if w := hex4(body, k+8); w >= 0xDC00 && w < 0xE000 {
							k += 11
							continue
						}
					}
					e := errAt(start+1+k, "lone surrogate \\u%04x in string", v)
					e.hint = "RFC 8785 requires I-JSON (RFC 7493 §2.1): strings must be valid Unicode; the js scheme keeps them"
					return e
				}
			}
			k++
		}
	}
	return errAt(start, "lone surrogate in string")
}

func (p *parser) object(i, depth int) (int, *perr) {
	if depth > p.maxDepth {
		return 0, &perr{off: i, msg: "nesting deeper than " + strconv.Itoa(p.maxDepth) + " levels", hint: "the reference harness fails on such input too"}
	}
	src := p.src
	d := &p.doc
	idx := len(d.objs)
	d.objs = append(grow(d.objs, 1), object{start: uint32(i)})
	base := len(p.stack)
	j := skipWS(src, i+1)
	if j < len(src) && src[j] == '}' {
		d.objs[idx].end = uint32(j + 1)
		d.objs[idx].first = uint32(len(d.mems))
		return j + 1, nil
	}
	for {
		if j >= len(src) || src[j] != '"' {
			if j < len(src) && src[j] == '}' {
				e := errAt(j, "trailing comma before '}'")
				e.hint = "JSON does not allow a comma after the last member"
				return 0, e
			}
			return 0, p.unclosed(p.unexpected(j, "looking for a member name (a string)"), "object", i)
		}
		end, err := p.member(i, j, depth)
		if err != nil {
			return 0, err
		}
		j = skipWS(src, end)
		if j < len(src) && src[j] == ',' {
			j = skipWS(src, j+1)
			continue
		}
		if j < len(src) && src[j] == '}' {
			j++
			break
		}
		return 0, p.unclosed(p.unexpected(j, "after an object member (want ',' or '}')"), "object", i)
	}
	seg := p.stack[base:]
	dups, err := p.order(seg)
	if err != nil {
		return 0, err
	}
	first := len(d.mems)
	d.mems = append(grow(d.mems, len(seg)), seg...)
	if dups {
		d.mems = p.dedupe(d.mems, first)
	}
	p.stack = p.stack[:base]
	d.objs[idx].end = uint32(j)
	d.objs[idx].first = uint32(first)
	d.objs[idx].n = uint32(len(d.mems) - first)
	return j, nil
}

// member parses one member, "name": value, whose name starts at src[j]
// in the object that opens at src[i], pushes it on the stack of open
// members, and returns the offset just past the value.
func (p *parser) member(i, j, depth int) (int, *perr) {
	src := p.src
	d := &p.doc
	kend, info, err := scanString(src, j)
	if err != nil {
		return 0, err
	}
	if info&strLone != 0 && p.s == JCS {
		return 0, p.loneErr(j, kend)
	}
	m := member{name: uint32(j + 1), nlen: uint32(kend - j - 2)}
	if info&strEscaped != 0 {
		off := len(d.arena)
		d.arena = binary.LittleEndian.AppendUint32(d.arena, uint32(j))
		d.arena = appendDecoded(d.arena, src[j+1:kend-1])
		m.name = uint32(off+4) | inArena
		m.nlen = uint32(len(d.arena) - off - 4)
	}
	j = skipWS(src, kend)
	if j >= len(src) || src[j] != ':' {
		return 0, p.unclosed(p.unexpected(j, "after a member name (want ':')"), "object", i)
	}
	j = skipWS(src, j+1)
	if j >= len(src) {
		return 0, p.unclosed(errAt(j, "unexpected end of input looking for a value"), "object", i)
	}
	end, err := p.value(j, depth)
	if err != nil {
		err.path = append(err.path, PointerToken(string(d.name(m))))
		return 0, err
	}
	p.stack = append(grow(p.stack, 1), m)
	return end, nil
}

// sortKey is a member and a 64-bit key that decides most comparisons by
// itself: under JS an array-index name's key is its index, below every
// other name's; another name's key is 1<<62 plus the first eight bytes of
// the name (big-endian, zero-padded), less its two lowest bits. Keys that
// differ order their names, unless one has the slow bit: its prefix has a
// byte that starts U+D000 or above, where UTF-8 and UTF-16 orders part.
// Equal keys leave the decision to compareNames.
type sortKey struct {
	key uint64
	m   member
}

const (
	keyName = 1 << 62
	keySlow = 1 << 63
)

func (p *parser) sortKey(m member) sortKey {
	if m.name&inArena != 0 {
		return sortKey{nameKey(p.s, p.doc.name(m), nil, 0), m}
	}
	return sortKey{nameKey(p.s, p.doc.name(m), p.src, int(m.name)), m}
}

// less orders two members as compareNames orders their names.
func (p *parser) less(a, b *sortKey) bool {
	if lt, ok := keyLess(a.key, b.key); ok {
		return lt
	}
	return p.compare(a, b) < 0
}

// keyLess compares two keys; ok is false when the keys cannot decide.
func keyLess(x, y uint64) (lt, ok bool) {
	return x < y, x != y && (x|y)&keySlow == 0
}

func (p *parser) compare(a, b *sortKey) int {
	return compareNames(p.s, p.doc.name(a.m), p.doc.name(b.m))
}

// order sorts an object's members in the scheme's order (stable, so that
// equal names stay in source order) and reports whether a name repeats;
// under JCS a repeated name is an error.
func (p *parser) order(seg []member) (bool, *perr) {
	if len(seg) < 2 {
		return false, nil
	}
	keys := p.keys[:0]
	for _, m := range seg {
		keys = append(keys, p.sortKey(m))
	}
	p.keys = keys
	sorted := true
	for k := 1; k < len(keys); k++ {
		lt, ok := keyLess(keys[k-1].key, keys[k].key)
		if !ok {
			lt = p.compare(&keys[k-1], &keys[k]) < 0
		}
		if !lt {
			sorted = false
			break
		}
	}
	if sorted {
		return false, nil
	}
	if len(keys) <= 24 {
		// Insertion sort: stable, and quickest for the few members most
		// objects have.
		for k := 1; k < len(keys); k++ {
			for j := k; j > 0; j-- {
				lt, ok := keyLess(keys[j].key, keys[j-1].key)
				if !ok {
					lt = p.compare(&keys[j], &keys[j-1]) < 0
				}
				if !lt {
					break
				}
				keys[j-1], keys[j] = keys[j], keys[j-1]
			}
		}
	} else {
		slices.SortStableFunc(keys, func(a, b sortKey) int {
			if a.key != b.key && (a.key|b.key)&keySlow == 0 {
				if a.key < b.key {
					return -1
				}
				return 1
			}
			return p.compare(&a, &b)
		})
	}
	dups := false
	for k := range keys {
		seg[k] = keys[k].m
		if k == 0 {
			continue
		}
		if lt, ok := keyLess(keys[k-1].key, keys[k].key); ok && lt || !ok && p.compare(&keys[k-1], &keys[k]) < 0 {
			continue
		}
		dups = true
		if p.s == JCS {
			d := &p.doc
			first, second := d.nameOffset(keys[k-1].m), d.nameOffset(keys[k].m)
			e := errAt(second, "duplicate member name %s", AppendQuoted(nil, string(d.name(keys[k].m))))
			line, col := Position(p.src, first)
			e.relLine, e.relCol = line, col
			e.hint = "first defined at line " + strconv.Itoa(line) + ", column " + strconv.Itoa(col) + "; RFC 8785 requires unique names (the js scheme keeps the last value)"
			return false, e
		}
	}
	return dups, nil
}

// dedupe drops, from the sorted members in mems[first:], every member
// whose name the next member repeats: JSON.parse keeps the last value.
func (p *parser) dedupe(mems []member, first int) []member {
	d := &p.doc
	w := first
	for k := first; k < len(mems); k++ {
		if k+1 < len(mems) && string(d.name(mems[k])) == string(d.name(mems[k+1])) {
			d.dups = append(d.dups, Duplicate{
				Name:    string(d.name(mems[k])),
				Dropped: d.nameOffset(mems[k]),
				Kept:    d.nameOffset(mems[k+1]),
			})
			continue
		}
		mems[w] = mems[k]
		w++
	}
	return mems[:w]
}

func (p *parser) array(i, depth int) (int, *perr) {
	if depth > p.maxDepth {
		return 0, &perr{off: i, msg: "nesting deeper than " + strconv.Itoa(p.maxDepth) + " levels", hint: "the reference harness fails on such input too"}
	}
	src := p.src
	j := skipWS(src, i+1)
	if j < len(src) && src[j] == ']' {
		return j + 1, nil
	}
	for n := 0; ; n++ {
		if j >= len(src) {
			return 0, p.unclosed(errAt(j, "unexpected end of input looking for a value"), "array", i)
		}
		if src[j] == ']' && n > 0 {
			e := errAt(j, "trailing comma before ']'")
			e.hint = "JSON does not allow a comma after the last element"
			return 0, e
		}
		end, err := p.value(j, depth)
		if err != nil {
			err.path = append(err.path, strconv.Itoa(n))
			return 0, err
		}
		j = skipWS(src, end)
		if j < len(src) && src[j] == ',' {
			j = skipWS(src, j+1)
			continue
		}
		if j < len(src) && src[j] == ']' {
			return j + 1, nil
		}
		return 0, p.unclosed(p.unexpected(j, "after an array element (want ',' or ']')"), "array", i)
	}
}

// name returns a member's decoded name.
func (d *Document) name(m member) []byte {
	if m.name&inArena != 0 {
		off := m.name &^ inArena
		return d.arena[off : off+m.nlen]
	}
	return d.src[m.name : m.name+m.nlen]
}

// valueOffset returns the source offset of a member's value.
func (d *Document) valueOffset(m member) int {
	var j int
	if m.name&inArena != 0 {
		j, _ = stringEnd(d.src, d.nameOffset(m))
	} else {
		j = int(m.name+m.nlen) + 1
	}
	j = skipWS(d.src, j) // at the colon
	return skipWS(d.src, j+1)
}

// nameOffset returns the source offset of a member name's opening quote.
func (d *Document) nameOffset(m member) int {
	if m.name&inArena != 0 {
		off := m.name &^ inArena
		return int(binary.LittleEndian.Uint32(d.arena[off-4:]))
	}
	return int(m.name) - 1
}

// Duplicates lists the member names that appeared more than once in an
// object (JS scheme only: under JCS they are errors), in the order their
// objects closed.
func (d *Document) Duplicates() []Duplicate { return d.dups }

// Scheme returns the scheme the document was parsed under.
func (d *Document) Scheme() Scheme { return d.scheme }

// Position returns the 1-based line and column (in characters) of a byte
// offset in src.
func Position(src []byte, off int) (line, col int) {
	e := finish(src, &perr{off: off})
	return e.Line, e.Column
}
