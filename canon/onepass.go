package canon

// One pass from bytes to canonical text: validation and serialization
// together, without the member index that Parse builds. Arrays and scalars
// are written where they stand. The values of an object's members are
// written, in source order, to a buffer of their own (a string without
// escapes is left in the source and only referenced); when the object
// closes, its members are sorted and the object is assembled from names
// and values into its parent's buffer, which for a member value is that
// same buffer: there it is assembled after the values and moved down over
// them. The pass gives up at the first problem; the caller then parses for
// the exact error.
//
// Each open object copies its members' text once more when it closes, so
// an object nested k objects deep is copied k times: linear for the
// shallow objects of real arguments, quadratic for a hostile chain of
// thousands. Below deepObjects open objects a value is therefore handed to
// the indexed path (Parse's index of that value alone, then the encoder),
// which is linear whatever the depth: no byte is copied more than
// deepObjects times. And a member object whose members' values (now dead)
// take deadMax bytes or more is moved down over them, so that the dead
// bytes never outgrow the live ones by more than a constant: the memory
// stays a small multiple of the input whatever its shape.

import (
	"encoding/binary"
	"errors"
	"io"
	"slices"
	"sync"
)

// errDisagree would report a bug: the one pass failed where Parse did not.
var errDisagree = errors.New("canon: internal error: the one-pass writer rejected input that Parse accepts")

// onepass is the state of one pass over src.
type onepass struct {
	src      []byte
	s        Scheme
	maxDepth int
	out      []byte      // the output
	vals     []byte      // the canonical text of the member values of the objects still open that are not in src as they are
	cur      *[]byte     // where values are written: &out, or &vals inside an object
	mems     []opMember  // members of the objects still open
	names    []byte      // decoded names (those with escapes) of the objects still open
	rank     [16]uint8   // scratch for rankSort
	tmp      []opMember  // scratch for rankSort
	memo     [8]sortMemo // orders rankSort found, kept from text to text
	at       int         // where object left a member's value in vals
	open     int         // objects open
	deep     int         // open objects from which a value takes the indexed path (deepObjects)
	dead     int         // dead bytes from which a member object is moved down (deadMax)
	sub      *parser     // the indexed path, for values below deepObjects open objects
	w        io.Writer   // where out goes when no object is open, or nil
	n        int64       // bytes written to w
	err      error       // w's first error
}

// opMember is a member of an open object: its sort key (as sortKey.key),
// its name (an offset in src, or with inArena in names), and its value's
// canonical text: src[v0:v1] when raw (a string without escapes),
// otherwise vals[v0:v1]. A dropped duplicate has v1 < 0.
type opMember struct {
	key        uint64
	name, nlen uint32
	v0, v1     int
	raw        bool
}

// init readies c for a pass over src, writing to out and, if w is not nil,
// flushing to w; it keeps the scratch memory of an earlier pass.
func (c *onepass) init(src []byte, s Scheme, out []byte, w io.Writer) {
	c.src, c.s, c.maxDepth, c.out, c.w = src, s, MaxDepth, out, w
	c.cur = &c.out
	c.vals, c.mems, c.names = c.vals[:0], c.mems[:0], c.names[:0]
	c.open, c.deep, c.dead = 0, deepObjects, deadMax
}

// deepObjects is the number of open objects below which a value takes the
// indexed path; deadMax is the size of the dead values under a member
// object from which it is moved down over them.
const (
	deepObjects = 12
	deadMax     = 256
)

func (c *onepass) name(m *opMember) []byte {
	if m.name&inArena != 0 {
		off := m.name &^ inArena
		return c.names[off : off+m.nlen]
	}
	return c.src[m.name : m.name+m.nlen]
}

func (c *onepass) flush() {
	if c.w == nil || c.err != nil {
		c.out = c.out[:0]
		return
	}
	n, err := c.w.Write(c.out)
	c.n += int64(n)
	c.err = err
	c.out = c.out[:0]
}

// root canonicalizes the whole of src, which must hold one JSON value.
func (c *onepass) root() bool {
	src := c.src
	i := skipWS(src, 0)
	if i == len(src) {
		return false
	}
	if src[i] == '[' && c.w != nil {
		// The elements of a root array are flushed one by one: the buffer
		// holds at most one of them and flushAt bytes.
		last := len(src) - 1
		for isWS(src[last]) {
			last--
		}
		c.out = append(c.out, '[')
		if j := skipWS(src, i+1); j == last && src[j] == ']' {
			c.out = append(c.out, ']')
			return true
		}
		if !c.elements(i+1, -1, last) {
			return false
		}
		c.out = append(c.out, ']')
		return true
	}
	i, ok := c.value(i, 0)
	return ok && skipWS(src, i) == len(src)
}

// value appends the canonical form of the value at src[i] to *c.cur and
// returns the offset just past it.
func (c *onepass) value(i, depth int) (int, bool) {
	switch c.src[i] {
	case '{':
		return c.object(i, depth+1, false)
	case '[':
		return c.array(i, depth+1)
	}
	b, end, ok := c.appendScalar(*c.cur, i)
	*c.cur = b
	return end, ok
}

// appendScalar appends the canonical form of the string, number or
// literal at src[i] to dst.
func (c *onepass) appendScalar(dst []byte, i int) ([]byte, int, bool) {
	src := c.src
	switch ch := src[i]; ch {
	case '"':
		end, info, err := scanString(src, i)
		if err != nil || info&strLone != 0 && c.s == JCS {
			return dst, 0, false
		}
		if info&strEscaped == 0 {
			return append(dst, src[i:end]...), end, true
		}
		return c.appendEscaped(dst, i, end), end, true
	case 't':
		if len(src)-i >= 4 && string(src[i:i+4]) == "true" {
			return append(dst, "true"...), i + 4, true
		}
	case 'f':
		if len(src)-i >= 5 && string(src[i:i+5]) == "false" {
			return append(dst, "false"...), i + 5, true
		}
	case 'n':
		if len(src)-i >= 4 && string(src[i:i+4]) == "null" {
			return append(dst, "null"...), i + 4, true
		}
	default:
		if ch == '-' || ch-'0' < 10 {
			out, end, inRange := appendNumberToken(dst, src, i)
			if end < 0 {
				return dst, 0, false
			}
			if !inRange {
				if c.s == JCS {
					return dst, 0, false // outside the double range (RFC 8785 §3.2.2.3)
				}
				out = append(out, "null"...) // JSON.stringify(Infinity)
			}
			return out, end, true
		}
	}
	return dst, 0, false
}

// appendEscaped appends the canonical form of the valid string token
// src[i:end], which has escapes.
func (c *onepass) appendEscaped(dst []byte, i, end int) []byte {
	return appendRequoted(dst, c.src[i+1:end-1])
}

func (c *onepass) array(i, depth int) (int, bool) {
	if depth > c.maxDepth {
		return 0, false
	}
	src := c.src
	*c.cur = append(*c.cur, '[')
	j := skipWS(src, i+1)
	if j < len(src) && src[j] == ']' {
		*c.cur = append(*c.cur, ']')
		return j + 1, true
	}
	for {
		if j >= len(src) {
			return 0, false
		}
		var ok bool
		if j, ok = c.value(j, depth); !ok {
			return 0, false
		}
		j = skipWS(src, j)
		if j < len(src) && src[j] == ',' {
			*c.cur = append(*c.cur, ',')
			j = skipWS(src, j+1)
			continue
		}
		if j < len(src) && src[j] == ']' {
			*c.cur = append(*c.cur, ']')
			return j + 1, true
		}
		return 0, false
	}
}

// object appends the canonical form of the object at src[i] to *c.cur and
// returns the offset just past it. As a member's value (member), it is
// assembled after its own members' values in c.vals and left there: c.at
// is where it starts, and the values before it are dead until the
// outermost object closes (an object in an array is moved down over them,
// for the array's text to be contiguous).
func (c *onepass) object(i, depth int, member bool) (int, bool) {
	if depth > c.maxDepth {
		return 0, false
	}
	src := c.src
	j := skipWS(src, i+1)
	if j < len(src) && src[j] == '}' {
		c.at = len(*c.cur)
		*c.cur = append(*c.cur, '{', '}')
		return j + 1, true
	}
	if c.open >= c.deep {
		return c.indexed(i, depth)
	}
	parent := c.cur
	c.cur = &c.vals
	vstart, mbase, nbase := len(c.vals), len(c.mems), len(c.names)
	c.open++
	j, ok := c.members(j, depth)
	if !ok {
		return 0, false
	}
	c.open--
	seg := c.mems[mbase:]
	if !c.order(seg) {
		return 0, false
	}
	c.cur = parent
	if member {
		asm := len(c.vals)
		c.vals = c.assemble(c.vals, seg)
		c.at = asm
		if asm-vstart >= c.dead {
			n := copy(c.vals[vstart:], c.vals[asm:])
			c.vals = c.vals[:vstart+n]
			c.at = vstart
		}
	} else if parent == &c.vals {
		// An element of an array in an object: assemble after the values,
		// then move down over them to where the array goes on.
		asm := len(c.vals)
		c.vals = c.assemble(c.vals, seg)
		n := copy(c.vals[vstart:], c.vals[asm:])
		c.vals = c.vals[:vstart+n]
	} else {
		*parent = c.assemble(*parent, seg)
		c.vals = c.vals[:vstart]
	}
	c.mems = c.mems[:mbase]
	c.names = c.names[:nbase]
	return j, true
}

// indexed appends the canonical form of the object at src[i], at nesting
// depth depth, to *c.cur by the indexed path: Parse's index of that object
// alone, then the encoder. It sets c.at to where the object starts, as
// object does for a member.
func (c *onepass) indexed(i, depth int) (int, bool) {
	if c.sub == nil {
		c.sub = new(parser)
	}
	p := c.sub
	p.src, p.s, p.maxDepth = c.src, c.s, c.maxDepth
	p.stack = p.stack[:0]
	objs, mems := countIndex(c.src, i)
	p.doc = Document{src: c.src, scheme: c.s, root: i, objs: grow(p.doc.objs[:0], objs), mems: grow(p.doc.mems[:0], mems), arena: p.doc.arena[:0]}
	end, err := p.value(i, depth-1)
	if err != nil {
		return 0, false
	}
	c.at = len(*c.cur)
	e := encoder{d: &p.doc, buf: grow(*c.cur, end-i)} // its size, unless numbers grow
	e.value(i)
	*c.cur = e.buf
	p.doc.src, p.src = nil, nil
	return end, true
}

// countIndex returns the number of objects and of members of the value at
// src[i], which opens a container, as far as a scan that skips strings
// (and checks nothing) tells: the sizes of its index.
func countIndex(src []byte, i int) (objs, mems int) {
	depth := 0
	for j := i; j < len(src); j++ {
		switch src[j] {
		case '"':
			for j++; j < len(src) && src[j] != '"'; j++ {
				if src[j] == '\\' {
					j++
				}
			}
		case '{':
			objs++
			depth++
		case '[':
			depth++
		case ':':
			mems++
		case '}', ']':
			if depth--; depth == 0 {
				return objs, mems
			}
		}
	}
	return objs, mems
}

// members reads the members of an object from src[j], its first member's
// name, to its closing brace, and returns the offset just past that: each
// member goes to c.mems, and its value, if it is not left in src, to
// c.vals (c.cur must be &c.vals).
func (c *onepass) members(j, depth int) (int, bool) {
	src := c.src
	for {
		if j >= len(src) || src[j] != '"' {
			return 0, false
		}
		kend, info, err := scanString(src, j)
		if err != nil || info&strLone != 0 && c.s == JCS {
			return 0, false
		}
		m := opMember{name: uint32(j + 1), nlen: uint32(kend - j - 2)}
		if info&strEscaped != 0 {
			off := len(c.names)
			c.names = appendDecoded(c.names, src[j+1:kend-1])
			m.name = uint32(off) | inArena
			m.nlen = uint32(len(c.names) - off)
			m.key = nameKey(c.s, c.names[off:], nil, 0)
		} else {
			m.key = nameKey(c.s, src[j+1:kend-1], src, j+1)
		}
		j = kend
		if j >= len(src) || src[j] != ':' {
			if j = skipWS(src, j); j >= len(src) || src[j] != ':' {
				return 0, false
			}
		}
		j = skipWS(src, j+1)
		if j >= len(src) {
			return 0, false
		}
		// Values whose canonical form is their source text stay there.
		var ok bool
		switch ch := src[j]; {
		case ch == '"':
			end, info, err := scanString(src, j)
			if err != nil || info&strLone != 0 && c.s == JCS {
				return 0, false
			}
			if info&strEscaped == 0 {
				m.v0, m.v1, m.raw = j, end, true
			} else {
				m.v0 = len(c.vals)
				c.vals = c.appendEscaped(c.vals, j, end)
				m.v1 = len(c.vals)
			}
			j = end
		case ch == '{':
			if j, ok = c.object(j, depth+1, true); !ok {
				return 0, false
			}
			m.v0, m.v1 = c.at, len(c.vals)
		case ch == '[':
			m.v0 = len(c.vals)
			if j, ok = c.array(j, depth+1); !ok {
				return 0, false
			}
			m.v1 = len(c.vals)
		default:
			m.v0 = len(c.vals)
			if c.vals, j, ok = c.appendScalar(c.vals, j); !ok {
				return 0, false
			}
			m.v1 = len(c.vals)
		}
		// Stored field by field: a copy of m in 16-byte moves would load
		// what was just stored in smaller pieces, which stalls the load.
		c.mems = append(c.mems, opMember{})
		p := &c.mems[len(c.mems)-1]
		p.key, p.name, p.nlen, p.v0, p.v1, p.raw = m.key, m.name, m.nlen, m.v0, m.v1, m.raw
		j = skipWS(src, j)
		if j < len(src) && src[j] == ',' {
			j = skipWS(src, j+1)
			continue
		}
		if j < len(src) && src[j] == '}' {
			return j + 1, true
		}
		return 0, false
	}
}

// assemble appends the object of the sorted members seg to dst. It grows
// dst once, to a bound on the object's size, so that the small copies
// need no capacity checks.
func (c *onepass) assemble(dst []byte, seg []opMember) []byte {
	src := c.src
	bound := 34
	for k := range seg {
		bound += 6*int(seg[k].nlen) + 4 + max(seg[k].v1-seg[k].v0, 0)
	}
	start := len(dst)
	dst = grow(dst, bound)
	b := dst[:cap(dst)]
	vals := c.vals // if dst is vals and has moved, the old array still holds the values
	w := start
	b[w] = '{'
	w++
	for k := range seg {
		m := &seg[k]
		if m.v1 < 0 {
			continue // a duplicate name whose value JSON.parse drops
		}
		if m.name&inArena != 0 {
			w = len(appendQuoted(b[:w], c.name(m)))
		} else {
			w += copySmall(b[w:], src[m.name-1:m.name+m.nlen+1])
		}
		b[w] = ':'
		w++
		if m.raw {
			w += copySmall(b[w:], src[m.v0:m.v1])
		} else {
			w += copySmall(b[w:], vals[m.v0:m.v1])
		}
		b[w] = ','
		w++
	}
	b[w-1] = '}'
	return b[:w]
}

// grow returns s with room for n more elements. Unlike append's growth,
// which adds a quarter past a few hundred elements and so allocates four
// times the final size on the way, it doubles: what it leaves to the
// collector stays below the final size.
func grow[T any](s []T, n int) []T {
	if cap(s)-len(s) >= n {
		return s
	}
	t := make([]T, len(s), max(2*cap(s), len(s)+n, 16))
	copy(t, s)
	return t
}

// copySmall copies src to dst and returns len(src). A short src is copied
// as one 16- or 32-byte block when the bytes after it are there to be read and
// dst has room for them: the caller ignores what lands past len(src).
func copySmall(dst, src []byte) int {
	n := len(src)
	if n <= 16 && cap(src) >= 16 && len(dst) >= 16 {
		*(*[16]byte)(dst) = *(*[16]byte)(src[:16])
		return n
	}
	if n <= 32 && cap(src) >= 32 && len(dst) >= 32 {
		*(*[32]byte)(dst) = *(*[32]byte)(src[:32])
		return n
	}
	return copy(dst, src)
}

// order sorts an object's members as parser.order does (stable, in the
// scheme's order) and marks each duplicate that the next member repeats
// with v1 = -1; under JCS a duplicate fails the pass.
func (c *onepass) order(seg []opMember) bool {
	if len(seg) < 2 {
		return true
	}
	k := 1
	for ; k < len(seg); k++ {
		if !c.less(&seg[k-1], &seg[k]) {
			break
		}
	}
	if k == len(seg) {
		return true // already in order, the common case for canonical input
	}
	if len(seg) <= len(c.rank) && (c.memoSort(seg) || c.rankSort(seg)) {
		return true
	}
	if len(seg) <= 24 {
		// Insertion sort from the first member out of order: stable, and
		// quickest for the few members most objects have.
		for ; k < len(seg); k++ {
			m := seg[k]
			j := k
			for ; j > 0; j-- {
				lt, ok := keyLess(m.key, seg[j-1].key)
				if !ok {
					lt = compareNames(c.s, c.name(&m), c.name(&seg[j-1])) < 0
				}
				if !lt {
					break
				}
				seg[j] = seg[j-1]
			}
			seg[j] = m
		}
	} else {
		slices.SortStableFunc(seg, func(a, b opMember) int {
			if a.key != b.key && (a.key|b.key)&keySlow == 0 {
				if a.key < b.key {
					return -1
				}
				return 1
			}
			return compareNames(c.s, c.name(&a), c.name(&b))
		})
	}
	for k := 1; k < len(seg); k++ {
		if !c.less(&seg[k-1], &seg[k]) {
			if c.s == JCS {
				return false
			}
			seg[k-1].v1 = -1
		}
	}
	return true
}

// rankSort sorts a few members whose keys decide every comparison (no two
// equal, none with the slow bit): each member's rank is the number of keys
// below its own, counted without a branch, so random orders cost no
// mispredicted branches. It reports false, having changed nothing, when
// the keys cannot decide.
func (c *onepass) rankSort(seg []opMember) bool {
	var or uint64
	ties := 0
	rank := c.rank[:len(seg)]
	clear(rank)
	for i := range seg {
		ki := seg[i].key
		or |= ki
		for j := i + 1; j < len(seg); j++ {
			kj := seg[j].key
			lt := b2i(kj < ki)
			rank[i] += uint8(lt)
			rank[j] += uint8(1 - lt)
			ties += b2i(kj == ki)
		}
	}
	if ties != 0 || or&keySlow != 0 {
		return false
	}
	m := &c.memo[memoSlot(seg)]
	m.n = len(seg)
	for i := range seg {
		m.keys[i] = seg[i].key
	}
	m.rank = c.rank
	c.permute(seg, rank)
	return true
}

// A sortMemo is an order rankSort found: the keys of n members, in source
// order, and each one's rank. Objects from one producer come with their
// members in one order, object after object and text after text; for them
// comparing the keys with the memo's is cheaper than ranking them again.
// The order depends on nothing but the keys, so a memo whose keys are the
// members' keys, in the same order, gives rankSort's order.
type sortMemo struct {
	n    int
	keys [16]uint64
	rank [16]uint8
}

// memoSlot is the memo that may hold the order of seg (2 to 16 members).
func memoSlot(seg []opMember) int {
	return int((seg[0].key>>40^seg[1].key>>43)+uint64(len(seg))) & 7
}

// memoSort sorts seg as rankSort would, if a memo holds its keys' order;
// it reports false, having changed nothing, if none does.
func (c *onepass) memoSort(seg []opMember) bool {
	m := &c.memo[memoSlot(seg)]
	if m.n != len(seg) {
		return false
	}
	for i := range seg {
		if m.keys[i] != seg[i].key {
			return false
		}
	}
	c.permute(seg, m.rank[:len(seg)])
	return true
}

// permute moves each member of seg to the place rank gives it.
func (c *onepass) permute(seg []opMember, rank []uint8) {
	tmp := append(c.tmp[:0], seg...)
	c.tmp = tmp
	for i := range tmp {
		seg[rank[i]] = tmp[i]
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (c *onepass) less(a, b *opMember) bool {
	if lt, ok := keyLess(a.key, b.key); ok {
		return lt
	}
	return compareNames(c.s, c.name(a), c.name(b)) < 0
}

// nameKey returns the sort key of a member name (see sortKey). When the
// name lies in src at off, a short name's prefix is loaded from there.
func nameKey(s Scheme, name, src []byte, off int) uint64 {
	if s == JS && len(name) > 0 && name[0]-'0' < 10 {
		if v, ok := arrayIndex(name); ok {
			return uint64(v)
		}
	}
	var pfx uint64
	if n := len(name); n >= 8 {
		pfx = binary.BigEndian.Uint64(name)
	} else if src != nil && off+8 <= len(src) {
		pfx = binary.BigEndian.Uint64(src[off:]) &^ (1<<(64-8*n) - 1)
	} else {
		var b [8]byte
		copy(b[:], name)
		pfx = binary.BigEndian.Uint64(b[:])
	}
	key := keyName | pfx>>2
	if pfx&msb != 0 {
		for i := 0; i < 8 && i < len(name); i++ {
			if name[i] >= 0xED {
				key |= keySlow
			}
		}
	}
	return key
}

// WriteCanonical validates src, a complete JSON text, under scheme s and
// writes its canonical form to w, in one pass and without the index that
// Parse builds: the quickest way from bytes to canonical text. The output
// equals what Parse followed by Document.WriteTo writes. On invalid input
// it returns Parse's *Error, and w may already have received part of the
// output.
//
// Unlike Parse, whose writers trust an index of bytes read earlier, it
// validates every byte as it writes it (a scan ahead for run boundaries
// only proposes them): src may be a memory-mapped file that changes
// meanwhile, which makes the output meaningless but never makes
// WriteCanonical hang or read out of bounds. If such a file is truncated, reading it faults; a
// caller that has called debug.SetPanicOnFault(true) gets the fault as a
// panic on its own goroutine, whichever goroutine hit it (see IsFault).
func WriteCanonical(w io.Writer, src []byte, s Scheme) (int64, error) {
	if err := checkEncoding(src); err != nil {
		return 0, finish(src, err)
	}
	if useParallel(src) {
		if n, werr, valid, done := writeRunsParallel(w, src, s, pieceSize); done {
			if !valid {
				return n, parseError(src, s)
			}
			return n, werr
		}
		if rw, ok := w.(Rewinder); ok {
			if n, werr, valid, done := writeObjectRuns(rw, src, s, pieceSize); done {
				if !valid {
					return n, parseError(src, s)
				}
				return n, werr
			}
		}
		// Not an array, nor an object around one: one pass on this core.
	}
	c := passPool.Get().(*onepass)
	c.init(src, s, c.out[:0], w)
	ok := c.root()
	if ok {
		c.flush()
	}
	n, err := c.n, c.err
	c.release()
	if !ok {
		return n, parseError(src, s)
	}
	return n, err
}

// passPool holds the state of one-pass writers, with their buffers, so
// that keys of many small calls do not allocate them each time.
var passPool = sync.Pool{New: func() any { return &onepass{out: make([]byte, 0, flushAt+4096)} }}

// release returns c to passPool, unless a large document left it with
// large buffers.
func (c *onepass) release() {
	if cap(c.out) > 1<<20 || cap(c.vals) > 1<<20 || cap(c.mems) > 1<<14 || cap(c.names) > 1<<20 {
		return
	}
	if p := c.sub; p != nil && (cap(p.doc.objs) > 1<<14 || cap(p.doc.mems) > 1<<14 || cap(p.doc.arena) > 1<<20 || cap(p.stack) > 1<<14) {
		c.sub = nil
	}
	c.src, c.w, c.err, c.n = nil, nil, nil, 0
	passPool.Put(c)
}

// parseError returns Parse's error for input the one pass rejected. It
// parses on the calling goroutine (Parse's error is the sequential
// parse's in any case), for the reason WriteCanonical gives.
func parseError(src []byte, s Scheme) error {
	var p Parser
	if _, err := p.parseSequential(src, s, MaxDepth); err != nil {
		return err
	}
	return errDisagree
}

// AppendCanonical is WriteCanonical appending to dst; on invalid input it
// returns dst unchanged and Parse's *Error.
func AppendCanonical(dst, src []byte, s Scheme) ([]byte, error) {
	if err := checkEncoding(src); err != nil {
		return dst, finish(src, err)
	}
	c := passPool.Get().(*onepass)
	own := c.out
	c.init(src, s, dst, nil)
	ok := c.root()
	out := c.out
	c.out = own
	c.release()
	if !ok {
		d, err := Parse(src, s)
		if err != nil {
			return dst, err
		}
		return d.Append(dst), nil // not reached: the two agree on validity
	}
	return out, nil
}
