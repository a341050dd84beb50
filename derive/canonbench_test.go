package derive_test

// The key of a big document against its canonical form alone (the
// key should cost about what the canonical form costs, its hash made
// beside it): BenchmarkCanon64MiB* write the one pass to io.Discard, as
// BenchmarkText64MiB* feed it to SHA-256 (through a writer that can
// rewind, as the hash can, so that the object shape is written in runs
// too), for the three shapes
// scripts/bench.sh times. Compare them in one run:
//
//	go test -run '^$' -bench '(Text|Canon)64MiB(Minified|Object)?$' -count 5 ./derive

import (
	"bytes"
	"testing"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/scripts/gendoc/gen"
)

// discard is io.Discard as a canon.Rewinder.
type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) Rewind() error               { return nil }

var _ canon.Rewinder = discard{}

func benchCanon(b *testing.B, src []byte) {
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := canon.WriteCanonical(discard{}, src, canon.JS); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCanon64MiB(b *testing.B) { benchCanon(b, gen.Mixed64MiB()) }
func BenchmarkCanon64MiBMinified(b *testing.B) {
	benchCanon(b, bytes.ReplaceAll(gen.Mixed64MiB(), []byte("\n"), nil))
}
func BenchmarkCanon64MiBObject(b *testing.B) {
	benchCanon(b, append(append([]byte(`{"items":`), gen.Mixed64MiB()...), "}\n"...))
}
