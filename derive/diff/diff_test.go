package diff

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/canon"
)

// naiveDupPlace is the straightforward (quadratic) way to place a
// duplicate: walk down from the root, and count lines from the start.
func naiveDupPlace(root canon.Node, src []byte, off int) (string, int) {
	var ptr []token
	n := root
outer:
	for {
		switch n.Kind() {
		case canon.Object:
			for _, m := range n.Members() {
				if m.NameOffset <= off && off < m.Value.End() {
					ptr = append(ptr, token{name: m.Name, idx: -1})
					n = m.Value
					continue outer
				}
			}
		case canon.Array:
			for k, el := range n.Elements() {
				if el.Offset() <= off && off < el.End() {
					ptr = append(ptr, token{idx: k})
					n = el
					continue outer
				}
			}
		}
		break
	}
	line, _ := canon.Position(src, off)
	return pointerOf(ptr), line
}

// randomDupDoc writes nested objects and arrays over several lines, with
// repeated member names here and there.
func randomDupDoc(r *rand.Rand, depth int, b *strings.Builder) {
	switch k := r.IntN(4); {
	case depth > 3 || k == 0:
		fmt.Fprintf(b, "%d", r.IntN(100))
	case k == 1:
		b.WriteString("[")
		for i := range r.IntN(4) {
			if i > 0 {
				b.WriteString(",\n")
			}
			randomDupDoc(r, depth+1, b)
		}
		b.WriteString("]")
	default:
		b.WriteString("{")
		for i := range r.IntN(6) {
			if i > 0 {
				b.WriteString(",")
				if r.IntN(2) == 0 {
					b.WriteString("\n")
				}
			}
			fmt.Fprintf(b, "%q:", []string{"a", "b", "c", "~x/"}[r.IntN(4)])
			randomDupDoc(r, depth+1, b)
		}
		b.WriteString("}")
	}
}

var dupRe = regexp.MustCompile(`\((lines? \d+(?: and \d+)?)\)`)

// TestDuplicatesPlacedAsBefore checks the indexed placement of duplicate
// names (pointer and lines) against the naive walk on random documents.
func TestDuplicatesPlacedAsBefore(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	checked := 0
	for range 3000 {
		var b strings.Builder
		randomDupDoc(r, 0, &b)
		doc, err := canon.Parse([]byte(b.String()), canon.JS)
		if err != nil || len(doc.Duplicates()) == 0 {
			continue
		}
		side := &Side{Name: "a", Doc: doc, Task: "t", Tool: "x", Args: doc.Root()}
		res := Compare(side, side, Options{Scheme: canon.JS})
		if len(res.Warns.Items) != 2*len(doc.Duplicates()) {
			t.Fatalf("%d warnings for %d duplicates on each side", len(res.Warns.Items), len(doc.Duplicates()))
		}
		for k, d := range doc.Duplicates() {
			w := res.Warns.Items[k]
			ptr, ld := naiveDupPlace(doc.Root(), doc.Source(), d.Dropped)
			_, lk := naiveDupPlace(doc.Root(), doc.Source(), d.Kept)
			want := "/args" + ptr + "/" + canon.PointerToken(d.Name)
			where := fmt.Sprintf("lines %d and %d", ld, lk)
			if ld == lk {
				where = fmt.Sprintf("line %d", ld)
			}
			if w.Pointer != want || dupRe.FindStringSubmatch(w.Reason)[1] != where {
				t.Fatalf("%s\nwarning %q: %s\nwant pointer %q, %s", b.String(), w.Pointer, w.Reason, want, where)
			}
			checked++
		}
	}
	if checked < 1000 {
		t.Fatalf("only %d duplicates checked", checked)
	}
}

// manyDuplicates is about 1 MB with n duplicate names: half in one
// object, half spread over n/2 members of one large object, one a line.
func manyDuplicates(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"same":{`)
	for i := range n/2 + 1 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"a":%d`, i)
	}
	b.WriteString("},\n\"spread\":{")
	for i := range n / 2 {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `"k%d":1,"k%d":2`, i, i)
	}
	b.WriteString("}}")
	return []byte(b.String())
}

// TestManyDuplicatesAllReported reports all of 200,000 duplicate names
// (--max 0). Placing each one by walking from the root and counting lines
// from the start, as before, took minutes for half as many.
func TestManyDuplicatesAllReported(t *testing.T) {
	src := manyDuplicates(200_000)
	doc, err := canon.Parse(src, canon.JS)
	if err != nil {
		t.Fatal(err)
	}
	side := &Side{Name: "a", Doc: doc, Task: "t", Tool: "x", Args: doc.Root()}
	res := Compare(side, side, Options{Scheme: canon.JS})
	if got := len(res.Warns.Items); got != 400_000 {
		t.Fatalf("%d warnings, want 400000", got)
	}
	last := res.Warns.Items[199_999]
	if last.Pointer != "/args/spread/k99999" || !strings.Contains(last.Reason, "(line 100001)") {
		t.Errorf("last warning %s: %s", last.Pointer, last.Reason)
	}
}

// BenchmarkDuplicates: 100,000 duplicate names in about 1 MB, all reported.
func BenchmarkDuplicates(b *testing.B) {
	src := manyDuplicates(100_000)
	doc, err := canon.Parse(src, canon.JS)
	if err != nil {
		b.Fatal(err)
	}
	side := &Side{Name: "a", Doc: doc, Task: "t", Tool: "x", Args: doc.Root()}
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		Compare(side, side, Options{Scheme: canon.JS})
	}
}
