package canon_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/canon"
)

// numberCases maps a JSON number literal to what JSON.stringify(JSON.parse(lit))
// writes on Node (computed there, not by this package). "null" means the
// literal is outside the double range: JS writes null, JCS rejects it.
var numberCases = []struct{ lit, want string }{
	// Plain vs. exponent notation: -6 < n ≤ 21.
	{"1.0", "1"},
	{"1", "1"},
	{"1e21", "1e+21"},
	{"1E21", "1e+21"},
	{"1e+21", "1e+21"},
	{"1e20", "100000000000000000000"},
	{"100000000000000000000", "100000000000000000000"},
	{"999999999999999999999", "1e+21"},
	{"1e-7", "1e-7"},
	{"0.0000001", "1e-7"},
	{"0.000001", "0.000001"},
	{"1e-6", "0.000001"},
	{"0.0000015", "0.0000015"},
	{"0.000001000001", "0.000001000001"},
	{"5e-7", "5e-7"},
	{"2e-7", "2e-7"},
	{"3.0e-6", "0.000003"},
	{"0.00000123", "0.00000123"},
	{"1.23e-7", "1.23e-7"},
	{"1e30", "1e+30"},
	{"1e308", "1e+308"},
	{"123e-20", "1.23e-18"},
	{"1e-27", "1e-27"},
	{"2e-3", "0.002"},
	// Zero and negative zero.
	{"-0", "0"},
	{"-0.0", "0"},
	{"-0e10", "0"},
	{"0e-5", "0"},
	{"0.0", "0"},
	// Integers: exact up to 2^53, rounded past it.
	{"999999999999999", "999999999999999"},
	{"-99999999999999", "-99999999999999"},
	{"-999999999999999", "-999999999999999"},
	{"1000000000000000", "1000000000000000"},
	{"4294967295", "4294967295"},
	{"9007199254740992", "9007199254740992"},
	{"9007199254740993", "9007199254740992"},
	{"9007199254740995", "9007199254740996"},
	{"-9007199254740993", "-9007199254740992"},
	{"18446744073709551615", "18446744073709552000"},
	{"12345678901234567890", "12345678901234567000"},
	{"123456789012345678901234567890", "1.2345678901234568e+29"},
	// Exponent and fraction spellings of the same value.
	{"100", "100"},
	{"1E2", "100"},
	{"1e+2", "100"},
	{"1e2", "100"},
	{"10e-1", "1"},
	{"0.5e1", "5"},
	{"-1", "-1"},
	{"-1.0e0", "-1"},
	{"4.50", "4.5"},
	{"123456.789e3", "123456789"},
	{"4294967296.5", "4294967296.5"},
	// Shortest round-trip digits.
	{"0.1", "0.1"},
	{"0.3", "0.3"},
	{"0.30000000000000004", "0.30000000000000004"},
	{"0.1000000000000000055511151231257827021181583404541015625", "0.1"},
	{"333333333.33333329", "333333333.3333333"},
	{"1234567890123456789e-30", "1.2345678901234569e-12"},
	{"1.5", "1.5"},
	{"-1.5", "-1.5"},
	// Subnormals and underflow.
	{"5e-324", "5e-324"},
	{"1e-323", "1e-323"},
	{"4.9406564584124654e-324", "5e-324"},
	{"2.4703282292062328e-324", "5e-324"},
	{"2.4703282292062327e-324", "0"},
	{"2.2250738585072014e-308", "2.2250738585072014e-308"},
	{"1e-400", "0"},
	{"-1e-400", "0"},
	// The top of the range and overflow.
	{"1.7976931348623157e308", "1.7976931348623157e+308"},
	{"1.7976931348623157e+308", "1.7976931348623157e+308"},
	{"1.7976931348623158e308", "1.7976931348623157e+308"},
	{"1.7976931348623159e308", "null"},
	{"1e309", "null"},
	{"1e400", "null"},
	{"-1e400", "null"},
	{"1E400", "null"},
	{"1" + strings.Repeat("0", 308), "1e+308"},
	{"1" + strings.Repeat("0", 309), "null"},
	{"-" + strings.Repeat("9", 400), "null"},
}

func TestNumbers(t *testing.T) {
	for _, c := range numberCases {
		// Alone, as an array element and as a member value: the number's
		// end must be found in every context.
		for _, wrap := range []string{"%s", "[%s]", `{"n":%s}`, "[ %s , %s ]"} {
			src := strings.ReplaceAll(wrap, "%s", c.lit)
			want := strings.ReplaceAll(wrap, "%s", c.want)
			want = strings.ReplaceAll(want, " ", "")
			name := src
			if len(name) > 40 {
				name = name[:40] + "…"
			}
			got, err := canon.Append(nil, []byte(src), canon.JS)
			if err != nil {
				t.Errorf("js %s: %v", name, err)
			} else if string(got) != want {
				t.Errorf("js %s = %s, want %s", name, got, want)
			}

			got, err = canon.Append(nil, []byte(src), canon.JCS)
			if c.want == "null" {
				var e *canon.Error
				if !errors.As(err, &e) {
					t.Errorf("jcs %s: got %s, %v; want an *Error", name, got, err)
					continue
				}
				if off := strings.Index(src, c.lit); e.Offset != off || !strings.Contains(e.Msg, "outside the IEEE-754 double range") {
					t.Errorf("jcs %s: error at %d %q, want offset %d and a range message", name, e.Offset, e.Msg, off)
				}
				continue
			}
			if err != nil {
				t.Errorf("jcs %s: %v", name, err)
			} else if string(got) != want {
				t.Errorf("jcs %s = %s, want %s", name, got, want)
			}
		}
	}
}

// TestNumberNode checks Node.Text (the literal as written) and Node.Float
// (the value JSON.parse reads) for every case.
func TestNumberNode(t *testing.T) {
	for _, c := range numberCases {
		d, err := canon.Parse([]byte(" "+c.lit+" "), canon.JS)
		if err != nil {
			t.Fatalf("%s: %v", c.lit, err)
		}
		n := d.Root()
		if n.Kind() != canon.Number || n.Text() != c.lit || string(n.Raw()) != c.lit {
			t.Errorf("%s: Kind %v, Text %q, Raw %q", c.lit, n.Kind(), n.Text(), n.Raw())
		}
		f, ok := n.Float()
		if ok != (c.want != "null") {
			t.Errorf("%s: Float ok = %v", c.lit, ok)
		}
		if ok {
			if got := string(canon.AppendNumber(nil, f)); got != c.want {
				t.Errorf("%s: AppendNumber(Float()) = %s, want %s", c.lit, got, c.want)
			}
		}
	}
}

func TestAppendNumber(t *testing.T) {
	// Variables, so that the sums are rounded at run time (Go constant
	// arithmetic is exact).
	a, b, c, d, three := 0.1, 0.2, 0.7, 1.1, 3.0
	next := func(f float64) float64 { return math.Nextafter(f, math.Inf(1)) }
	prev := func(f float64) float64 { return math.Nextafter(f, math.Inf(-1)) }
	// Expected texts are ECMAScript String(x) on Node for the same doubles.
	cases := []struct {
		f    float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "0"},
		{1, "1"},
		{-1, "-1"},
		{a + b, "0.30000000000000004"},
		{a + c, "0.7999999999999999"},
		{d * d, "1.2100000000000002"},
		{1 / three, "0.3333333333333333"},
		{100 / three, "33.333333333333336"},
		{1 << 53, "9007199254740992"},
		{1e21, "1e+21"},
		{prev(1e21), "999999999999999900000"},
		{next(1e21), "1.0000000000000001e+21"},
		{1e-6, "0.000001"},
		{prev(1e-6), "9.999999999999997e-7"},
		{1e-7, "1e-7"},
		{next(1e-7), "1.0000000000000001e-7"},
		{prev(1e-7), "9.999999999999998e-8"},
		{math.MaxFloat64, "1.7976931348623157e+308"},
		{-math.MaxFloat64, "-1.7976931348623157e+308"},
		{math.SmallestNonzeroFloat64, "5e-324"},
		{-math.SmallestNonzeroFloat64, "-5e-324"},
		{3 * math.SmallestNonzeroFloat64, "1.5e-323"},
	}
	for _, c := range cases {
		if got := string(canon.AppendNumber([]byte("x"), c.f)); got != "x"+c.want {
			t.Errorf("AppendNumber(%b) = %s, want x%s", c.f, got, c.want)
		}
	}
}

func TestParseNumber(t *testing.T) {
	for _, c := range []struct {
		lit  string
		want float64
		ok   bool
	}{
		{"0", 0, true},
		{"-0", math.Copysign(0, -1), true},
		{"9007199254740993", 1 << 53, true},
		{"1e-400", 0, true},
		{"1.7976931348623157e308", math.MaxFloat64, true},
		{"1e400", math.Inf(1), false},
		{"-1e400", math.Inf(-1), false},
	} {
		f, ok := canon.ParseNumber([]byte(c.lit))
		if ok != c.ok || math.Float64bits(f) != math.Float64bits(c.want) {
			t.Errorf("ParseNumber(%s) = %v, %v; want %v, %v", c.lit, f, ok, c.want, c.ok)
		}
	}
}
