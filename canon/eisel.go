package canon

import (
	"math"
	"math/bits"
)

// eiselLemire returns the double nearest to man × 10^exp10 (ties to even),
// negated if neg, by the Eisel-Lemire algorithm (D. Lemire, "Number
// parsing at a gigabyte per second", Software: Practice and Experience
// 51(8), 2021, as Go's strconv implements it): one or two 64×128-bit
// products with a truncated power of ten decide the rounding in all but
// rare cases, for which ok is false, as it is for results that are
// subnormal, zero or infinite; the caller then uses strconv.
func eiselLemire(man uint64, exp10 int, neg bool) (f float64, ok bool) {
	if man == 0 || exp10 < -348 || exp10 > 347 {
		return 0, false
	}
	// Normalize the mantissa; 217706/2^16 approximates log2(10).
	clz := bits.LeadingZeros64(man)
	man <<= uint(clz)
	exp2 := uint64(217706*exp10>>16+64+1023) - uint64(clz)
	p := &pow10tab[exp10+348]
	hi, lo := bits.Mul64(man, p[1])
	if hi&0x1FF == 0x1FF && lo+man < man {
		// The truncated product may be too small by one in its 9 low
		// bits of hi: widen to 192 bits with the power's low half.
		yHi, yLo := bits.Mul64(man, p[0])
		mHi, mLo := hi, lo+yHi
		if mLo < lo {
			mHi++
		}
		if mHi&0x1FF == 0x1FF && mLo+1 == 0 && yLo+man < man {
			return 0, false
		}
		hi, lo = mHi, mLo
	}
	// Keep 54 bits, then round to 53, ties to even.
	top := hi >> 63
	mant := hi >> (top + 9)
	exp2 -= 1 ^ top
	if lo == 0 && hi&0x1FF == 0 && mant&3 == 1 {
		return 0, false // exactly halfway, maybe: undecided
	}
	mant += mant & 1
	mant >>= 1
	if mant>>53 > 0 {
		mant >>= 1
		exp2++
	}
	if exp2-1 >= 0x7FF-1 {
		return 0, false // subnormal or zero, or infinite
	}
	b := exp2<<52 | mant&(1<<52-1)
	if neg {
		b |= 1 << 63
	}
	return math.Float64frombits(b), true
}
