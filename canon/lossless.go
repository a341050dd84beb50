package canon

import (
	"slices"
	"strconv"
)

// LossKind says how a canonical form fails to denote what its input
// denotes.
type LossKind uint8

const (
	// LossNumber: a number's canonical text has another decimal value
	// than its literal (an integer past 2^53, more digits than a double
	// holds, a value too small for a double).
	LossNumber LossKind = iota + 1
	// LossOverflow: a number outside the double range is written as null.
	LossOverflow
	// LossDuplicate: a repeated member name; the earlier value is dropped.
	LossDuplicate
)

// Loss is one place where the canonical form of a value does not denote
// the same values as the input: reordering members, white space, 1.0 for 1,
// 1e2 for 100 and escapes are not losses; a changed number or a dropped
// member is.
type Loss struct {
	Kind    LossKind
	Pointer string // RFC 6901 pointer from the value checked
	Offset  int    // byte offset in the document's source
	Input   string // the literal, or the dropped member's value, as written
	Output  string // its canonical text ("null"), or the kept member's value as written
}

// Losses returns the places, in source order, where the canonical form of
// n denotes other values than its text: each number's decimal value is
// compared exactly with its canonical text's, and each member a repeated
// name drops is reported. At most limit are returned (all when limit <= 0).
func (n Node) Losses(limit int) []Loss {
	d := n.d
	var out []Loss
	full := func() bool { return limit > 0 && len(out) >= limit }
	var walk func(i int, ptr string)
	walk = func(i int, ptr string) {
		if full() {
			return
		}
		switch d.src[i] {
		case '{':
			o := d.object(i)
			for _, m := range d.mems[o.first : o.first+o.n] {
				walk(d.valueOffset(m), ptr+"/"+PointerToken(string(d.name(m))))
			}
		case '[':
			for k, e := range (Node{d, i}).Elements() {
				walk(e.off, ptr+"/"+strconv.Itoa(k))
			}
		case '"', 't', 'f', 'n':
		default:
			lit := d.src[i:numberEnd(d.src, i)]
			f, ok := ParseNumber(lit)
			if !ok {
				out = append(out, Loss{LossOverflow, ptr, i, string(lit), "null"})
				return
			}
			text := AppendNumber(nil, f)
			if !sameDecimal(lit, text) {
				out = append(out, Loss{LossNumber, ptr, i, string(lit), string(text)})
			}
		}
	}
	walk(n.off, "")
	end := n.End()
	for _, dup := range d.dups {
		if full() {
			break
		}
		if dup.Dropped < n.off || dup.Dropped >= end || d.insideDropped(dup.Dropped) {
			continue
		}
		ptr := d.pathTo(n.off, dup.Dropped) + "/" + PointerToken(dup.Name)
		out = append(out, Loss{LossDuplicate, ptr, dup.Dropped,
			string(d.memberValue(dup.Dropped)), string(d.memberValue(dup.Kept))})
	}
	slices.SortStableFunc(out, func(a, b Loss) int { return a.Offset - b.Offset })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// memberValue returns the raw value of the member whose name starts at
// src[name].
func (d *Document) memberValue(name int) []byte {
	j, _ := stringEnd(d.src, name)
	j = skipWS(d.src, skipWS(d.src, j)+1)
	return d.src[j:d.skip(j)]
}

// insideDropped reports whether off lies inside the value of a member that
// a repeated name dropped (its own losses are that member's).
func (d *Document) insideDropped(off int) bool {
	for _, dup := range d.dups {
		j, _ := stringEnd(d.src, dup.Dropped)
		j = skipWS(d.src, skipWS(d.src, j)+1)
		if off > j && off < d.skip(j) {
			return true
		}
	}
	return false
}

// pathTo returns the pointer, from the value at root, of the innermost
// kept value that contains the offset target.
func (d *Document) pathTo(root, target int) string {
	ptr := ""
	i := root
	for {
		next := -1
		switch d.src[i] {
		case '{':
			o := d.object(i)
			for _, m := range d.mems[o.first : o.first+o.n] {
				if v := d.valueOffset(m); target >= v && target < d.skip(v) {
					ptr += "/" + PointerToken(string(d.name(m)))
					next = v
					break
				}
			}
		case '[':
			for k, e := range (Node{d, i}).Elements() {
				if target >= e.off && target < e.End() {
					ptr += "/" + strconv.Itoa(k)
					next = e.off
					break
				}
			}
		}
		if next < 0 {
			return ptr
		}
		i = next
	}
}

// sameDecimal reports whether two valid JSON number literals denote the
// same decimal value, exactly (any zero equals any zero).
func sameDecimal(a, b []byte) bool {
	an, ad, ae, aok := normDecimal(a)
	bn, bd, be, bok := normDecimal(b)
	if !aok || !bok {
		return false
	}
	if len(ad) == 0 || len(bd) == 0 {
		return len(ad) == len(bd)
	}
	return an == bn && ae == be && string(ad) == string(bd)
}

// normDecimal writes a number literal as ±0.DIGITS × 10^exp with no
// leading or trailing zero digit; zero has no digits. ok is false when the
// exponent is too large to represent (such a literal is never canonical
// text, and the caller treats it as different).
func normDecimal(lit []byte) (neg bool, digits []byte, exp int64, ok bool) {
	i := 0
	if i < len(lit) && lit[i] == '-' {
		neg = true
		i++
	}
	var intDigits int64
	for ; i < len(lit) && lit[i] >= '0' && lit[i] <= '9'; i++ {
		digits = append(digits, lit[i])
		intDigits++
	}
	if i < len(lit) && lit[i] == '.' {
		for i++; i < len(lit) && lit[i] >= '0' && lit[i] <= '9'; i++ {
			digits = append(digits, lit[i])
		}
	}
	var e int64
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		eneg := false
		if lit[i] == '+' || lit[i] == '-' {
			eneg = lit[i] == '-'
			i++
		}
		for ; i < len(lit); i++ {
			if e > 1e15 {
				// Beyond any canonical exponent: only a zero can still
				// equal something.
				t := trimZeros(digits, &intDigits)
				return neg, t, 0, len(t) == 0
			}
			e = e*10 + int64(lit[i]-'0')
		}
		if eneg {
			e = -e
		}
	}
	digits = trimZeros(digits, &intDigits)
	return neg, digits, intDigits + e, true
}

// trimZeros drops leading zeros (moving the decimal point) and trailing
// zeros.
func trimZeros(d []byte, intDigits *int64) []byte {
	for len(d) > 0 && d[0] == '0' {
		d = d[1:]
		*intDigits--
	}
	for len(d) > 0 && d[len(d)-1] == '0' {
		d = d[:len(d)-1]
	}
	return d
}
