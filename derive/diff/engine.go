// Package diff compares two tool calls and explains, difference by
// difference, why their idempotency keys differ (or why two calls that look
// different share one). It is the engine behind idemkey diff and the
// variation classifier behind idemkey drift: it takes parsed values and
// returns plain results; it reads no file and knows no command line.
//
// The engine walks two parsed values in parallel, as the scheme sees them
// (members in canonical order, duplicates resolved), and records three things:
//
//   - differences: every place where the canonical texts differ, which is
//     what changes the key;
//   - notes: what canonicalization absorbed where the canonical texts agree
//     but the source texts do not (member order, whitespace, number and
//     string spelling), for --explain;
//   - warnings: findings that do not change the verdict but that a reader
//     must see (two different numbers that collapse to one double, a number
//     out of range written as null, a duplicate member name).
//
// Cost: a subtree whose source bytes are equal on both sides is skipped
// with one memcmp. Array elements are compared by a 64-bit hash of their
// canonical text, so an array is aligned in O(n) hashing plus a bounded
// Myers diff; a value is hashed once per enclosing array that differs.
// Past the first max entries of each list only counts are kept, so the
// pointer strings, values and reasons of omitted entries are never built.
package diff

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/idemkey/idemkey/canon"
	"golang.org/x/text/unicode/norm"
	"golang.org/x/text/unicode/runenames"
)

// Difference kinds: what changes the key.
const (
	KindTask          = "task"                   // the task ids differ
	KindTool          = "tool"                   // the tool names differ
	KindType          = "type"                   // values of different JSON types
	KindNullMissing   = "null-vs-missing"        // a member set to null on one side, absent on the other
	KindMemberAdded   = "member-added"           // a member only b has
	KindMemberRemoved = "member-removed"         // a member only a has
	KindElemInserted  = "element-inserted"       // an array element only b has
	KindElemRemoved   = "element-removed"        // an array element only a has
	KindElemMoved     = "element-moved"          // the same element at another index
	KindReordered     = "reordered"              // an array with the same elements in another order
	KindValue         = "value"                  // a different number, string or boolean
	KindNormalization = "unicode-normalization"  // the same text in NFC and NFD (or other forms)
	KindInvisible     = "invisible-character"    // zero-width space, BOM, soft hyphen, …
	KindNBSP          = "non-breaking-space"     // U+00A0 (or another space) where the other has U+0020
	KindTrailingWS    = "trailing-whitespace"    // whitespace at the end of one string only
	KindLeadingWS     = "leading-whitespace"     // whitespace at the start of one string only
	KindSurroundWS    = "surrounding-whitespace" // both
	KindCase          = "letter-case"            // the same letters in another case
	KindLookAlike     = "look-alike"             // several of the above at once
	KindMixedScript   = "mixed-script"           // a letter from another script that looks the same (Cyrillic І for Latin I)
	KindUnexplained   = "unexplained"            // the keys differ but no difference was found (a bug)
)

// Note kinds: what canonicalization absorbed (--explain).
const (
	NoteMemberOrder  = "member-order"
	NoteWhitespace   = "whitespace"
	NoteNumberFormat = "number-format"
	NoteStringEscape = "string-escape"
	NoteNameEscape   = "name-escape"
)

// Warning kinds.
const (
	WarnCollapsed  = "collapsed-number"
	WarnOutOfRange = "out-of-range-number"
	WarnDuplicate  = "duplicate-member"
	WarnAlignment  = "approximate-alignment"
)

// Value is one side's value in an Entry: a parsed node, a plain string (a
// task id, tool name or member name), or absent.
type Value struct {
	has  bool
	node *canon.Node
	str  string
}

func nodeVal(n canon.Node) Value { return Value{has: true, node: &n} }
func strVal(s string) Value      { return Value{has: true, str: s} }

// Has reports whether the side has a value here.
func (v Value) Has() bool { return v.has }

// Node returns the parsed value, when the side has one that is a node
// (not a task id, tool or member name).
func (v Value) Node() (canon.Node, bool) {
	if v.node == nil {
		return canon.Node{}, false
	}
	return *v.node, true
}

// Canonical returns the value's canonical JSON text (nil when absent).
func (v Value) Canonical() []byte {
	switch {
	case !v.has:
		return nil
	case v.node != nil:
		return v.node.Append(nil)
	}
	return canon.AppendQuoted(nil, v.str)
}

// Entry is one difference, note or warning.
type Entry struct {
	Pointer  string // RFC 6901, into the call record {"task","tool","args"}
	PointerB string // the pointer in b, when it differs from Pointer (array indices)
	Kind     string
	A, B     Value
	RawA     string // notes and warnings: the source texts
	RawB     string
	Reason   string
}

// List keeps the first max entries and counts the rest.
type List struct {
	Max     int // 0: no limit
	Items   []Entry
	Omitted int // entries counted but not kept
}

// room reports whether another Entry would be kept; when not, it counts it.
func (l *List) room() bool {
	if l.Max > 0 && len(l.Items) >= l.Max {
		l.Omitted++
		return false
	}
	return true
}

func (l *List) Total() int { return len(l.Items) + l.Omitted }

// token is one JSON Pointer reference token: a member name or an index.
type token struct {
	name string
	idx  int // >= 0: an array index
}

// engine compares two values under one scheme.
type engine struct {
	scheme  canon.Scheme
	explain bool

	diffs, notes, warns List

	pa, pb []token // the current pointers into a and b
	buf    []byte
	seed   maphash.Seed

	// alignBudget bounds the Myers search per array (edit-graph steps).
	alignBudget int

	// same is the last run of equal source bytes found (see equal); hashes
	// are the canonical hashes of containers, by document and offset.
	same   sameRun
	hashes map[nodeKey]uint64
}

// sameRun is a run of n equal bytes at offset a of doc da's source and
// offset b of db's; with diff, the bytes just past it differ.
type sameRun struct {
	da, db *canon.Document
	a, b   int
	n      int
	diff   bool
}

type nodeKey struct {
	d   *canon.Document
	off int
}

func newEngine(s canon.Scheme, max int, explain bool) *engine {
	return &engine{
		scheme:      s,
		explain:     explain,
		diffs:       List{Max: max},
		notes:       List{Max: max},
		warns:       List{Max: max},
		seed:        maphash.MakeSeed(),
		alignBudget: 4 << 20,
	}
}

func pointerOf(ts []token) string {
	var b strings.Builder
	for _, t := range ts {
		b.WriteByte('/')
		if t.idx >= 0 {
			b.WriteString(strconv.Itoa(t.idx))
		} else {
			b.WriteString(canon.PointerToken(t.name))
		}
	}
	return b.String()
}

func (e *engine) push(a, b token) {
	if len(e.pa) == cap(e.pa) {
		// Doubling: deep values push thousands, and append's growth would
		// allocate four times the final stack on the way.
		e.pa = append(make([]token, 0, 2*cap(e.pa)+16), e.pa...)
		e.pb = append(make([]token, 0, 2*cap(e.pb)+16), e.pb...)
	}
	e.pa, e.pb = append(e.pa, a), append(e.pb, b)
}
func (e *engine) pop() { e.pa, e.pb = e.pa[:len(e.pa)-1], e.pb[:len(e.pb)-1] }

// add records an Entry at the current pointers.
func (e *engine) add(l *List, kind string, a, b Value, reason string) {
	pa, pb := pointerOf(e.pa), pointerOf(e.pb)
	en := Entry{Pointer: pa, Kind: kind, A: a, B: b, Reason: reason}
	if pb != pa {
		en.PointerB = pb
	}
	l.Items = append(l.Items, en)
}

func (e *engine) addRaw(l *List, kind, rawA, rawB, reason string) {
	e.add(l, kind, Value{}, Value{}, reason)
	l.Items[len(l.Items)-1].RawA = rawA
	l.Items[len(l.Items)-1].RawB = rawB
}

// compareCalls compares two calls: task, tool, then the arguments.
func (e *engine) compareCalls(a, b *Side) {
	if a.Task != b.Task && e.diffs.room() {
		e.push(token{name: "task", idx: -1}, token{name: "task", idx: -1})
		kind, why := lookAlike(a.Task, b.Task)
		e.add(&e.diffs, KindTask, strVal(a.Task), strVal(b.Task), "the task id differs: the key is scoped by the task"+lookAlikeSuffix(kind, why))
		e.pop()
	}
	if a.Tool != b.Tool && e.diffs.room() {
		e.push(token{name: "tool", idx: -1}, token{name: "tool", idx: -1})
		kind, why := lookAlike(a.Tool, b.Tool)
		e.add(&e.diffs, KindTool, strVal(a.Tool), strVal(b.Tool), "the tool name differs: the key is scoped by the tool"+lookAlikeSuffix(kind, why))
		e.pop()
	}
	e.push(token{name: "args", idx: -1}, token{name: "args", idx: -1})
	if e.explain {
		e.whitespace(a.Args.Raw(), b.Args.Raw())
	}
	e.value(a.Args, b.Args)
	e.pop()
}

func lookAlikeSuffix(kind, why string) string {
	if kind == KindValue {
		return ""
	}
	return "; they look alike: " + why
}

// ckind is the type of a value as the canonical form writes it: under js a
// number outside the double range is written as null, and both booleans are
// one type.
func (e *engine) ckind(n canon.Node) canon.Kind {
	switch k := n.Kind(); k {
	case canon.False:
		return canon.True
	case canon.Number:
		if e.scheme == canon.JS {
			if _, ok := n.Float(); !ok {
				return canon.Null
			}
		}
		return k
	default:
		return k
	}
}

// TypeName names a JSON type in messages (both booleans are "boolean").
func TypeName(k canon.Kind) string {
	switch k {
	case canon.True, canon.False:
		return "boolean"
	}
	return k.String()
}

// Article prefixes s with "a" or "an".
func Article(s string) string {
	if strings.IndexByte("aeiou", s[0]) >= 0 {
		return "an " + s
	}
	return "a " + s
}

// value compares two values at the current pointers.
func (e *engine) value(a, b canon.Node) {
	if e.equal(a, b) {
		return
	}
	switch ka, kb := e.ckind(a), e.ckind(b); {
	case ka != kb:
		e.typeDiff(a, b, ka, kb)
	case ka == canon.Object:
		e.object(a, b)
	case ka == canon.Array:
		e.array(a, b)
	default:
		e.scalar(a, b, ka)
	}
}

// typeDiff reports values of different types.
func (e *engine) typeDiff(a, b canon.Node, ka, kb canon.Kind) {
	if e.diffs.room() {
		e.add(&e.diffs, KindType, nodeVal(a), nodeVal(b), typeReason(a, b, ka, kb))
	}
}

// scalar compares two scalars of kind k (as ckind sees them).
func (e *engine) scalar(a, b canon.Node, k canon.Kind) {
	switch k {
	case canon.String:
		e.str(a, b)
	case canon.Number:
		e.number(a, b)
	case canon.Null:
		e.nulls(a, b)
	case canon.True:
		if a.Kind() != b.Kind() && e.diffs.room() {
			e.add(&e.diffs, KindValue, nodeVal(a), nodeVal(b), "the booleans differ")
		}
	}
}

func typeReason(a, b canon.Node, ka, kb canon.Kind) string {
	ta, tb := TypeName(ka), TypeName(kb)
	s := fmt.Sprintf("%s in a, %s in b: values of different types never share a key", Article(ta), Article(tb))
	switch {
	case ka == canon.Number && kb == canon.String && b.Text() == a.Text(),
		kb == canon.Number && ka == canon.String && a.Text() == b.Text():
		s = fmt.Sprintf("%s in a, %s in b: the number %s and the string \"%s\" are different values", Article(ta), Article(tb), numText(a, b), numText(a, b))
	case ka == canon.Array && kb == canon.Object || ka == canon.Object && kb == canon.Array:
		s = fmt.Sprintf("%s in a, %s in b: arrays and objects never share a key, even empty ones", Article(ta), Article(tb))
	case ka == canon.Null || kb == canon.Null:
		s += " (null is a value of its own)"
	}
	return s
}

func numText(a, b canon.Node) string {
	if a.Kind() == canon.Number {
		return a.Text()
	}
	return b.Text()
}

// object compares two objects member by member, in canonical order. It
// lies on the recursion's path, once per level of nesting, so what it
// needs only to plan the walk lives in memberPlan: a small frame here
// keeps the stack of a value nested 10,000 deep small.
func (e *engine) object(a, b canon.Node) {
	ma, mb := a.Members(), b.Members()
	if e.explain {
		e.memberOrder(a, b, ma, mb)
	}
	for _, st := range memberPlan(ma, mb) {
		switch st.op {
		case stepSame:
			e.member(ma[st.i], mb[st.j])
		case stepRenamed:
			e.renamed(ma[st.i], mb[st.j])
		case stepRemoved:
			e.removedMember(ma[st.i], true)
		case stepAdded:
			e.removedMember(mb[st.j], false)
		}
	}
}

// A memberStep is one step of the walk of two objects' members.
type memberStep struct {
	op   uint8
	i, j int32 // indices into a's and b's members
}

const (
	stepSame    = iota // the same name on both sides
	stepRenamed        // names that look alike
	stepRemoved        // a member only a has
	stepAdded          // a member only b has
)

// memberPlan pairs the members of two objects, both in canonical order:
// by name, and a removed name with an added one that looks the same.
func memberPlan(ma, mb []canon.Member) []memberStep {
	plan := make([]memberStep, 0, max(len(ma), len(mb)))
	same := len(ma) == len(mb)
	if same {
		for k := range ma {
			if ma[k].Name != mb[k].Name {
				same = false
				break
			}
		}
	}
	if same {
		for k := range ma {
			plan = append(plan, memberStep{stepSame, int32(k), int32(k)})
		}
		return plan
	}
	inA := make(map[string]bool, len(ma))
	for _, m := range ma {
		inA[m.Name] = true
	}
	inB := make(map[string]bool, len(mb))
	var added []int
	for j, m := range mb {
		inB[m.Name] = true
		if !inA[m.Name] {
			added = append(added, j)
		}
	}
	// Pair a removed name with an added one that looks the same.
	pairOf := map[int]int{} // index in ma → index in mb
	pairedB := map[int]bool{}
	if len(added) > 0 {
		bySkel := map[string][]int{}
		for _, j := range added {
			s := skeleton(mb[j].Name)
			bySkel[s] = append(bySkel[s], j)
		}
		for i, m := range ma {
			if inB[m.Name] {
				continue
			}
			if js := bySkel[skeleton(m.Name)]; len(js) == 1 && !pairedB[js[0]] {
				pairOf[i] = js[0]
				pairedB[js[0]] = true
			}
		}
	}
	i, j := 0, 0
	for i < len(ma) || j < len(mb) {
		switch {
		case i < len(ma) && !inB[ma[i].Name]:
			if pj, ok := pairOf[i]; ok {
				plan = append(plan, memberStep{stepRenamed, int32(i), int32(pj)})
			} else {
				plan = append(plan, memberStep{stepRemoved, int32(i), 0})
			}
			i++
		case j < len(mb) && !inA[mb[j].Name]:
			if !pairedB[j] {
				plan = append(plan, memberStep{stepAdded, 0, int32(j)})
			}
			j++
		default:
			plan = append(plan, memberStep{stepSame, int32(i), int32(j)})
			i++
			j++
		}
	}
	return plan
}

func (e *engine) member(ma, mb canon.Member) {
	e.push(token{name: ma.Name, idx: -1}, token{name: mb.Name, idx: -1})
	if e.explain {
		e.nameEscapes(ma, mb)
	}
	e.value(ma.Value, mb.Value)
	e.pop()
}

// nameEscapes notes a member name spelled with different escapes.
func (e *engine) nameEscapes(ma, mb canon.Member) {
	ra, rb := nameToken(ma), nameToken(mb)
	if !bytes.Equal(ra, rb) && e.notes.room() {
		e.addRaw(&e.notes, NoteNameEscape, string(ra), string(rb),
			"the member name is spelled with different escapes; the canonical form writes it "+string(canon.AppendQuoted(nil, ma.Name)))
	}
}

// renamed reports a member whose name differs only in a look-alike way and
// then compares the two values.
func (e *engine) renamed(ma, mb canon.Member) {
	e.push(token{name: ma.Name, idx: -1}, token{name: mb.Name, idx: -1})
	if e.diffs.room() {
		kind, why := lookAlike(ma.Name, mb.Name)
		e.add(&e.diffs, kind, strVal(ma.Name), strVal(mb.Name), "the member names look alike but differ: "+why)
	}
	e.value(ma.Value, mb.Value)
	e.pop()
}

// removedMember reports a member that only one side has (inA: only a).
func (e *engine) removedMember(m canon.Member, inA bool) {
	if !e.diffs.room() {
		return
	}
	tok := token{name: m.Name, idx: -1}
	e.push(tok, tok)
	kind := KindMemberAdded
	a, b := Value{}, nodeVal(m.Value)
	side, other := "b", "a"
	if inA {
		kind, a, b = KindMemberRemoved, nodeVal(m.Value), Value{}
		side, other = "a", "b"
	}
	reason := fmt.Sprintf("only %s has the member %s", side, canon.AppendQuoted(nil, m.Name))
	if e.ckind(m.Value) == canon.Null {
		kind = KindNullMissing
		reason = fmt.Sprintf("%s sets the member to null, %s does not have it: a null member and a missing one are different values", side, other)
	}
	e.add(&e.diffs, kind, a, b, reason)
	e.pop()
}

// memberOrder notes an object whose common members are written in a
// different order on the two sides.
func (e *engine) memberOrder(a, b canon.Node, ma, mb []canon.Member) {
	if len(ma) < 2 || len(mb) < 2 {
		return
	}
	order := func(ms []canon.Member, other []canon.Member) []string {
		in := make(map[string]bool, len(other))
		for _, m := range other {
			in[m.Name] = true
		}
		s := slices.Clone(ms)
		slices.SortFunc(s, func(x, y canon.Member) int { return x.NameOffset - y.NameOffset })
		var names []string
		for _, m := range s {
			if in[m.Name] {
				names = append(names, m.Name)
			}
		}
		return names
	}
	oa, ob := order(ma, mb), order(mb, ma)
	if slices.Equal(oa, ob) || !e.notes.room() {
		return
	}
	e.addRaw(&e.notes, NoteMemberOrder, nameList(oa), nameList(ob),
		"members are written in another order; the canonical form sorts them by name")
}

func nameList(names []string) string {
	var b []byte
	for k, n := range names {
		if k == 8 {
			b = fmt.Appendf(b, ", … (%d more)", len(names)-k)
			break
		}
		if k > 0 {
			b = append(b, ", "...)
		}
		b = canon.AppendQuoted(b, n)
	}
	return string(b)
}

// nameToken returns a member name's source token, quotes included.
func nameToken(m canon.Member) []byte {
	src := m.Value.Document().Source()
	i := m.NameOffset + 1
	for i < len(src) && src[i] != '"' {
		if src[i] == '\\' {
			i++
		}
		i++
	}
	return src[m.NameOffset : i+1]
}

func (e *engine) str(a, b canon.Node) {
	ta, tb := a.Text(), b.Text()
	if ta == tb {
		if e.explain && e.notes.room() {
			e.addRaw(&e.notes, NoteStringEscape, string(a.Raw()), string(b.Raw()),
				"the same string spelled with different escapes; the canonical form writes it "+string(a.Append(nil)))
		}
		return
	}
	if !e.diffs.room() {
		return
	}
	kind, why := lookAlike(ta, tb)
	e.add(&e.diffs, kind, nodeVal(a), nodeVal(b), why)
}

func (e *engine) number(a, b canon.Node) {
	ca, cb := a.Append(nil), b.Append(nil)
	if !bytes.Equal(ca, cb) {
		if e.diffs.room() {
			e.add(&e.diffs, KindValue, nodeVal(a), nodeVal(b), "the numbers differ")
		}
		return
	}
	la, lb := a.Text(), b.Text()
	if sameDecimal(la, lb) {
		if e.explain && e.notes.room() {
			reason := "the same number written differently; the canonical form is " + string(ca)
			if strings.HasPrefix(la, "-") != strings.HasPrefix(lb, "-") {
				reason = "-0 and 0: JSON.stringify writes both as 0"
			}
			e.addRaw(&e.notes, NoteNumberFormat, la, lb, reason)
		}
		return
	}
	if e.warns.room() {
		e.addRaw(&e.warns, WarnCollapsed, la, lb, fmt.Sprintf(
			"%s and %s are different numbers but the same double (%s): two different values share a key", la, lb, ca))
	}
}

// nulls handles two values that are both written as null, one or both of
// them a number outside the double range (js only).
func (e *engine) nulls(a, b canon.Node) {
	if a.Kind() == canon.Null && b.Kind() == canon.Null || !e.warns.room() {
		return
	}
	la, lb := litOf(a), litOf(b)
	e.addRaw(&e.warns, WarnOutOfRange, la, lb, fmt.Sprintf(
		"%s and %s are different values but js writes a number outside the double range as null: two different values share a key", la, lb))
}

func litOf(n canon.Node) string {
	if n.Kind() == canon.Number {
		return n.Text()
	}
	return "null"
}

// sameDecimal reports whether two number literals denote the same decimal
// value (1.0 and 1, 1e2 and 100; -0 and 0 count as the same).
func sameDecimal(a, b string) bool {
	na, da, ea := decimal(a)
	nb, db, eb := decimal(b)
	if da == "" && db == "" {
		return true
	}
	return na == nb && da == db && ea.Cmp(eb) == 0
}

// decimal splits a JSON number literal into sign, significant digits
// (no leading or trailing zeros) and the exponent of the last digit.
func decimal(lit string) (neg bool, digits string, exp *big.Int) {
	exp = new(big.Int)
	if strings.HasPrefix(lit, "-") {
		neg, lit = true, lit[1:]
	}
	mant, e, _ := strings.Cut(strings.ToLower(lit), "e")
	if e != "" {
		exp.SetString(strings.TrimPrefix(e, "+"), 10)
	}
	ip, fp, _ := strings.Cut(mant, ".")
	digits = strings.TrimLeft(ip+fp, "0")
	exp.Sub(exp, big.NewInt(int64(len(fp))))
	t := strings.TrimRight(digits, "0")
	exp.Add(exp, big.NewInt(int64(len(digits)-len(t))))
	return neg, t, exp
}

// whitespace notes that the two texts lay out insignificant whitespace
// differently.
func (e *engine) whitespace(a, b []byte) {
	sa, na, la := wsSignature(a)
	sb, nb, lb := wsSignature(b)
	if sa == sb || !e.notes.room() {
		return
	}
	desc := func(n, l int) string {
		if n == 0 {
			return "no insignificant whitespace"
		}
		return fmt.Sprintf("%d bytes of insignificant whitespace on %d lines", n, l)
	}
	e.addRaw(&e.notes, NoteWhitespace, desc(na, la), desc(nb, lb),
		"whitespace between tokens differs; the canonical form has none")
}

// wsSignature returns a digest of where and what whitespace lies between
// the tokens of a JSON text, the number of such bytes, and the line count.
func wsSignature(src []byte) (sig uint64, n, lines int) {
	var h maphash.Hash
	h.SetSeed(wsSeed)
	tok := 0
	inStr := false
	lines = 1
	for i := 0; i < len(src); i++ {
		c := src[i]
		if inStr {
			switch c {
			case '\\':
				i++
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			j := i
			for j < len(src) && isJSONSpace(src[j]) {
				if src[j] == '\n' {
					lines++
				}
				j++
			}
			var t [8]byte
			h.Write(strconv.AppendInt(t[:0], int64(tok), 10))
			h.Write(src[i:j])
			n += j - i
			i = j - 1
		case '"':
			inStr = true
			tok++
		default:
			tok++
		}
	}
	return h.Sum64(), n, lines
}

var wsSeed = maphash.MakeSeed()

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// equal reports whether two values have the same source bytes. The walk
// asks it at every level on the way down to a difference; comparing the
// bytes each time would read a value nested k deep k times, quadratic for
// deep nesting. So the run of equal bytes found last is kept: a pair of
// values at the same distance from its start on both sides is answered
// from it (equal when it covers them, different when the difference it
// ends on lies inside them), and only other pairs compare bytes.
func (e *engine) equal(a, b canon.Node) bool {
	ra, rb := a.Raw(), b.Raw()
	if len(ra) != len(rb) {
		return false
	}
	r := &e.same
	if r.da == a.Document() && r.db == b.Document() {
		if d := a.Offset() - r.a; d >= 0 && d == b.Offset()-r.b && d <= r.n {
			switch {
			case len(ra) <= r.n-d:
				return true
			case r.diff:
				return false
			}
		}
	}
	n := commonPrefix(ra, rb)
	*r = sameRun{da: a.Document(), db: b.Document(), a: a.Offset(), b: b.Offset(), n: n, diff: n < len(ra)}
	return n == len(ra)
}

// commonPrefix returns the length of the longest common prefix of a and b.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	lo := 0
	for step := 4096; lo < n; {
		k := min(step, n-lo)
		if bytes.Equal(a[lo:lo+k], b[lo:lo+k]) {
			lo += k
			step *= 2
			continue
		}
		if k <= 16 {
			for lo < n && a[lo] == b[lo] {
				lo++
			}
			return lo
		}
		step = k / 2 // the difference lies in this block: halve it
	}
	return lo
}

// hash returns a hash of a value's canonical text: of the text itself for
// a scalar, and for a container of its members' names and values' hashes,
// kept, so that each container is hashed once however many arrays around
// it are aligned (hashing the text of every element of every enclosing
// array would be quadratic in depth). Equal canonical texts have equal
// hashes.
func (e *engine) hash(n canon.Node) uint64 {
	k := n.Kind()
	if k != canon.Array && k != canon.Object {
		e.buf = n.Append(e.buf[:0])
		return maphash.Bytes(e.seed, e.buf)
	}
	key := nodeKey{n.Document(), n.Offset()}
	if h, ok := e.hashes[key]; ok {
		return h
	}
	var mh maphash.Hash
	mh.SetSeed(e.seed)
	var word [8]byte
	put := func(h uint64) {
		binary.LittleEndian.PutUint64(word[:], h)
		mh.Write(word[:])
	}
	if k == canon.Array {
		mh.WriteByte('[')
		for _, el := range n.Elements() {
			put(e.hash(el))
		}
	} else {
		mh.WriteByte('{')
		for _, m := range n.Members() {
			put(uint64(len(m.Name)))
			mh.WriteString(m.Name)
			put(e.hash(m.Value))
		}
	}
	h := mh.Sum64()
	if e.hashes == nil {
		e.hashes = map[nodeKey]uint64{}
	}
	e.hashes[key] = h
	return h
}

// array compares two arrays: position by position when that explains
// everything, otherwise by aligning their elements.
func (e *engine) array(a, b canon.Node) {
	ea, eb := a.Elements(), b.Elements()
	if len(ea) == 1 && len(eb) == 1 {
		e.element(ea[0], eb[0], 0, 0) // nothing to align (and deep [[[…]]] stays cheap)
		return
	}
	if e.samePlaces(ea, eb) {
		for k := range ea {
			e.element(ea[k], eb[k], k, k)
		}
		return
	}
	e.alignElements(a, b, ea, eb)
}

// samePlaces reports whether two arrays have their equal elements at the
// same indices, so that comparing them position by position explains
// everything.
func (e *engine) samePlaces(ea, eb []canon.Node) bool {
	if len(ea) != len(eb) {
		return false
	}
	for k := range ea {
		if !e.equal(ea[k], eb[k]) && e.hash(ea[k]) != e.hash(eb[k]) {
			return false
		}
	}
	return true
}

// alignElements compares two arrays whose elements moved: the same elements
// reordered, or aligned by their hashes, gap by gap.
func (e *engine) alignElements(a, b canon.Node, ea, eb []canon.Node) {
	ha, hb := make([]uint64, len(ea)), make([]uint64, len(eb))
	for k, n := range ea {
		ha[k] = e.hash(n)
	}
	for k, n := range eb {
		hb[k] = e.hash(n)
	}
	if len(ea) == len(eb) && sameMultiset(ha, hb) {
		if e.diffs.room() {
			first := 0
			for ha[first] == hb[first] {
				first++
			}
			e.add(&e.diffs, KindReordered, nodeVal(a), nodeVal(b), fmt.Sprintf(
				"arrays are ordered: reordering changes the key (the same %d elements, first out of place at index %d)", len(ea), first))
		}
		return
	}
	pairs, how := e.align(ha, hb)
	if how == alignPositional && e.warns.room() {
		e.addRaw(&e.warns, WarnAlignment, strconv.Itoa(len(ea))+" elements", strconv.Itoa(len(eb))+" elements",
			"the arrays differ in too many places to align them fully; some elements were paired by position, so an insertion there may show as several changes")
	}
	e.gaps(ea, eb, ha, hb, pairs)
}

func (e *engine) element(x, y canon.Node, i, j int) {
	e.push(token{idx: i}, token{idx: j})
	e.value(x, y)
	e.pop()
}

func sameMultiset(a, b []uint64) bool {
	sa, sb := slices.Clone(a), slices.Clone(b)
	slices.Sort(sa)
	slices.Sort(sb)
	return slices.Equal(sa, sb)
}

// gaps reports the unmatched elements between matched pairs: an element
// that reappears elsewhere is moved; within a gap, removed and inserted
// elements are paired by position and compared (a changed element), and the
// rest are removed or inserted.
func (e *engine) gaps(ea, eb []canon.Node, ha, hb []uint64, pairs [][2]int) {
	// Unmatched elements of b by hash, for moves.
	matchedB := make([]bool, len(eb))
	matchedA := make([]bool, len(ea))
	for _, p := range pairs {
		matchedA[p[0]], matchedB[p[1]] = true, true
	}
	free := map[uint64][]int{}
	for j, h := range hb {
		if !matchedB[j] {
			free[h] = append(free[h], j)
		}
	}
	moved := map[int]int{} // a index → b index
	movedB := map[int]bool{}
	for i, h := range ha {
		if matchedA[i] {
			continue
		}
		if js := free[h]; len(js) > 0 {
			moved[i], movedB[js[0]] = js[0], true
			free[h] = js[1:]
		}
	}
	pi, pj := 0, 0
	flush := func(i1, j1 int) {
		var dels, ins []int
		for i := pi; i < i1; i++ {
			if jm, ok := moved[i]; ok {
				if e.diffs.room() {
					e.push(token{idx: i}, token{idx: jm})
					e.add(&e.diffs, KindElemMoved, nodeVal(ea[i]), nodeVal(eb[jm]), fmt.Sprintf(
						"the same element is at index %d in a and %d in b: arrays are ordered, moving an element changes the key", i, jm))
					e.pop()
				}
				e.element(ea[i], eb[jm], i, jm)
				continue
			}
			dels = append(dels, i)
		}
		for j := pj; j < j1; j++ {
			if !movedB[j] {
				ins = append(ins, j)
			}
		}
		n := min(len(dels), len(ins))
		for k := 0; k < n; k++ {
			e.element(ea[dels[k]], eb[ins[k]], dels[k], ins[k])
		}
		for _, i := range dels[n:] {
			if e.diffs.room() {
				e.push(token{idx: i}, token{idx: i})
				e.add(&e.diffs, KindElemRemoved, nodeVal(ea[i]), Value{}, fmt.Sprintf(
					"a has an element here that b does not; the elements after it are not otherwise changed"))
				e.pop()
			}
		}
		for _, j := range ins[n:] {
			if e.diffs.room() {
				e.push(token{idx: j}, token{idx: j})
				e.add(&e.diffs, KindElemInserted, Value{}, nodeVal(eb[j]), fmt.Sprintf(
					"b has an element inserted at index %d; the elements after it are not otherwise changed", j))
				e.pop()
			}
		}
	}
	for _, p := range pairs {
		flush(p[0], p[1])
		e.element(ea[p[0]], eb[p[1]], p[0], p[1])
		pi, pj = p[0]+1, p[1]+1
	}
	flush(len(ea), len(eb))
}

// How an array alignment was found.
const (
	alignExact      = iota // a longest common subsequence (Myers)
	alignPatience          // anchored on unique elements, the gaps between them exact
	alignPositional        // some gap too costly: its elements are paired by position
)

// align returns the matched index pairs of a common subsequence of a and b,
// ascending, and how it was found. The whole arrays are diffed with Myers'
// algorithm within a work budget; past it, elements that occur once on each
// side anchor the alignment (patience diff) and each gap between anchors is
// diffed with what is left of the budget.
func (e *engine) align(a, b []uint64) ([][2]int, int) {
	var pairs [][2]int
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pairs = append(pairs, [2]int{pre, pre})
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	budget := e.alignBudget
	how := alignExact
	mid, ok := myers(ma, mb, maxEdits, &budget)
	if !ok {
		how = alignPatience
		budget = e.alignBudget
		mid = nil
		pi, pj := 0, 0
		gap := func(i1, j1 int) {
			if pi == i1 || pj == j1 {
				return
			}
			sub, ok := myers(ma[pi:i1], mb[pj:j1], maxEdits, &budget)
			if !ok {
				how = alignPositional
				return
			}
			for _, p := range sub {
				mid = append(mid, [2]int{p[0] + pi, p[1] + pj})
			}
		}
		for _, p := range patience(ma, mb) {
			gap(p[0], p[1])
			mid = append(mid, p)
			pi, pj = p[0]+1, p[1]+1
		}
		gap(len(ma), len(mb))
	}
	for _, p := range mid {
		pairs = append(pairs, [2]int{p[0] + pre, p[1] + pre})
	}
	for k := suf; k > 0; k-- {
		pairs = append(pairs, [2]int{len(a) - k, len(b) - k})
	}
	return pairs, how
}

// maxEdits bounds the edit distance Myers' algorithm searches up to (its
// trace takes O(maxEdits²) memory).
const maxEdits = 2048

// myers finds a shortest edit script between a and b with at most maxD
// edits, spending at most *budget steps of work (and deducting them); ok
// is false past either limit.
func myers(a, b []uint64, maxD int, budget *int) (pairs [][2]int, ok bool) {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return nil, true
	}
	maxD = min(maxD, n+m)
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	var trace [][]int // trace[d]: v[off-d-1 .. off+d+1] before step d
	for d := 0; d <= maxD; d++ {
		trace = append(trace, slices.Clone(v[off-d-1:off+d+2]))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || k != d && v[off+k-1] < v[off+k+1] {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			*budget -= 1 + x - v[off+k]
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(trace, d, n, m), true
			}
		}
		*budget -= len(trace[d])
		if *budget < 0 {
			return nil, false
		}
	}
	return nil, false
}

func backtrack(trace [][]int, d, x, y int) [][2]int {
	var pairs [][2]int
	for ; d > 0; d-- {
		t := trace[d]
		at := func(k int) int { return t[k+d+1] }
		k := x - y
		var pk int
		if k == -d || k != d && at(k-1) < at(k+1) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := at(pk)
		py := px - pk
		for x > px && y > py {
			x--
			y--
			pairs = append(pairs, [2]int{x, y})
		}
		x, y = px, py
	}
	for x > 0 && y > 0 {
		x--
		y--
		pairs = append(pairs, [2]int{x, y})
	}
	slices.Reverse(pairs)
	return pairs
}

// patience matches the values that occur exactly once in each of a and b,
// keeps the longest run of them in the same order, and extends each anchor
// over equal neighbours.
func patience(a, b []uint64) [][2]int {
	type count struct{ na, nb, ia, ib int }
	cs := make(map[uint64]*count, len(a))
	for i, h := range a {
		c := cs[h]
		if c == nil {
			c = &count{}
			cs[h] = c
		}
		c.na++
		c.ia = i
	}
	for j, h := range b {
		if c := cs[h]; c != nil {
			c.nb++
			c.ib = j
		}
	}
	var cand [][2]int
	for i, h := range a {
		if c := cs[h]; c.na == 1 && c.nb == 1 {
			cand = append(cand, [2]int{i, c.ib})
		}
	}
	anchors := lis(cand)
	// Extend each anchor forward over equal neighbours up to the next one.
	var pairs [][2]int
	pi, pj := 0, 0
	for k, p := range anchors {
		// backward from p down to the previous matched position
		var back [][2]int
		for i, j := p[0]-1, p[1]-1; i >= pi && j >= pj && a[i] == b[j]; i, j = i-1, j-1 {
			back = append(back, [2]int{i, j})
		}
		slices.Reverse(back)
		pairs = append(pairs, back...)
		pairs = append(pairs, p)
		ni, nj := len(a), len(b)
		if k+1 < len(anchors) {
			ni, nj = anchors[k+1][0], anchors[k+1][1]
		}
		i, j := p[0]+1, p[1]+1
		for i < ni && j < nj && a[i] == b[j] {
			pairs = append(pairs, [2]int{i, j})
			i++
			j++
		}
		pi, pj = i, j
	}
	return pairs
}

// lis returns the longest subsequence of pairs (ascending in [0]) that is
// also ascending in [1].
func lis(ps [][2]int) [][2]int {
	var tails []int // index into ps of the smallest tail of each length
	prev := make([]int, len(ps))
	for k, p := range ps {
		lo, hi := 0, len(tails)
		for lo < hi {
			h := (lo + hi) / 2
			if ps[tails[h]][1] < p[1] {
				lo = h + 1
			} else {
				hi = h
			}
		}
		if lo > 0 {
			prev[k] = tails[lo-1]
		} else {
			prev[k] = -1
		}
		if lo == len(tails) {
			tails = append(tails, k)
		} else {
			tails[lo] = k
		}
	}
	if len(tails) == 0 {
		return nil
	}
	out := make([][2]int, len(tails))
	for k, at := len(tails)-1, tails[len(tails)-1]; k >= 0; k, at = k-1, prev[at] {
		out[k] = ps[at]
	}
	return out
}

// ---- look-alike strings ----

// StringKind classifies two different strings as diff does: KindValue
// when they do not look alike, otherwise the look-alike kind.
func StringKind(a, b string) string {
	kind, _ := lookAlike(a, b)
	return kind
}

// lookAlike classifies two different strings: a kind (KindValue when they
// do not look alike) and a plain-words reason naming the code points.
func lookAlike(a, b string) (kind, reason string) {
	if !utf8.ValidString(a) || !utf8.ValidString(b) {
		// A lone surrogate (js only) is kept as its WTF-8 bytes, which the
		// Unicode transforms would all turn into U+FFFD.
		return KindValue, valueReason(a, b) + " (a lone surrogate is involved: js keeps it, jcs rejects it)"
	}
	na, nb := norm.NFC.String(a), norm.NFC.String(b)
	if na == nb {
		return KindNormalization, normReason(a, b)
	}
	if stripInvisible(na) == stripInvisible(nb) {
		return KindInvisible, invisibleReason(a, b)
	}
	if spaces(na) == spaces(nb) {
		return KindNBSP, spaceReason(a, b)
	}
	if r, ok := edgeWS(a, b); ok {
		return r.kind, r.reason
	}
	if strings.ToLower(na) == strings.ToLower(nb) {
		return KindCase, caseReason(a, b)
	}
	if skeleton(a) == skeleton(b) {
		var what []string
		if norm.NFC.String(a) != a || norm.NFC.String(b) != b {
			what = append(what, "Unicode normalization")
		}
		if stripInvisible(a) != a || stripInvisible(b) != b {
			what = append(what, "invisible characters ("+listRunes(a, b, isInvisible)+")")
		}
		if spaces(a) != strings.Map(keepSpace, a) || spaces(b) != strings.Map(keepSpace, b) {
			what = append(what, "non-breaking spaces")
		}
		if strings.TrimSpace(a) != a || strings.TrimSpace(b) != b {
			what = append(what, "leading or trailing whitespace")
		}
		if strings.ToLower(a) != a || strings.ToLower(b) != b {
			what = append(what, "letter case")
		}
		return KindLookAlike, "the strings look alike but differ in " + strings.Join(what, ", ")
	}
	if r, ok := mixedScript(a, b); ok {
		return KindMixedScript, r
	}
	return KindValue, valueReason(a, b)
}

// mixedScript reports two strings of the same length whose differing
// letters come from different scripts ("Ivan" and "Іvan" with a Cyrillic
// І): look-alikes a reader cannot tell apart, with each differing
// character named.
func mixedScript(a, b string) (string, bool) {
	ra, rb := []rune(a), []rune(b)
	if len(ra) != len(rb) {
		return "", false
	}
	var at []int
	for k := range ra {
		if ra[k] != rb[k] {
			if !unicode.IsLetter(ra[k]) && !unicode.IsNumber(ra[k]) || !unicode.IsLetter(rb[k]) && !unicode.IsNumber(rb[k]) ||
				scriptOf(ra[k]) == scriptOf(rb[k]) {
				return "", false
			}
			at = append(at, k)
		}
	}
	if len(at) == 0 || !mixesScripts(ra) && !mixesScripts(rb) {
		return "", false // a word in another script, not a disguised one
	}
	var parts []string
	for n, k := range at {
		if n == 4 {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, fmt.Sprintf("character %d is %s in a, %s in b", k+1, cpScript(ra[k]), cpScript(rb[k])))
	}
	return "the strings look alike but mix letters from different scripts: " + strings.Join(parts, "; "), true
}

// mixesScripts reports whether the letters of rs come from more than one
// script.
func mixesScripts(rs []rune) bool {
	first := ""
	for _, r := range rs {
		if !unicode.IsLetter(r) {
			continue
		}
		switch sc := scriptOf(r); {
		case first == "":
			first = sc
		case sc != first:
			return true
		}
	}
	return false
}

// scriptOf names the Unicode script of r ("Latin", "Cyrillic", "Common").
func scriptOf(r rune) string {
	for _, name := range scriptNames() {
		if unicode.Is(unicode.Scripts[name], r) {
			return name
		}
	}
	return "Unknown"
}

// scriptNames lists the scripts, the common ones first (they are tried in
// order). It is built on first use, not in every process's start-up.
var scriptNames = sync.OnceValue(func() []string {
	first := []string{"Latin", "Common", "Cyrillic", "Greek", "Inherited", "Armenian", "Han", "Arabic", "Hebrew"}
	names := slices.Clone(first)
	for n := range unicode.Scripts {
		if !slices.Contains(first, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names[len(first):])
	return names
})

// cpScript names a code point with its script: "U+0406 CYRILLIC CAPITAL
// LETTER BYELORUSSIAN-UKRAINIAN I (Cyrillic)".
func cpScript(r rune) string { return cp(r) + " (" + scriptOf(r) + ")" }

func keepSpace(r rune) rune { return r }

// skeleton is what a reader sees: NFC, without invisible characters, with
// every space as U+0020, trimmed, in lower case.
func skeleton(s string) string {
	return strings.ToLower(strings.TrimSpace(spaces(stripInvisible(norm.NFC.String(s)))))
}

func isInvisible(r rune) bool {
	return unicode.Is(unicode.Cf, r) || r == 0x034F || r == 0x115F || r == 0x1160 || r == 0x3164 || r == 0xFFA0
}

func stripInvisible(s string) string {
	return strings.Map(func(r rune) rune {
		if isInvisible(r) {
			return -1
		}
		return r
	}, s)
}

func isOddSpace(r rune) bool { return r != ' ' && unicode.Is(unicode.Zs, r) }

func spaces(s string) string {
	return strings.Map(func(r rune) rune {
		if isOddSpace(r) {
			return ' '
		}
		return r
	}, s)
}

// cp names a code point: "U+00A0 NO-BREAK SPACE".
func cp(r rune) string {
	name := runenames.Name(r)
	switch r {
	case '\t':
		name = "CHARACTER TABULATION"
	case '\n':
		name = "LINE FEED"
	case '\r':
		name = "CARRIAGE RETURN"
	}
	if name == "" || strings.HasPrefix(name, "<") {
		return fmt.Sprintf("U+%04X", r)
	}
	return fmt.Sprintf("U+%04X %s", r, name)
}

func cps(s string) string {
	var parts []string
	for _, r := range s {
		if len(parts) == 6 {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, cp(r))
	}
	return strings.Join(parts, " + ")
}

// middle returns the differing middle parts of a and b, extended to whole
// characters with their combining marks, and the character position
// (1-based) where they start.
func middle(a, b string) (ma, mb string, pos int) {
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	for p > 0 && (!utf8.RuneStart(a[p]) || p < len(a) && isMark(a[p:]) || p < len(b) && isMark(b[p:])) {
		p--
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	for s > 0 && (!utf8.RuneStart(a[len(a)-s]) || isMark(a[len(a)-s:])) {
		s--
	}
	return a[p : len(a)-s], b[p : len(b)-s], utf8.RuneCountInString(a[:p]) + 1
}

func isMark(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.Is(unicode.M, r)
}

func formName(s string) string {
	switch {
	case norm.NFC.IsNormalString(s) && norm.NFD.IsNormalString(s):
		return "both NFC and NFD"
	case norm.NFC.IsNormalString(s):
		return "NFC"
	case norm.NFD.IsNormalString(s):
		return "NFD"
	}
	return "neither NFC nor NFD"
}

func normReason(a, b string) string {
	ma, mb, pos := middle(a, b)
	return fmt.Sprintf("the same text in another Unicode normalization form (a is %s, b is %s): at character %d a has %s where b has %s; keys compare code points, not what is displayed",
		formName(a), formName(b), pos, cps(ma), cps(mb))
}

// runesAt lists the code points of s that match f with their 1-based
// character positions.
func runesAt(s string, f func(rune) bool) []string {
	var out []string
	pos := 0
	for _, r := range s {
		pos++
		if f(r) {
			if len(out) == 4 {
				out = append(out, "…")
				break
			}
			out = append(out, fmt.Sprintf("%s at character %d", cp(r), pos))
		}
	}
	return out
}

func listRunes(a, b string, f func(rune) bool) string {
	var parts []string
	if ra := runesAt(a, f); len(ra) > 0 {
		parts = append(parts, "a has "+strings.Join(ra, ", "))
	}
	if rb := runesAt(b, f); len(rb) > 0 {
		parts = append(parts, "b has "+strings.Join(rb, ", "))
	}
	return strings.Join(parts, "; ")
}

func invisibleReason(a, b string) string {
	return "the strings differ only in invisible characters: " + listRunes(a, b, isInvisible)
}

func spaceReason(a, b string) string {
	ma, mb, pos := middle(a, b)
	return fmt.Sprintf("the strings differ only in the kind of space: at character %d a has %s where b has %s", pos, cps(ma), cps(mb))
}

type wsResult struct{ kind, reason string }

func edgeWS(a, b string) (wsResult, bool) {
	trail := func(s, t string) string { // what s has at its end beyond t
		if strings.HasPrefix(s, t) && strings.TrimSpace(s[len(t):]) == "" {
			return s[len(t):]
		}
		return ""
	}
	lead := func(s, t string) string {
		if strings.HasSuffix(s, t) && strings.TrimSpace(s[:len(s)-len(t)]) == "" {
			return s[:len(s)-len(t)]
		}
		return ""
	}
	ta, tb := strings.TrimRightFunc(a, unicode.IsSpace), strings.TrimRightFunc(b, unicode.IsSpace)
	if ta == tb {
		if x := trail(a, b); x != "" {
			return wsResult{KindTrailingWS, "a has trailing whitespace that b does not: " + cps(x)}, true
		}
		if x := trail(b, a); x != "" {
			return wsResult{KindTrailingWS, "b has trailing whitespace that a does not: " + cps(x)}, true
		}
		return wsResult{KindTrailingWS, fmt.Sprintf("the strings end in different whitespace: a ends in %s, b in %s", cps(a[len(ta):]), cps(b[len(tb):]))}, true
	}
	la, lb := strings.TrimLeftFunc(a, unicode.IsSpace), strings.TrimLeftFunc(b, unicode.IsSpace)
	if la == lb {
		if x := lead(a, b); x != "" {
			return wsResult{KindLeadingWS, "a has leading whitespace that b does not: " + cps(x)}, true
		}
		if x := lead(b, a); x != "" {
			return wsResult{KindLeadingWS, "b has leading whitespace that a does not: " + cps(x)}, true
		}
		return wsResult{KindLeadingWS, fmt.Sprintf("the strings start with different whitespace: a with %s, b with %s", cps(a[:len(a)-len(la)]), cps(b[:len(b)-len(lb)]))}, true
	}
	if strings.TrimSpace(a) == strings.TrimSpace(b) {
		return wsResult{KindSurroundWS, fmt.Sprintf("the strings differ only in leading and trailing whitespace (a: %q, b: %q)", a, b)}, true
	}
	return wsResult{}, false
}

func caseReason(a, b string) string {
	ra, rb := []rune(a), []rune(b)
	var diffs []string
	if len(ra) == len(rb) {
		for k := range ra {
			if ra[k] != rb[k] {
				if len(diffs) == 3 {
					diffs = append(diffs, "…")
					break
				}
				diffs = append(diffs, fmt.Sprintf("character %d is %s in a, %s in b", k+1, cp(ra[k]), cp(rb[k])))
			}
		}
	}
	s := "the strings differ only in letter case; keys are case-sensitive"
	if len(diffs) > 0 {
		s += ": " + strings.Join(diffs, "; ")
	}
	return s
}

func valueReason(a, b string) string {
	switch {
	case strings.HasPrefix(b, a):
		return fmt.Sprintf("b is a longer string: it continues after a's %d characters", utf8.RuneCountInString(a))
	case strings.HasPrefix(a, b):
		return fmt.Sprintf("a is a longer string: it continues after b's %d characters", utf8.RuneCountInString(b))
	}
	ma, mb, pos := middle(a, b)
	s := fmt.Sprintf("the strings differ from character %d", pos)
	if nonASCII(ma+mb) && utf8.RuneCountInString(ma) <= 6 && utf8.RuneCountInString(mb) <= 6 {
		s += fmt.Sprintf(": a has %s where b has %s", cpsScript(ma), cpsScript(mb))
	}
	return s
}

func nonASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

func cpsScript(s string) string {
	if s == "" {
		return "nothing"
	}
	var parts []string
	for _, r := range s {
		parts = append(parts, cpScript(r))
	}
	return strings.Join(parts, " + ")
}
