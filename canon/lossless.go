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
// name drops is reported (a repeated name inside a dropped value is that
// value's loss). At most limit are returned (all when limit <= 0).
//
// The cost is linear in the value whatever its depth and its repeated
// names: the pointer of the place walked is kept as a stack of tokens and
// written out only for a loss, and the members a repeat dropped are found
// from the member kept, as the walk meets it.
func (n Node) Losses(limit int) []Loss {
	d := n.d
	var out []Loss
	full := func() bool { return limit > 0 && len(out) >= limit }
	var path []byte // the pointer of the value walked
	push := func(tok []byte, index int) (mark int) {
		mark = len(path)
		path = append(grow(path, 2*len(tok)+12), '/')
		if tok == nil {
			path = strconv.AppendInt(path, int64(index), 10)
		} else {
			path = appendPointerToken(path, tok)
		}
		return mark
	}
	pointer := func() string { return string(path) }
	var keptBy map[int][]int // name offset → the duplicates it follows (Duplicate.Kept)
	if len(d.dups) > 0 {
		keptBy = make(map[int][]int, len(d.dups))
		for k, dup := range d.dups {
			keptBy[dup.Kept] = append(keptBy[dup.Kept], k)
		}
	}
	var dropped func(kept int)
	dropped = func(kept int) {
		for _, k := range keptBy[kept] {
			if full() {
				return
			}
			dup := d.dups[k]
			out = append(out, Loss{LossDuplicate, pointer(), dup.Dropped,
				string(d.memberValue(dup.Dropped)), string(d.memberValue(dup.Kept))})
			dropped(dup.Dropped) // a name repeated three times or more
		}
	}
	var walk func(i int)
	walk = func(i int) {
		if full() {
			return
		}
		switch d.src[i] {
		case '{':
			o := d.object(i)
			for _, m := range d.mems[o.first : o.first+o.n] {
				mark := push(d.name(m), 0)
				if keptBy != nil {
					dropped(d.nameOffset(m))
				}
				walk(d.valueOffset(m))
				path = path[:mark]
			}
		case '[':
			src := d.src
			j := skipWS(src, i+1)
			for k := 0; src[j] != ']'; k++ {
				mark := push(nil, k)
				walk(j)
				path = path[:mark]
				if j = skipWS(src, d.skip(j)); src[j] == ',' {
					j = skipWS(src, j+1)
				}
			}
		case '"', 't', 'f', 'n':
		default:
			lit := d.src[i:numberEnd(d.src, i)]
			f, ok := ParseNumber(lit)
			if !ok {
				out = append(out, Loss{LossOverflow, pointer(), i, string(lit), "null"})
				return
			}
			text := AppendNumber(nil, f)
			if !sameDecimal(lit, text) {
				out = append(out, Loss{LossNumber, pointer(), i, string(lit), string(text)})
			}
		}
	}
	walk(n.off)
	slices.SortStableFunc(out, func(a, b Loss) int { return a.Offset - b.Offset })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// appendPointerToken appends a member name as an RFC 6901 reference
// token: '~' as "~0", '/' as "~1".
func appendPointerToken(dst, name []byte) []byte {
	for _, c := range name {
		switch c {
		case '~':
			dst = append(dst, '~', '0')
		case '/':
			dst = append(dst, '~', '1')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// memberValue returns the raw value of the member whose name starts at
// src[name].
func (d *Document) memberValue(name int) []byte {
	j, _ := stringEnd(d.src, name)
	j = skipWS(d.src, skipWS(d.src, j)+1)
	return d.src[j:d.skip(j)]
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
