package canon

import (
	"slices"
	"strconv"
	"strings"
)

// Kinds of Fault: the ways a valid JSON text differs from its canonical
// form.
const (
	FaultOrder     = "member order"     // an object's members are not in the scheme's order
	FaultDuplicate = "duplicate member" // a name repeated in one object (js: the earlier value is dropped)
	FaultNumber    = "number form"      // a number not written as Number::toString writes it (1.0, 1e2, -0)
	FaultString    = "string form"      // a string or name with escapes the canonical form does not use
	FaultSpace     = "whitespace"       // white space between tokens, or at either end
	FaultLineEnd   = "line ending"      // the text ends in CR LF (the canonical form ends in at most one LF)
)

// A Fault is one place where a document's source differs from its
// canonical form.
type Fault struct {
	Kind    string
	Pointer string // RFC 6901 pointer of the value (for a name: of its member)
	Offset  int    // byte offset in the source (for member order: of the first member out of place)
}

// Faults lists, in source order, the places where the document's source
// differs from its canonical form followed by at most one newline: up to
// max of them (all when max <= 0), and whether more were left out. White
// space and the line ending are reported once each, at their first
// occurrence; member order once per object; every number, string and
// duplicate on its own. The cost is linear in the source; pointers are
// built only for what is reported.
func (d *Document) Faults(max int) (faults []Fault, more bool) {
	w := faultWalk{d: d, max: max}
	src := d.src
	if d.root > 0 {
		w.space(0)
	}
	end := w.value(d.root)
	switch tail := src[end:]; {
	case len(tail) == 0 || string(tail) == "\n":
	case strings.HasSuffix(string(tail), "\r\n") && len(strings.Trim(string(tail), "\r\n")) == 0:
		w.add(FaultLineEnd, end)
	default:
		w.space(end)
	}
	slices.SortStableFunc(w.faults, func(a, b Fault) int { return a.Offset - b.Offset })
	return w.faults, w.more
}

type faultWalk struct {
	d      *Document
	max    int
	faults []Fault
	more   bool
	toks   []string // the pointer to the value being walked, as tokens
	spaced bool     // white space reported
}

func (w *faultWalk) full() bool { return w.max > 0 && len(w.faults) >= w.max }

func (w *faultWalk) add(kind string, off int, toks ...string) {
	if w.full() {
		w.more = true
		return
	}
	var b strings.Builder
	for _, t := range append(w.toks, toks...) {
		b.WriteByte('/')
		b.WriteString(PointerToken(t))
	}
	w.faults = append(w.faults, Fault{Kind: kind, Pointer: b.String(), Offset: off})
}

func (w *faultWalk) space(off int) {
	if !w.spaced {
		w.spaced = true
		w.add(FaultSpace, off)
	}
}

// ws skips white space at src[i], reporting it.
func (w *faultWalk) ws(i int) int {
	j := skipWS(w.d.src, i)
	if j != i {
		w.space(i)
	}
	return j
}

// value walks the value at src[off] and returns the offset just past it.
func (w *faultWalk) value(off int) int {
	d, src := w.d, w.d.src
	if w.full() {
		w.more = true
		return d.skip(off)
	}
	switch src[off] {
	case '{':
		return w.object(off)
	case '[':
		j := w.ws(off + 1)
		for k := 0; src[j] != ']'; k++ {
			w.toks = append(w.toks, strconv.Itoa(k))
			j = w.ws(w.value(j))
			w.toks = w.toks[:len(w.toks)-1]
			if src[j] == ',' {
				j = w.ws(j + 1)
			}
		}
		return j + 1
	case '"':
		end, esc := stringEnd(src, off)
		if esc && string(Node{d, off}.Append(nil)) != string(src[off:end]) {
			w.add(FaultString, off)
		}
		return end
	case 't', 'n':
		return off + 4
	case 'f':
		return off + 5
	}
	end := numberEnd(src, off)
	if string(Node{d, off}.Append(nil)) != string(src[off:end]) {
		w.add(FaultNumber, off)
	}
	return end
}

// object walks an object's members in source order: each name's form,
// each value, the order of the members the scheme keeps, and the names
// it drops (a duplicate's earlier occurrences).
func (w *faultWalk) object(off int) int {
	d, src := w.d, w.d.src
	o := d.object(off)
	kept := make([]int, o.n) // name offsets of the kept members, in canonical order
	for k, m := range d.mems[o.first : o.first+o.n] {
		kept[k] = d.nameOffset(m)
	}
	for k := 1; k < len(kept); k++ {
		if kept[k] < kept[k-1] {
			w.add(FaultOrder, kept[k])
			break
		}
	}
	slices.Sort(kept)
	next := 0 // the next kept name in source order
	j := w.ws(off + 1)
	for src[j] != '}' {
		nameEnd, esc := stringEnd(src, j)
		name := string(src[j+1 : nameEnd-1])
		if esc {
			name = string(appendDecoded(nil, src[j+1:nameEnd-1]))
			if string(AppendQuoted(nil, name)) != string(src[j:nameEnd]) {
				w.add(FaultString, j, name)
			}
		}
		if next < len(kept) && kept[next] == j {
			next++
		} else {
			w.add(FaultDuplicate, j, name)
		}
		v := w.ws(w.ws(nameEnd) + 1) // past the colon
		w.toks = append(w.toks, name)
		j = w.ws(w.value(v))
		w.toks = w.toks[:len(w.toks)-1]
		if src[j] == ',' {
			j = w.ws(j + 1)
		}
	}
	return j + 1
}
