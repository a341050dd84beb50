package canon

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestShortDecimalAgainstGeneralPath checks the decimal fast path against
// the general one (strconv.ParseFloat, then Number::toString layout) on
// random literals around every boundary the fast path decides on: 15 and
// 16 significant digits, 5 and 6 leading zeros, trailing zeros, signs.
func TestShortDecimalAgainstGeneralPath(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	digits := func(n int, lead bool) string {
		var b strings.Builder
		for k := 0; k < n; k++ {
			d := r.IntN(10)
			if k == 0 && lead && d == 0 {
				d = 1 + r.IntN(9)
			}
			b.WriteByte(byte('0' + d))
		}
		return b.String()
	}
	fast := 0
	for n := 0; n < 200000; n++ {
		var lit string
		sign := ""
		if r.IntN(2) == 0 {
			sign = "-"
		}
		intPart := "0"
		if r.IntN(3) > 0 {
			intPart = digits(1+r.IntN(17), true)
		}
		frac := strings.Repeat("0", r.IntN(8)) + digits(r.IntN(17), false) + strings.Repeat("0", r.IntN(3))
		if frac == "" {
			frac = "0"
		}
		lit = sign + intPart + "." + frac
		got, ok := appendShortDecimal(nil, []byte(lit))
		if !ok {
			continue
		}
		fast++
		f, inRange := ParseNumber([]byte(lit))
		if !inRange {
			t.Fatalf("%s: out of range", lit)
		}
		if want := AppendNumber(nil, f); string(got) != string(want) {
			t.Fatalf("%s: fast path %s, general path %s", lit, got, want)
		}
	}
	if fast < 50000 {
		t.Fatalf("only %d literals took the fast path: the generator misses it", fast)
	}
	for _, tc := range []struct{ in, want string }{
		{"1.0", "1"}, {"-0.0", "0"}, {"0.000001", "0.000001"}, {"0.0000010", "0.000001"},
		{"123456789012345.0", "123456789012345"}, {"-1.50", "-1.5"}, {"0.10", "0.1"},
	} {
		got, ok := appendShortDecimal(nil, []byte(tc.in))
		if !ok || string(got) != tc.want {
			t.Errorf("%s: got %q (fast path %v), want %q", tc.in, got, ok, tc.want)
		}
	}
	for _, in := range []string{"0.0000001", "1234567890123456.5", "1e5", "12", "0.1234567890123456"} {
		if _, ok := appendShortDecimal(nil, []byte(in)); ok {
			t.Errorf("%s: took the fast path, want the general one", in)
		}
	}
}
