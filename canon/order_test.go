package canon_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/idemkey/idemkey/canon"
)

// orderCases: member order. The expected outputs were computed on Node: js with the
// reference harness's canonical(), jcs by sorting Object.keys() with the
// default sort (UTF-16 code units) and writing members in that order.
var orderCases = []struct {
	name, src, js, jcs string
}{
	{
		// UTF-16 order puts a surrogate pair (0xD83D…) before U+E000 and
		// U+FFFF; code point or UTF-8 byte order would put it last.
		"astral before private use",
		`{"\uffff":1,"\ue000":2,"😀":3,"z":4,"é":5,"\u00e9x":6}`,
		"{\"z\":4,\"\u00e9\":5,\"\u00e9x\":6,\"\U0001f600\":3,\"\ue000\":2,\"\uffff\":1}",
		"{\"z\":4,\"\u00e9\":5,\"\u00e9x\":6,\"\U0001f600\":3,\"\ue000\":2,\"\uffff\":1}",
	},
	{
		// Array-index names ("0" … "4294967294", canonical decimal) come
		// first under js, in numeric order; "4294967295", "01", "-1", "1.0"
		// are ordinary names. jcs is pure UTF-16 order.
		"array index names",
		`{"a":1,"4294967295":2,"01":3,"-1":4,"10":5,"2":6,"4294967294":7,"1":8,"0":9,"":10," 1":11,"1.0":12,"1e0":13}`,
		`{"0":9,"1":8,"2":6,"10":5,"4294967294":7,"":10," 1":11,"-1":4,"01":3,"1.0":12,"1e0":13,"4294967295":2,"a":1}`,
		`{"":10," 1":11,"-1":4,"0":9,"01":3,"1":8,"1.0":12,"10":5,"1e0":13,"2":6,"4294967294":7,"4294967295":2,"a":1}`,
	},
	{
		"numeric names past the index range",
		`{"10":1,"9":2,"100":3,"99999999999":4,"4294967296":5}`,
		`{"9":2,"10":1,"100":3,"4294967296":5,"99999999999":4}`,
		`{"10":1,"100":3,"4294967296":5,"9":2,"99999999999":4}`,
	},
	{
		"prefixes and case",
		`{"ab":1,"a":2,"b":3,"B":4,"A":5,"":6,"aa":7}`,
		`{"":6,"A":5,"B":4,"a":2,"aa":7,"ab":1,"b":3}`,
		`{"":6,"A":5,"B":4,"a":2,"aa":7,"ab":1,"b":3}`,
	},
	{
		// Escaped names are ordered by their decoded text: "\u0031" is "1".
		"escaped names and nesting",
		`{"\u0031":"one","\u0030":"zero","x":{"b":[{"d":1,"c":2}],"a":null}}`,
		`{"0":"zero","1":"one","x":{"a":null,"b":[{"c":2,"d":1}]}}`,
		`{"0":"zero","1":"one","x":{"a":null,"b":[{"c":2,"d":1}]}}`,
	},
	{
		"latin accents (no locale)",
		`{"peach":1,"péché":2,"pêche":3,"sin":4}`,
		`{"peach":1,"péché":2,"pêche":3,"sin":4}`,
		`{"peach":1,"péché":2,"pêche":3,"sin":4}`,
	},
}

func TestMemberOrder(t *testing.T) {
	for _, c := range orderCases {
		t.Run(c.name, func(t *testing.T) {
			for _, s := range []canon.Scheme{canon.JS, canon.JCS} {
				want := c.js
				if s == canon.JCS {
					want = c.jcs
				}
				got, err := canon.Append(nil, []byte(c.src), s)
				if err != nil {
					t.Fatalf("%s: %v", s, err)
				}
				if string(got) != want {
					t.Errorf("%s:\n got %s\nwant %s", s, got, want)
				}
			}
		})
	}
}

// TestLoneSurrogateOrder: under js, names with lone surrogates sort by
// their code units like any other (Node's output); jcs rejects them.
func TestLoneSurrogateOrder(t *testing.T) {
	src := `{"\udc00":1,"\ud800":2,"\ud83d\ude00":3,"\uffff":4,"\ud83d":5,"\ud83dx":6,"\ue000":7}`
	want := "{\"\\ud800\":2,\"\\ud83d\":5,\"\\ud83dx\":6,\"\U0001f600\":3,\"\\udc00\":1,\"\ue000\":7,\"\uffff\":4}"
	got, err := canon.Append(nil, []byte(src), canon.JS)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("js:\n got %s\nwant %s", got, want)
	}
	if _, err := canon.Parse([]byte(src), canon.JCS); err == nil {
		t.Error("jcs accepted lone surrogates")
	}
}

// unitAlphabet is what random names are made of: digits (for array-index
// names), ASCII, the edges of the surrogate ranges, U+E000 and U+FFFF
// around them, and whole surrogate pairs.
var unitAlphabet = [][]uint16{
	{'0'}, {'1'}, {'9'}, {'a'}, {'A'}, {'-'}, {0x7f}, {0xe9},
	{0xd7ff}, {0xe000}, {0xfffd}, {0xffff},
	{0xd83d, 0xde00}, {0xd800, 0xdc00}, {0xdbff, 0xdfff},
	{0xd800}, {0xdbff}, {0xdc00}, {0xdfff}, {0xd83d}, // lone
}

// jsonName writes units as a JSON string token, each code point at random
// either raw (UTF-8) or as \u escapes in random case; lone surrogates are
// always escapes.
func jsonName(r *rand.Rand, units []uint16) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(units); i++ {
		u := units[i]
		pair := utf16.IsSurrogate(rune(u)) && u < 0xdc00 && i+1 < len(units) && units[i+1] >= 0xdc00 && units[i+1] < 0xe000
		lone := utf16.IsSurrogate(rune(u)) && !pair
		if lone || u < 0x20 || u == '"' || u == '\\' || r.IntN(3) == 0 {
			n := 1
			if pair {
				n = 2
			}
			for _, v := range units[i : i+n] {
				h := fmt.Sprintf(`\u%04x`, v)
				if r.IntN(2) == 0 {
					h = `\u` + strings.ToUpper(h[2:])
				}
				b.WriteString(h)
			}
			i += n - 1
			continue
		}
		if pair {
			b.WriteRune(utf16.DecodeRune(rune(u), rune(units[i+1])))
			i++
			continue
		}
		b.WriteRune(rune(u))
	}
	b.WriteByte('"')
	return b.String()
}

func hasLone(units []uint16) bool {
	for i := 0; i < len(units); i++ {
		if units[i] >= 0xd800 && units[i] < 0xdc00 && i+1 < len(units) && units[i+1] >= 0xdc00 && units[i+1] < 0xe000 {
			i++
			continue
		}
		if utf16.IsSurrogate(rune(units[i])) {
			return true
		}
	}
	return false
}

// indexValue reports whether units spell an ECMAScript array index.
func indexValue(units []uint16) (uint64, bool) {
	s := make([]byte, len(units))
	for i, u := range units {
		if u < '0' || u > '9' {
			return 0, false
		}
		s[i] = byte(u)
	}
	if len(s) == 0 || len(s) > 10 || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	v, _ := strconv.ParseUint(string(s), 10, 64)
	return v, v <= 4294967294
}

// refCompare is the reference order, written from the specification:
// under js, array indices first by value; then UTF-16 code units.
func refCompare(s canon.Scheme, a, b []uint16) int {
	if s == canon.JS {
		ia, oka := indexValue(a)
		ib, okb := indexValue(b)
		switch {
		case oka && okb:
			return cmp.Compare(ia, ib)
		case oka:
			return -1
		case okb:
			return 1
		}
	}
	return slices.Compare(a, b)
}

// TestMemberOrderRandom builds objects with random names and checks that
// Members (and the canonical output) follow the reference order.
func TestMemberOrderRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	extra := [][]uint16{
		utf16.Encode([]rune("4294967294")), utf16.Encode([]rune("4294967295")),
		utf16.Encode([]rune("01")), utf16.Encode([]rune("-1")), {},
	}
	for iter := 0; iter < 2000; iter++ {
		for _, s := range []canon.Scheme{canon.JS, canon.JCS} {
			var names [][]uint16
			seen := map[string]bool{}
			add := func(u []uint16) {
				if s == canon.JCS && hasLone(u) {
					return
				}
				k := fmt.Sprint(u)
				if !seen[k] {
					seen[k] = true
					names = append(names, u)
				}
			}
			for n := r.IntN(12); n > 0; n-- {
				var u []uint16
				for l := r.IntN(5); l > 0; l-- {
					u = append(u, unitAlphabet[r.IntN(len(unitAlphabet))]...)
				}
				add(u)
			}
			if r.IntN(4) == 0 {
				add(extra[r.IntN(len(extra))])
			}
			var src strings.Builder
			src.WriteByte('{')
			for i, u := range names {
				if i > 0 {
					src.WriteByte(',')
				}
				fmt.Fprintf(&src, "%s:%d", jsonName(r, u), i)
			}
			src.WriteByte('}')

			d, err := canon.Parse([]byte(src.String()), s)
			if err != nil {
				t.Fatalf("%s %s: %v", s, src.String(), err)
			}
			want := slices.Clone(names)
			slices.SortFunc(want, func(a, b []uint16) int { return refCompare(s, a, b) })
			ms := d.Root().Members()
			if len(ms) != len(want) {
				t.Fatalf("%s %s: %d members, want %d", s, src.String(), len(ms), len(want))
			}
			for k, m := range ms {
				i, _ := strconv.Atoi(m.Value.Text())
				if !slices.Equal(names[i], want[k]) {
					t.Fatalf("%s %s: member %d is %q (%x), want %x", s, src.String(), k, m.Name, names[i], want[k])
				}
				if !hasLone(names[i]) && (!utf8.ValidString(m.Name) || !slices.Equal(utf16.Encode([]rune(m.Name)), names[i])) {
					t.Fatalf("%s: member %d Name %q, want units %x", s, k, m.Name, names[i])
				}
			}
			// The canonical text lists the members in the same order, and
			// is a fixed point.
			out := d.Append(nil)
			d2, err := canon.Parse(out, s)
			if err != nil {
				t.Fatalf("%s: reparse %s: %v", s, out, err)
			}
			for k, m := range d2.Root().Members() {
				if m.Name != ms[k].Name {
					t.Fatalf("%s: canonical %s: member %d is %q, want %q", s, out, k, m.Name, ms[k].Name)
				}
			}
			if again := d2.Append(nil); string(again) != string(out) {
				t.Fatalf("%s: not a fixed point:\n%s\n%s", s, out, again)
			}
		}
	}
}
