package canon

import (
	"bytes"
	"math"
	"math/big"
	"strconv"
	"sync"
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
	if f >= 1e-6 && f < 1e21 {
		// The plain range of Number::toString (-6 < n <= 21): Go's shortest
		// fixed-point form is the same text.
		return strconv.AppendFloat(dst, f, 'f', -1, 64)
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
	return appendLayout(dst, digits[:k], exp+1)
}

// appendLayout writes the significant digits d (no leading or trailing
// zeros) of a number whose decimal point is at position n, as ECMA-262's
// Number::toString lays them out (RFC 8785 §3.2.2.3): the value is
// 0.d × 10^n; plain notation when -6 < n ≤ 21, otherwise d1.d2…e±(n-1).
func appendLayout(dst, d []byte, n int) []byte {
	k := len(d)
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
	// strconv is exact and fast, except far from the normal range, where
	// it falls back to arbitrary-precision decimal arithmetic (10–25 µs a
	// number): settle those cases from the decimal magnitude instead.
	if len(lit) <= 300 && !hasExponent(lit) {
		// Without an exponent, a literal this short is within range.
		return parseFloat(lit)
	}
	neg := lit[0] == '-'
	switch k, zero := magnitude(lit); {
	case zero:
	case k >= 310: // at least 1e309: beyond the largest double
		if neg {
			return math.Inf(-1), false
		}
		return math.Inf(1), false
	case k <= -324: // below 1e-324, less than half the smallest double
		if neg {
			return math.Copysign(0, -1), true
		}
		return 0, true
	case k <= -307:
		if f, ok := subnormal(lit); ok {
			if neg {
				f = -f
			}
			return f, true
		}
	}
	return parseFloat(lit)
}

func parseFloat(lit []byte) (float64, bool) {
	f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(lit), len(lit)), 64)
	if err != nil || math.IsInf(f, 0) {
		return f, false
	}
	return f, true
}

// magnitude returns k with 10^(k-1) <= |value| < 10^k for a valid number
// literal, or zero = true if its value is zero.
func magnitude(lit []byte) (k int, zero bool) {
	i := 0
	if lit[0] == '-' {
		i++
	}
	intDigits, lead, seen := 0, 0, false // lead: zeros after the point before the first significant digit
	for ; i < len(lit) && lit[i] >= '0' && lit[i] <= '9'; i++ {
		if lit[i] != '0' || seen {
			seen = true
			intDigits++
		}
	}
	if i < len(lit) && lit[i] == '.' {
		for i++; i < len(lit) && lit[i] >= '0' && lit[i] <= '9'; i++ {
			if lit[i] != '0' && !seen {
				seen = true
			} else if !seen {
				lead++
			}
		}
	}
	if !seen {
		return 0, true
	}
	exp := 0
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		eneg := lit[i] == '-'
		if lit[i] == '+' || lit[i] == '-' {
			i++
		}
		for ; i < len(lit); i++ {
			if exp < 1e8 {
				exp = exp*10 + int(lit[i]-'0')
			}
		}
		if eneg {
			exp = -exp
		}
	}
	if intDigits > 0 {
		return intDigits + exp, false
	}
	return -lead + exp, false
}

var (
	twoTo1074 = new(big.Int).Lsh(big.NewInt(1), 1074)
	twoTo52   = new(big.Int).Lsh(big.NewInt(1), 52)
)

var pow10s = sync.OnceValue(func() []*big.Int {
	t := make([]*big.Int, 400)
	t[0] = big.NewInt(1)
	for i := 1; i < len(t); i++ {
		t[i] = new(big.Int).Mul(t[i-1], big.NewInt(10))
	}
	return t
})

// pow10 returns 10^n; the result must not be modified.
func pow10(n int) *big.Int {
	if t := pow10s(); n < len(t) {
		return t[n]
	}
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

// subnormal converts a literal whose value lies below the normal double
// range exactly: the nearest multiple of 2^-1074, ties to even. ok is false
// if the value rounds to a normal double.
func subnormal(lit []byte) (float64, bool) {
	var digits []byte
	exp, i := 0, 0
	if lit[0] == '-' {
		i++
	}
	for ; i < len(lit) && (lit[i] >= '0' && lit[i] <= '9' || lit[i] == '.'); i++ {
		if lit[i] == '.' {
			continue
		}
		digits = append(digits, lit[i])
	}
	frac := 0
	if dot := bytes.IndexByte(lit, '.'); dot >= 0 {
		frac = i - dot - 1
	}
	if i < len(lit) {
		e, err := strconv.Atoi(string(lit[i+1:]))
		if err != nil {
			return 0, false
		}
		exp = e
	}
	exp -= frac // value = digits × 10^exp, exp < 0 here
	if exp >= 0 || -exp > 2000 {
		return 0, false
	}
	m, ok := new(big.Int).SetString(string(digits), 10)
	if !ok {
		return 0, false
	}
	num := m.Mul(m, twoTo1074)
	den := pow10(-exp)
	q, r := new(big.Int).QuoRem(num, den, new(big.Int))
	r.Lsh(r, 1)
	if c := r.Cmp(den); c > 0 || c == 0 && q.Bit(0) == 1 {
		q.Add(q, big.NewInt(1))
	}
	if q.Cmp(twoTo52) >= 0 {
		return 0, false // a normal double: leave it to strconv
	}
	return math.Ldexp(float64(q.Uint64()), -1074), true
}

// appendNumberToken validates the number token at src[i] (RFC 8259 §6)
// and appends its canonical form (RFC 8785 §3.2.2.3) to dst. It returns
// the offset just past the token, or -1 if the token is invalid; inRange is
// false, and dst unchanged, when the number is outside the double range
// (the caller decides: null under JS, an error under JCS).
func appendNumberToken(dst, src []byte, i int) (out []byte, end int, inRange bool) {
	start := i
	neg := src[i] == '-'
	if neg {
		i++
	}
	intStart := i
	switch {
	case i >= len(src) || src[i]-'0' >= 10:
		return dst, -1, true
	case src[i] == '0':
		i++
		if i < len(src) && src[i]-'0' < 10 {
			return dst, -1, true // a leading zero
		}
	default:
		for i < len(src) && src[i]-'0' < 10 {
			i++
		}
	}
	intEnd := i
	if i == len(src) || src[i] != '.' && src[i]|0x20 != 'e' {
		// An integer. Up to 15 digits it is an exact double, which
		// Number::toString writes back digit for digit; only -0 changes.
		if intEnd-intStart <= 15 {
			if neg && intEnd-intStart == 1 && src[intStart] == '0' {
				return append(dst, '0'), i, true
			}
			return append(dst, src[start:i]...), i, true
		}
	}
	fracStart, fracEnd := i, i
	if i < len(src) && src[i] == '.' {
		i++
		fracStart = i
		for i < len(src) && src[i]-'0' < 10 {
			i++
		}
		if i == fracStart {
			return dst, -1, true
		}
		fracEnd = i
		if (i == len(src) || src[i]|0x20 != 'e') && src[i-1] != '0' && canonicalDecimal(src[intStart:intEnd], src[fracStart:fracEnd]) {
			return append(dst, src[start:i]...), i, true
		}
	}
	exp := 0
	if i < len(src) && src[i]|0x20 == 'e' {
		i++
		eneg := false
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			eneg = src[i] == '-'
			i++
		}
		e0 := i
		for i < len(src) && src[i]-'0' < 10 {
			if exp < 1e8 {
				exp = exp*10 + int(src[i]-'0')
			}
			i++
		}
		if i == e0 {
			return dst, -1, true
		}
		if eneg {
			exp = -exp
		}
	}
	if out, ok := appendDecimal(dst, neg, src[intStart:intEnd], src[fracStart:fracEnd], exp); ok {
		return out, i, true
	}
	f, ok := ParseNumber(src[start:i])
	if !ok {
		return dst, i, false
	}
	return AppendNumber(dst, f), i, true
}

// canonicalDecimal says whether a literal without an exponent, with
// integer digits ip and fraction digits fp (the last not 0), is already in
// canonical form: at most 15 significant digits (see appendDecimal), so
// its digits are the shortest that round-trip, and laid out in plain
// notation by Number::toString (-6 < n ≤ 21: at most five zeros after the
// point before the first significant digit).
func canonicalDecimal(ip, fp []byte) bool {
	if ip[0] != '0' {
		return len(ip)+len(fp) <= 15
	}
	lz := 0
	for lz < len(fp) && fp[lz] == '0' {
		lz++
	}
	return lz <= 5 && len(fp)-lz <= 15
}

// appendDecimal writes the canonical form of the valid number literal
// with sign neg, integer digits ip, fraction digits fp and exponent exp,
// when it can do so without strconv's parser; ok is false when the caller
// must use it (ParseNumber).
//
// A literal of at most 15 significant digits in the normal range needs no
// double at all: distinct decimals of at most 15 significant digits are
// distinct doubles (DBL_DIG is 15), so the shortest digits that round-trip
// are the literal's own, less trailing zeros, and only the layout of
// Number::toString remains. Nor does an integer value up to 2^53, which is
// exactly a double. Other literals of up to 19 significant digits are
// converted to the nearest double here (float64 of a uint64, or
// eiselLemire), and written by AppendNumber.
func appendDecimal(dst []byte, neg bool, ip, fp []byte, exp int) ([]byte, bool) {
	var buf [24]byte
	var d []byte
	n := 0 // the position of the decimal point: the value is 0.d × 10^n
	if ip[0] != '0' {
		if len(ip)+len(fp) > len(buf) {
			return dst, false
		}
		k := copy(buf[:], ip)
		k += copy(buf[k:], fp)
		d, n = buf[:k], len(ip)
	} else {
		lz := 0
		for lz < len(fp) && fp[lz] == '0' {
			lz++
		}
		if len(fp)-lz > len(buf) {
			return dst, false
		}
		d, n = buf[:copy(buf[:], fp[lz:])], -lz
	}
	for len(d) > 0 && d[len(d)-1] == '0' {
		d = d[:len(d)-1]
	}
	if len(d) == 0 {
		return append(dst, '0'), true // zero, and -0 is "0"
	}
	n += exp
	switch {
	case len(d) <= 15 && n > -300 && n < 300:
	case n >= len(d) && n <= 19:
		// An integer below 10^19: exact in a uint64.
		var v uint64
		for _, c := range d {
			v = v*10 + uint64(c-'0')
		}
		for k := len(d); k < n; k++ {
			v *= 10
		}
		if v > 1<<53 {
			f := float64(v) // rounded to nearest, ties to even, as JSON.parse does
			if neg {
				f = -f
			}
			return AppendNumber(dst, f), true
		}
	case len(d) <= 19:
		// A mantissa exact in a uint64: the nearest double by
		// Eisel-Lemire, unless it cannot decide (then strconv's slower
		// exact path does).
		var man uint64
		for _, c := range d {
			man = man*10 + uint64(c-'0')
		}
		if f, ok := eiselLemire(man, n-len(d), neg); ok {
			return AppendNumber(dst, f), true
		}
		return dst, false
	default:
		return dst, false
	}
	if neg {
		dst = append(dst, '-')
	}
	return appendLayout(dst, d, n), true
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
