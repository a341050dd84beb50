package canon

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestParseNumberFarFromNormalRange checks the shortcuts ParseNumber takes
// for tiny and huge literals against strconv.ParseFloat, which is exact.
func TestParseNumberFarFromNormalRange(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	var lits []string
	for _, s := range []string{"5e-324", "-5e-324", "2.4703282292062327e-324", "2.4703282292062328e-324", "2.47e-324",
		"4.9406564584124654e-324", "2.2250738585072009e-308", "2.2250738585072014e-308", "1e-310", "0.1e-306",
		"123e-330", "1e-324", "1e-325", "0.0000000001e-315", "1e309", "1" + strings.Repeat("0", 309), "-1e309",
		"1.7976931348623157e308", "1.7976931348623159e308", "17976931348623158e292", "0e-400", "-0.0e999", "1e-400"} {
		lits = append(lits, s)
	}
	for n := 0; n < 6000; n++ {
		digits := strconv.FormatUint(1e17+r.Uint64N(8e18), 10)[:1+r.IntN(18)]
		exp := -330 + r.IntN(30)
		if r.IntN(2) == 0 {
			exp = 300 + r.IntN(15)
		}
		lits = append(lits, fmt.Sprintf("%s.%se%d", digits[:1], digits[1:]+"0", exp))
		// A subnormal double written with its shortest digits, and one
		// halfway between two subnormals.
		f := math.Float64frombits(r.Uint64N(1 << 52))
		lits = append(lits, strconv.FormatFloat(f, 'e', -1, 64), strconv.FormatFloat(f, 'e', 25, 64))
	}
	for _, lit := range lits {
		want, err := strconv.ParseFloat(lit, 64)
		wantOK := err == nil && !math.IsInf(want, 0)
		got, ok := ParseNumber([]byte(lit))
		if ok != wantOK || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%s: got %v (%v), strconv %v (%v)", lit, got, ok, want, wantOK)
		}
	}
}
