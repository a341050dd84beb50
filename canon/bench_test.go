package canon_test

// Benchmarks of the two passes over the input: Parse (validation and the
// member index) and the canonical serializers. Inputs come from
// scripts/gendoc/gen, deterministic for a fixed seed; MB/s is input bytes
// per second. The end-to-end key path, with SHA-256, is in derive.

import (
	"io"
	"testing"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/scripts/gendoc/gen"
)

var inputs = []struct {
	name string
	data func() []byte
}{
	{"Mixed64MiB", gen.Mixed64MiB},
	{"ToolCall", gen.Call400},
	{"Strings16MiB", gen.Strings16MiB},
	{"Numbers16MiB", gen.Numbers16MiB},
}

// each runs f as a sub-benchmark for every input, after checking that the
// input is valid under both schemes.
func each(b *testing.B, f func(b *testing.B, src []byte)) {
	for _, in := range inputs {
		src := in.data()
		for _, s := range []canon.Scheme{canon.JS, canon.JCS} {
			if _, err := canon.Parse(src, s); err != nil {
				b.Fatalf("%s under %v: %v", in.name, s, err)
			}
		}
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			f(b, src)
		})
	}
}

// BenchmarkParse measures the parse pass alone.
func BenchmarkParse(b *testing.B) {
	each(b, func(b *testing.B, src []byte) {
		for b.Loop() {
			if _, err := canon.Parse(src, canon.JS); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkParseJCS is BenchmarkParse under RFC 8785.
func BenchmarkParseJCS(b *testing.B) {
	each(b, func(b *testing.B, src []byte) {
		for b.Loop() {
			if _, err := canon.Parse(src, canon.JCS); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSerialize measures the serialize pass alone, into a reused
// buffer, over a document parsed once.
func BenchmarkSerialize(b *testing.B) {
	each(b, func(b *testing.B, src []byte) {
		d, _ := canon.Parse(src, canon.JS)
		buf := d.Append(nil)
		for b.Loop() {
			buf = d.Append(buf[:0])
		}
	})
}

// BenchmarkCanonAppend measures parse plus serialize into a reused buffer:
// what `idemkey canon` does without the I/O.
func BenchmarkCanonAppend(b *testing.B) {
	each(b, func(b *testing.B, src []byte) {
		var buf []byte
		for b.Loop() {
			d, err := canon.Parse(src, canon.JS)
			if err != nil {
				b.Fatal(err)
			}
			buf = d.Append(buf[:0])
		}
	})
}

// BenchmarkCanonWriteTo measures parse plus the streaming serializer, the
// path the key derivation takes (here into io.Discard instead of a hash).
func BenchmarkCanonWriteTo(b *testing.B) {
	each(b, func(b *testing.B, src []byte) {
		for b.Loop() {
			d, err := canon.Parse(src, canon.JS)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := d.WriteTo(io.Discard); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkOnePass measures WriteCanonical: validation and serialization
// in one pass, without the index.
func BenchmarkOnePass(b *testing.B) {
	each(b, func(b *testing.B, src []byte) {
		for b.Loop() {
			if _, err := canon.WriteCanonical(io.Discard, src, canon.JS); err != nil {
				b.Fatal(err)
			}
		}
	})
}
