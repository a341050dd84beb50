package diff

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/derive"
)

// Side is one parsed side of a comparison.
type Side struct {
	Name   string          // how the side is named in messages (a file name)
	Doc    *canon.Document // the document duplicates are reported in
	Record bool            // Doc is a whole call record (or envelope), not the bare arguments
	Task   string
	Tool   string
	Args   canon.Node
}

// Key returns the side's idempotency key.
func (s *Side) Key() [32]byte {
	return derive.Call{Task: s.Task, Tool: s.Tool, Args: s.Args}.Key()
}

// Options tune a comparison.
type Options struct {
	Scheme  canon.Scheme
	Max     int  // keep at most Max entries in each list (0: all); the rest are counted
	Explain bool // also record what canonicalization absorbed
}

// Result is a finished comparison.
type Result struct {
	Equal bool // the keys are equal
	// Diffs change the key; Notes are what canonicalization absorbed
	// (with Explain); Warns are findings a reader must see.
	Diffs, Notes, Warns List
}

// Compare compares two calls.
func Compare(a, b *Side, o Options) *Result {
	ka, kb := a.Key(), b.Key()
	res := &Result{Equal: ka == kb}
	e := newEngine(o.Scheme, o.Max, o.Explain)
	e.compareCalls(a, b)
	if !res.Equal && e.diffs.Total() == 0 {
		e.push(token{name: "args", idx: -1}, token{name: "args", idx: -1})
		e.add(&e.diffs, KindUnexplained, nodeVal(a.Args), nodeVal(b.Args),
			"the canonical texts differ but no single difference was found (please report this as a bug)")
		e.pop()
	}
	e.duplicates(a, "a")
	e.duplicates(b, "b")
	res.Diffs, res.Notes, res.Warns = e.diffs, e.notes, e.warns
	return res
}

// IsRecord reports whether v looks like a call record: an object with the
// members task (a string), tool (a string) and args, whatever else it
// carries (a log line's call_id, a timestamp): those three make a call.
func IsRecord(v canon.Node) bool {
	if v.Kind() != canon.Object {
		return false
	}
	t, ok1 := v.Get("task")
	tl, ok2 := v.Get("tool")
	_, ok3 := v.Get("args")
	return ok1 && ok2 && ok3 && t.Kind() == canon.String && tl.Kind() == canon.String
}

// FromRecord fills the side from a call record {"task","tool","args"}.
func (s *Side) FromRecord(root canon.Node) error {
	if root.Kind() != canon.Object {
		return fmt.Errorf(`not a call record: want an object {"task":…,"tool":…,"args":…}, not %s`, Article(TypeName(root.Kind())))
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"task", &s.Task}, {"tool", &s.Tool}} {
		v, ok := root.Get(f.name)
		if !ok {
			return fmt.Errorf("not a call record: missing %q member", f.name)
		}
		if v.Kind() != canon.String {
			return fmt.Errorf("not a call record: %q must be a string, not %s", f.name, Article(TypeName(v.Kind())))
		}
		*f.dst = v.Text()
	}
	args, ok := root.Get("args")
	if !ok {
		return errors.New(`not a call record: missing "args" member`)
	}
	s.Args, s.Record = args, true
	return (derive.Call{Task: s.Task, Tool: s.Tool}).Validate()
}

// ---- duplicates ----

// duplicates warns about every member name that appears twice in one
// object of side s: the earlier value was silently dropped. The work is
// linear in the input however many duplicates it has: line numbers come
// from one table of line starts, and each object or array on the way to a
// duplicate is indexed once (its members by source offset and by name).
func (e *engine) duplicates(s *Side, label string) {
	dups := s.Doc.Duplicates()
	if len(dups) == 0 {
		return
	}
	src := s.Doc.Source()
	lines := lineStarts(src)
	ix := &containerIndex{objs: map[int]*objIndex{}, arrs: map[int][]canon.Node{}}
	for _, d := range dups {
		if !e.warns.room() {
			continue
		}
		obj, ptr := ix.nodeAt(s.Doc.Root(), d.Dropped)
		if !s.Record {
			ptr = append([]token{{name: "args", idx: -1}}, ptr...)
		}
		ptr = append(ptr, token{name: d.Name, idx: -1})
		dropped := string(valueAfterName(src, d.Dropped))
		kept := ""
		if v, ok := ix.object(obj).byName[d.Name]; ok {
			kept = string(v.Raw())
		}
		ld, lk := lineOf(lines, d.Dropped), lineOf(lines, d.Kept)
		where := fmt.Sprintf("lines %d and %d", ld, lk)
		if ld == lk {
			where = fmt.Sprintf("line %d", ld)
		}
		e.warns.Items = append(e.warns.Items, Entry{
			Pointer: pointerOf(ptr), Kind: WarnDuplicate, RawA: label,
			Reason: fmt.Sprintf("%s (%s) has the member %s twice (%s): the earlier value %s was silently dropped and %s is used",
				label, s.Name, canon.AppendQuoted(nil, d.Name), where, Shorten(dropped, 40), Shorten(kept, 40)),
		})
	}
}

// lineStarts returns the offsets at which the lines of src start.
func lineStarts(src []byte) []int {
	starts := []int{0}
	for i := 0; i < len(src); {
		j := bytes.IndexByte(src[i:], '\n')
		if j < 0 {
			break
		}
		i += j + 1
		starts = append(starts, i)
	}
	return starts
}

// lineOf returns the 1-based line of offset off.
func lineOf(starts []int, off int) int {
	n, _ := slices.BinarySearch(starts, off+1)
	return n
}

// containerIndex remembers, for each object and array it was asked about,
// its members in source order and by name, or its elements.
type containerIndex struct {
	objs map[int]*objIndex
	arrs map[int][]canon.Node
}

type objIndex struct {
	bySource []canon.Member // ascending NameOffset
	byName   map[string]canon.Node
}

func (ix *containerIndex) object(n canon.Node) *objIndex {
	if o, ok := ix.objs[n.Offset()]; ok {
		return o
	}
	ms := n.Members()
	o := &objIndex{byName: make(map[string]canon.Node, len(ms))}
	for _, m := range ms {
		o.byName[m.Name] = m.Value
	}
	o.bySource = ms // a fresh slice: sorting it in place is safe
	slices.SortFunc(o.bySource, func(x, y canon.Member) int { return x.NameOffset - y.NameOffset })
	ix.objs[n.Offset()] = o
	return o
}

func (ix *containerIndex) elements(n canon.Node) []canon.Node {
	if es, ok := ix.arrs[n.Offset()]; ok {
		return es
	}
	es := n.Elements()
	ix.arrs[n.Offset()] = es
	return es
}

// nodeAt returns the innermost value of root whose source contains offset
// off, and its pointer.
func (ix *containerIndex) nodeAt(n canon.Node, off int) (canon.Node, []token) {
	var ptr []token
	for {
		switch n.Kind() {
		case canon.Object:
			ms := ix.object(n).bySource
			// the last member whose name starts at or before off
			k, _ := slices.BinarySearchFunc(ms, off+1, func(m canon.Member, t int) int { return m.NameOffset - t })
			if k > 0 && off < ms[k-1].Value.End() {
				ptr = append(ptr, token{name: ms[k-1].Name, idx: -1})
				n = ms[k-1].Value
				continue
			}
		case canon.Array:
			es := ix.elements(n)
			k, _ := slices.BinarySearchFunc(es, off+1, func(el canon.Node, t int) int { return el.Offset() - t })
			if k > 0 && off < es[k-1].End() {
				ptr = append(ptr, token{idx: k - 1})
				n = es[k-1]
				continue
			}
		}
		return n, ptr
	}
}

// valueAfterName returns the source text of the value that follows the
// member name whose opening quote is at src[i].
func valueAfterName(src []byte, i int) []byte {
	j := i + 1
	for j < len(src) && src[j] != '"' {
		if src[j] == '\\' {
			j++
		}
		j++
	}
	j++
	for j < len(src) && (isJSONSpace(src[j]) || src[j] == ':') {
		j++
	}
	start, depth, inStr := j, 0, false
	for ; j < len(src); j++ {
		c := src[j]
		if inStr {
			if c == '\\' {
				j++
			} else if c == '"' {
				inStr = false
				if depth == 0 {
					return src[start : j+1]
				}
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return src[start : j+1]
			}
			if depth < 0 {
				return src[start:j]
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return src[start:j]
			}
		}
	}
	return src[start:j]
}

// ---- value display ----

const showWidth = 72

// ShowPair renders both sides' values for people: canonical JSON with
// invisible characters, unusual spaces and combining marks spelled as
// \uXXXX, shortened around the first difference when long.
func ShowPair(a, b string) (string, string) {
	ra, rb := []rune(a), []rune(b)
	if len(ra) <= showWidth && len(rb) <= showWidth {
		return string(ra), string(rb)
	}
	p := 0
	for p < len(ra) && p < len(rb) && ra[p] == rb[p] {
		p++
	}
	return window(ra, p), window(rb, p)
}

func window(r []rune, p int) string {
	if len(r) <= showWidth {
		return string(r)
	}
	start := max(0, min(p-showWidth/3, len(r)-showWidth))
	end := min(len(r), start+showWidth)
	s := string(r[start:end])
	if start > 0 {
		s = "…" + s
	}
	if end < len(r) {
		s += "…"
	}
	return s + fmt.Sprintf(" (%d characters)", len(r))
}

// Shorten cuts s to n characters and an ellipsis.
func Shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// Revealed is the value for people: its canonical text with the
// characters a reader cannot see spelled out, or "(absent)".
func (v Value) Revealed() string {
	if !v.has {
		return "(absent)"
	}
	return Reveal(v.Canonical())
}

// Reveal spells the characters a reader cannot see as \uXXXX.
func Reveal(s []byte) string {
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRune(s)
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case hidden(r):
			writeU(&b, r)
		default:
			b.Write(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}

// RevealPointer makes a pointer safe to print on a terminal or in a log:
// control characters (ESC, CR, BEL, …), invisible and unusual characters
// are spelled \uXXXX, a lone surrogate \udXXX, a byte that is not UTF-8
// \xXX, and a backslash \\, so that what is printed reads back unambiguously.
func RevealPointer(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); {
		c := p[i]
		if c >= 0x20 && c < 0x7F {
			if c == '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
			i++
			continue
		}
		if c == 0xED && i+2 < len(p) && p[i+1] >= 0xA0 && p[i+1] <= 0xBF && p[i+2]&0xC0 == 0x80 {
			// WTF-8: a lone surrogate kept as its own three bytes
			fmt.Fprintf(&b, `\u%04x`, rune(c&0x0F)<<12|rune(p[i+1]&0x3F)<<6|rune(p[i+2]&0x3F))
			i += 3
			continue
		}
		r, n := utf8.DecodeRuneInString(p[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, c)
		case unicode.IsControl(r) || hidden(r):
			writeU(&b, r)
		default:
			b.WriteString(p[i : i+n])
		}
		i += n
	}
	return b.String()
}

// hidden reports the characters a reader cannot see or tell apart from a
// space: invisible ones, unusual spaces, combining marks, line separators.
func hidden(r rune) bool {
	return isInvisible(r) || isOddSpace(r) || unicode.Is(unicode.Mn, r) || r == 0x2028 || r == 0x2029
}

// writeU spells r as \uXXXX (a surrogate pair beyond the BMP).
func writeU(b *strings.Builder, r rune) {
	if r > 0xFFFF {
		r1, r2 := utf16.EncodeRune(r)
		fmt.Fprintf(b, `\u%04x\u%04x`, r1, r2)
	} else {
		fmt.Fprintf(b, `\u%04x`, r)
	}
}
