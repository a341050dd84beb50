package canon

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestWriteParallelMatchesAppend serializes documents of a few MiB, whose
// values are larger than a piece at several levels, with writeParallel and
// compares with the sequential serializer.
func TestWriteParallelMatchesAppend(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for n := 0; n < 6; n++ {
		var b strings.Builder
		b.WriteString(`{"z":[`)
		for i := 0; b.Len() < 3*pieceSize; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			randomChild(r, &b, 0)
		}
		fmt.Fprintf(&b, `],"a\u00e9":{"big":"%s","0":[1.50,2]},"m":[`, strings.Repeat("x", pieceSize+n))
		for i := 0; i < 2000*(n+1); i++ {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"k%d":%d,"a":"\u00e9"}`, i%7, i)
		}
		b.WriteString("]}")
		src := []byte(b.String())
		for _, s := range []Scheme{JS, JCS} {
			d, err := Parse(src, s)
			if err != nil {
				if s == JCS {
					continue // random names may repeat
				}
				t.Fatal(err)
			}
			want := d.Append(nil)
			for _, node := range []Node{d.Root(), mustAt(t, d, "/m"), mustAt(t, d, "/z")} {
				var got bytes.Buffer
				if _, err := d.writeParallel(&got, node.Offset(), node.End()-node.Offset()); err != nil {
					t.Fatal(err)
				}
				if w := node.Append(nil); !bytes.Equal(got.Bytes(), w) {
					t.Fatalf("%s: writeParallel differs from Append at %s (%d vs %d bytes)", s, node.Raw()[:10], got.Len(), len(w))
				}
			}
			var all bytes.Buffer
			d.writeParallel(&all, d.root, len(src)-d.root)
			if !bytes.Equal(all.Bytes(), want) {
				t.Fatalf("%s: root differs", s)
			}
		}
	}
}

func mustAt(t *testing.T, d *Document, ptr string) Node {
	n, ok := d.Root().At(ptr)
	if !ok {
		t.Fatalf("no %s", ptr)
	}
	return n
}
