package drift

import (
	"strings"
	"testing"
)

// TestTextComparisonsAsBefore checks the allocation-free word hashing and
// case/space folding against the plain definitions they replace.
func TestTextComparisonsAsBefore(t *testing.T) {
	plainWords := func(s string) []string {
		return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127 && (r == 'é' || r == 'ü' || r == 'ß'))
		})
	}
	plainFold := func(a, b string) bool {
		return strings.EqualFold(strings.Join(strings.Fields(a), " "), strings.Join(strings.Fields(b), " "))
	}
	texts := []string{
		"Refund order 4411 please", "refund  ORDER 4411 please ", " Refund order 4411, please.", "Refund order 4412 please",
		"Rückerstattung für Bestellung 77", "rückerstattung FÜR bestellung 77", "Refund\torder\n4411 please", "", "   ", "a b", "ab",
		"Straße 12 café", "STRASSE 12 café",
	}
	for _, a := range texts {
		for _, b := range texts {
			wa, wb := wordHashes(nil, a), wordHashes(nil, b)
			pa, pb := plainWords(a), plainWords(b)
			if len(wa) != len(pa) {
				t.Errorf("%q: %d words, want %d (%q)", a, len(wa), len(pa), pa)
			}
			setA, setB := map[string]bool{}, map[string]bool{}
			for _, w := range pa {
				setA[w] = true
			}
			inter := 0
			for _, w := range pb {
				if !setB[w] {
					setB[w] = true
					if setA[w] {
						inter++
					}
				}
			}
			want := 1.0
			if u := len(setA) + len(setB) - inter; u > 0 {
				want = float64(inter) / float64(u)
			}
			if got := jaccard(wa, wb); got != want {
				t.Errorf("jaccard(%q, %q) = %v, want %v", a, b, got, want)
			}
			if ascii(a) && ascii(b) {
				if got, want := foldSpaceEqual(a, b), plainFold(a, b); got != want {
					t.Errorf("foldSpaceEqual(%q, %q) = %v, want %v", a, b, got, want)
				}
			}
		}
	}
	if !sameNumbers(wordHashes(nil, "order 4411 of 2"), wordHashes(nil, "of 2: order 4411")) ||
		sameNumbers(wordHashes(nil, "order 4411"), wordHashes(nil, "order 4412")) {
		t.Error("sameNumbers")
	}
}
