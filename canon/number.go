package canon

import (
	"math"
	"strconv"
	"unsafe"
)

// AppendNumber appends f as ECMAScript's Number::toString writes it, the
// form RFC 8785 §3.2.2.3 prescribes: the shortest digits that round-trip,
// in plain notation when the decimal exponent n satisfies -6 < n ≤ 21
// (1e-7 is "1e-7", 0.000001 stays, 1e21 is "1e+21"), otherwise in exponent
// notation with an explicit sign; -0 is written as "0". f must be finite.
func AppendNumber(dst []byte, f float64) []byte {
	if f == 0 {
		return append(dst, '0')
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	// Shortest round-trip digits d1.d2d3…e±x: the same digits
	// Number::toString chooses (the closest shortest, RFC 8785 §3.2.2.3).
	var buf [32]byte
	b := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	var digits [17]byte
	k := 0
	i := 0
	for ; b[i] != 'e'; i++ {
		if b[i] != '.' {
			digits[k] = b[i]
			k++
		}
	}
	exp := 0
	neg := b[i+1] == '-'
	for _, c := range b[i+2:] {
		exp = exp*10 + int(c-'0')
	}
	if neg {
		exp = -exp
	}
	n := exp + 1 // the position of the decimal point, as ECMA-262 calls it
	d := digits[:k]
	switch {
	case k <= n && n <= 21:
		dst = append(dst, d...)
		for j := k; j < n; j++ {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, d[:n]...)
		dst = append(dst, '.')
		dst = append(dst, d[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for j := n; j < 0; j++ {
			dst = append(dst, '0')
		}
		dst = append(dst, d...)
	default:
		dst = append(dst, d[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, d[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 < 0 {
			dst = append(dst, '-')
		} else {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(abs(n-1)), 10)
	}
	return dst
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// ParseNumber converts a valid JSON number literal to the nearest double,
// as JSON.parse does. ok is false when the literal is outside the double
// range (its magnitude rounds to infinity); a literal too small for a
// double rounds to zero, as it does in ECMAScript.
func ParseNumber(lit []byte) (f float64, ok bool) {
	f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(lit), len(lit)), 64)
	if err != nil || math.IsInf(f, 0) {
		return f, false
	}
	return f, true
}

// appendNumberLiteral appends the canonical form of a valid number literal.
// integer says the literal has no fraction or exponent. It returns false
// when the number is outside the double range (the caller decides: null
// under JS, an error under JCS).
func appendNumberLiteral(dst, lit []byte, integer bool) ([]byte, bool) {
	// Integers of at most 15 digits are exact doubles, and Number::toString
	// writes them back digit for digit; only -0 changes.
	if integer && len(lit) <= 15 {
		if len(lit) == 2 && lit[0] == '-' && lit[1] == '0' {
			return append(dst, '0'), true
		}
		return append(dst, lit...), true
	}
	f, ok := ParseNumber(lit)
	if !ok {
		return dst, false
	}
	return AppendNumber(dst, f), true
}
