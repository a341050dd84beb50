package derive

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestUUIDLayout: a uuid key is an RFC 9562 version-8 UUID whose other
// 122 bits are the digest's.
func TestUUIDLayout(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 200; i++ {
		var k [32]byte
		for j := range k {
			k[j] = byte(r.Uint32())
		}
		u := string(AppendUUID(nil, k))
		if len(u) != 36 || u[8] != '-' || u[13] != '-' || u[18] != '-' || u[23] != '-' {
			t.Fatalf("bad layout %q", u)
		}
		if u[14] != '8' {
			t.Fatalf("%q: version nibble %c, want 8", u, u[14])
		}
		if !strings.ContainsRune("89ab", rune(u[19])) {
			t.Fatalf("%q: variant nibble %c, want 8, 9, a or b", u, u[19])
		}
		// The other 122 bits are the digest's.
		kf := Format{Name: "hex"}
		h := string(kf.Append(nil, k))[:32]
		plain := strings.ReplaceAll(u, "-", "")
		for j := 0; j < 32; j++ {
			if j == 12 || j == 16 {
				continue
			}
			if plain[j] != h[j] {
				t.Fatalf("%q differs from digest %q at nibble %d", u, h, j)
			}
		}
	}
}
