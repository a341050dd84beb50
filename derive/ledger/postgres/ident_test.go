package postgres

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// TestIdentMatchesRegexp checks ident, which replaced a regexp compiled at
// start-up, against that regexp on the edges (63 and 64 bytes, a leading
// digit or underscore, non-ASCII) and on random strings.
func TestIdentMatchesRegexp(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)
	cases := []string{"", "a", "_", "9", "a9", "_9", "ops", "Steps_2", "a-b", "a.b", "é", "aé", " a", "a ",
		strings.Repeat("s", 63), strings.Repeat("s", 64), "1" + strings.Repeat("s", 62), "a\x00", "Z", "z", "@", "[", "`", "{"}
	r := rand.New(rand.NewPCG(1, 2))
	const alphabet = "aZ_09-.é \x00"
	for i := 0; i < 5000; i++ {
		var b strings.Builder
		for n := r.IntN(70); n > 0; n-- {
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		cases = append(cases, b.String())
	}
	for _, c := range cases {
		if ident(c) != re.MatchString(c) {
			t.Errorf("ident(%q) = %v, the regexp says %v", c, ident(c), re.MatchString(c))
		}
	}
}
