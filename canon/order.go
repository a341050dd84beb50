package canon

import "unicode/utf8"

// compareUTF16 compares two WTF-8 strings by their UTF-16 code units, the
// order RFC 8785 §3.2.3 and ECMAScript's string '<' use. UTF-8 byte order
// is code point order, which agrees with UTF-16 order except between a
// supplementary character (a surrogate pair, 0xD800–0xDBFF first) and
// U+E000–U+FFFF; only a first difference there takes the slow path.
func compareUTF16(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) - len(b)
	}
	x, y := a[i], b[i]
	if x < 0xED || y < 0xED || (x < 0xF0 && y < 0xF0) {
		if x < y {
			return -1
		}
		return 1
	}
	// Both differing bytes lead a sequence of U+D000 or above, and one of
	// them a supplementary character: compare code unit by code unit.
	a, b = a[i:], b[i:]
	var pa, pb uint16 // pending low surrogates
	for {
		aHas, bHas := pa != 0 || len(a) > 0, pb != 0 || len(b) > 0
		switch {
		case !aHas && !bHas:
			return 0
		case !aHas:
			return -1
		case !bHas:
			return 1
		}
		var ua, ub uint16
		if pa != 0 {
			ua, pa = pa, 0
		} else {
			ua, pa, a = nextUnit(a)
		}
		if pb != 0 {
			ub, pb = pb, 0
		} else {
			ub, pb, b = nextUnit(b)
		}
		if ua != ub {
			if ua < ub {
				return -1
			}
			return 1
		}
	}
}

// nextUnit decodes the first WTF-8 sequence of s into UTF-16 code units:
// the unit, a pending low surrogate (or 0), and the rest of s.
func nextUnit(s []byte) (unit, low uint16, rest []byte) {
	if s[0] == 0xED && len(s) >= 3 && s[1] >= 0xA0 {
		return 0xD000 | uint16(s[1]&0x3F)<<6 | uint16(s[2]&0x3F), 0, s[3:]
	}
	r, size := utf8.DecodeRune(s)
	if r >= 0x10000 {
		r -= 0x10000
		return uint16(0xD800 + r>>10), uint16(0xDC00 + r&0x3FF), s[size:]
	}
	return uint16(r), 0, s[size:]
}

// arrayIndex reports whether name is an ECMAScript array index: the
// canonical decimal form of an integer from 0 to 2^32-2. The JS scheme puts
// such names first, in ascending numeric order, as ECMAScript's
// OrdinaryOwnPropertyKeys does.
func arrayIndex(name []byte) (uint32, bool) {
	if len(name) == 0 || len(name) > 10 || (name[0] == '0' && len(name) > 1) {
		return 0, false
	}
	var v uint64
	for _, c := range name {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if v > 4294967294 {
		return 0, false
	}
	return uint32(v), true
}

// compareNames orders member names under a scheme.
func compareNames(s Scheme, a, b []byte) int {
	if s == JS {
		ia, oka := arrayIndex(a)
		ib, okb := arrayIndex(b)
		switch {
		case oka && okb:
			switch {
			case ia < ib:
				return -1
			case ia > ib:
				return 1
			}
			return 0
		case oka:
			return -1
		case okb:
			return 1
		}
	}
	return compareUTF16(a, b)
}
