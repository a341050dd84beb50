package canon

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// randomChild writes a random JSON value with nested objects (unsorted,
// some names escaped, some duplicated), arrays, strings and numbers.
func randomChild(r *rand.Rand, b *strings.Builder, depth int) {
	switch k := r.IntN(8); {
	case k < 3 && depth < 4:
		b.WriteString("{")
		n := r.IntN(6)
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			switch r.IntN(5) {
			case 0:
				fmt.Fprintf(b, `"n\u00e9%d":`, r.IntN(4)) // escaped: kept in the arena
			case 1:
				fmt.Fprintf(b, `"%d":`, r.IntN(12)) // array-index names
			default:
				fmt.Fprintf(b, `"k%c":`, 'a'+rune(r.IntN(6)))
			}
			randomChild(r, b, depth+1)
		}
		b.WriteString("}")
	case k < 5 && depth < 4:
		b.WriteString("[")
		n := r.IntN(5)
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			randomChild(r, b, depth+1)
		}
		b.WriteString("]")
	case k == 5:
		fmt.Fprintf(b, `"s,]}\"%d{["`, r.IntN(100))
	case k == 6:
		fmt.Fprintf(b, "%d.%d0", r.IntN(1000), r.IntN(100))
	default:
		b.WriteString("null")
	}
}

// TestParallelMatchesSequential checks that the two-core parse gives the
// same canonical text and duplicates as the sequential one, for roots that
// are arrays and objects (whose members may repeat across the split).
func TestParallelMatchesSequential(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	tried, parallel := 0, 0
	for n := 0; n < 3000; n++ {
		var b strings.Builder
		obj := r.IntN(2) == 0
		if obj {
			b.WriteString("{\n")
		} else {
			b.WriteString("[\n")
		}
		children := 1 + r.IntN(12)
		for i := 0; i < children; i++ {
			if i > 0 {
				b.WriteString(",\n")
			}
			if obj {
				switch r.IntN(3) {
				case 0:
					fmt.Fprintf(&b, `"r\u00e8%d": `, r.IntN(5))
				default:
					fmt.Fprintf(&b, `"r%d": `, r.IntN(8))
				}
			}
			randomChild(r, &b, 1)
		}
		if obj {
			b.WriteString("\n}\n")
		} else {
			b.WriteString("\n]\n")
		}
		src := []byte(b.String())
		for _, s := range []Scheme{JS, JCS} {
			tried++
			var seq, par Parser
			want, werr := seq.parseSequential(src, s, MaxDepth)
			got, ok := par.parseParallel(src, s, MaxDepth)
			if !ok {
				continue
			}
			parallel++
			if werr != nil {
				t.Fatalf("%s: parallel parse succeeded where sequential failed: %v\n%s", s, werr, src)
			}
			if g, w := string(got.Append(nil)), string(want.Append(nil)); g != w {
				t.Fatalf("%s: parallel %s\nsequential %s\ninput %s", s, g, w, src)
			}
			if fmt.Sprint(got.Duplicates()) != fmt.Sprint(want.Duplicates()) {
				t.Fatalf("%s: duplicates %v, want %v\n%s", s, got.Duplicates(), want.Duplicates(), src)
			}
			// The Node view walks the merged index too.
			if g, w := len(got.Root().Members())+len(got.Root().Elements()), len(want.Root().Members())+len(want.Root().Elements()); g != w {
				t.Fatalf("%s: %d children, want %d", s, g, w)
			}
		}
	}
	if parallel < tried/3 {
		t.Fatalf("the parallel parse ran on only %d of %d inputs", parallel, tried)
	}
}

// TestParallelFallsBack checks that invalid input, and input the split
// cannot handle, leave the exact errors to the sequential parse.
func TestParallelFallsBack(t *testing.T) {
	for _, src := range []string{
		`[1,2,3,4,5,6,7,8,9,10,]`,
		`[1,2,3,4,5,6,7,8,9,10] x`,
		`{"a":1,"b":2,"c":3,"d":4,"a":5}`, // JCS: duplicate across the split
		`["a","b","c",  "d\ud800", "e"]`,
		`[1,2,3,4,5,6,7,8,9,{"x":1,}]`,
		`"just a string"`,
		`[[[[[[[[[[1]]]]]]]]]]`,
	} {
		var seq, par Parser
		_, werr := seq.parseSequential([]byte(src), JCS, MaxDepth)
		_, ok := par.parseParallel([]byte(src), JCS, MaxDepth)
		if werr != nil && ok {
			t.Errorf("%s: parallel parse accepted what the sequential parse rejects (%v)", src, werr)
		}
	}
}

// TestGuessedSplitAtTheWrongDepth feeds documents whose lines mislead the
// split guess (nested elements at the root's indentation): the parallel
// parse must refuse them or agree with the sequential one.
func TestGuessedSplitAtTheWrongDepth(t *testing.T) {
	for _, src := range []string{
		"[\n1,\n[\n2,\n3,\n4,\n5,\n6],\n7\n]",
		"[\n{\"a\": [\n1,\n2,\n3,\n4]},\n{\"b\": 2}\n]",
		"{\n\"x\": [\n1,\n2,\n3,\n4,\n5],\n\"y\": 1\n}",
		"[\n1,\n2,\n3,\n4,\n5,\n6\n]",
		"[\n  1,\n  [\n  2,\n  3],\n  4,\n  5\n]",
	} {
		for _, s := range []Scheme{JS, JCS} {
			var seq, par Parser
			want, err := seq.parseSequential([]byte(src), s, MaxDepth)
			if err != nil {
				t.Fatalf("%q: %v", src, err)
			}
			if got, ok := par.parseParallel([]byte(src), s, MaxDepth); ok {
				if g, w := got.Append(nil), want.Append(nil); string(g) != string(w) {
					t.Fatalf("%q: parallel %s, sequential %s", src, g, w)
				}
			}
		}
	}
}

// TestMisguessedSplitFallsBack checks the case the guess gets wrong: the
// guess lands inside a nested array, the first run passes it, and the
// parallel parse gives up rather than splice two wrong halves.
func TestMisguessedSplitFallsBack(t *testing.T) {
	src := []byte("[\n1,\n[\n2,\n3,\n4,\n5,\n6],\n7\n]")
	g := guessSplit(src, 0, len(src)/2)
	if g < 0 || src[g] != ',' || g > strings.Index(string(src), "6]") {
		t.Fatalf("guess %d is not the nested comma the test needs", g)
	}
	var par Parser
	if _, ok := par.parseParallel(src, JS, MaxDepth); ok {
		t.Fatal("parallel parse accepted a split inside a nested array")
	}
	d, err := Parse(src, JS)
	if err != nil || string(d.Append(nil)) != "[1,[2,3,4,5,6],7]" {
		t.Fatalf("Parse: %v %s", err, d.Append(nil))
	}
}
