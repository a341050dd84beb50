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
	if out, ok := appendShortDecimal(dst, lit); ok {
		return out, true
	}
	f, ok := ParseNumber(lit)
	if !ok {
		return dst, false
	}
	return AppendNumber(dst, f), true
}

// appendShortDecimal writes the canonical form of a literal without an
// exponent that has at most 15 significant digits, without converting it
// to a double. Distinct decimals of at most 15 significant digits are
// distinct doubles (DBL_DIG is 15), so the shortest digits that round-trip
// are the literal's own, less trailing zeros; what remains is the layout
// of Number::toString (RFC 8785 §3.2.2.3), plain for such numbers unless
// the value is below 1e-6. ok is false when the literal needs the general
// path.
func appendShortDecimal(dst, lit []byte) ([]byte, bool) {
	i := 0
	neg := lit[0] == '-'
	if neg {
		i = 1
	}
	start := i
	for i < len(lit) && lit[i] >= '0' && lit[i] <= '9' {
		i++
	}
	intPart := lit[start:i]
	if i == len(lit) || lit[i] != '.' {
		return dst, false // a long integer, or an exponent
	}
	j := i + 1
	for j < len(lit) && lit[j] >= '0' && lit[j] <= '9' {
		j++
	}
	if j != len(lit) {
		return dst, false // an exponent follows
	}
	frac := lit[i+1 : j]
	for len(frac) > 0 && frac[len(frac)-1] == '0' {
		frac = frac[:len(frac)-1]
	}
	if len(intPart) == 1 && intPart[0] == '0' {
		lz := 0
		for lz < len(frac) && frac[lz] == '0' {
			lz++
		}
		switch {
		case lz == len(frac):
			return append(dst, '0'), true // zero, and -0 is "0"
		case lz > 5 || len(frac)-lz > 15:
			return dst, false // below 1e-6: exponent notation; or too long
		}
		if neg {
			dst = append(dst, '-')
		}
		dst = append(dst, '0', '.')
		return append(dst, frac...), true
	}
	if len(intPart)+len(frac) > 15 {
		return dst, false
	}
	if neg {
		dst = append(dst, '-')
	}
	dst = append(dst, intPart...)
	if len(frac) > 0 {
		dst = append(dst, '.')
		dst = append(dst, frac...)
	}
	return dst, true
}

// hasExponent reports whether a number literal has an exponent part.
func hasExponent(lit []byte) bool {
	for _, c := range lit {
		if c == 'e' || c == 'E' {
			return true
		}
	}
	return false
}
