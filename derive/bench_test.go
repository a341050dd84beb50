package derive_test

// Benchmarks of the whole key path — parse, canonical serialization and
// SHA-256 — with SHA-256 alone as the ceiling. Inputs come from
// scripts/gendoc/gen, deterministic for a fixed seed; MB/s is input bytes
// per second. Profile the big case with
//
//	go test -run '^$' -bench 'Key64MiB$' -cpuprofile cpu.out ./derive
//	go tool pprof -top derive.test cpu.out

import (
	"bytes"
	"crypto/sha256"
	"testing"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/derive"
	"github.com/idemkey/idemkey/scripts/gendoc/gen"
)

var sink [32]byte

// benchKey measures Parse followed by Key on src, as `idemkey key` does
// once the file is read.
func benchKey(b *testing.B, src []byte, s canon.Scheme) {
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		d, err := canon.Parse(src, s)
		if err != nil {
			b.Fatal(err)
		}
		sink = derive.Call{Task: "T", Tool: "X", Args: d.Root()}.Key()
	}
}

// benchText measures Text.Key on src, as `idemkey key` does once the
// file is read when nothing but the key is asked for.
func benchText(b *testing.B, src []byte, s canon.Scheme) {
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		k, err := derive.Text{Task: "T", Tool: "X", Args: src, Scheme: s}.Key()
		if err != nil {
			b.Fatal(err)
		}
		sink = k
	}
}

func BenchmarkText64MiB(b *testing.B)    { benchText(b, gen.Mixed64MiB(), canon.JS) }
func BenchmarkText64MiBJCS(b *testing.B) { benchText(b, gen.Mixed64MiB(), canon.JCS) }
func BenchmarkTextToolCall(b *testing.B) { benchText(b, gen.Call400(), canon.JS) }

// BenchmarkText64MiBMinified: the 64 MiB document minified (its line ends deleted: no line structure
// to guess run boundaries from) and as the one member of a root object
// (canon's object runs), as scripts/bench.sh times them.
func BenchmarkText64MiBMinified(b *testing.B) {
	benchText(b, bytes.ReplaceAll(gen.Mixed64MiB(), []byte("\n"), nil), canon.JS)
}
func BenchmarkText64MiBObject(b *testing.B) {
	benchText(b, append(append([]byte(`{"items":`), gen.Mixed64MiB()...), "}\n"...), canon.JS)
}
func BenchmarkTextStrings(b *testing.B) { benchText(b, gen.Strings16MiB(), canon.JS) }
func BenchmarkTextNumbers(b *testing.B) { benchText(b, gen.Numbers16MiB(), canon.JS) }

func BenchmarkKey64MiB(b *testing.B)     { benchKey(b, gen.Mixed64MiB(), canon.JS) }
func BenchmarkKey64MiBJCS(b *testing.B)  { benchKey(b, gen.Mixed64MiB(), canon.JCS) }
func BenchmarkKeyToolCall(b *testing.B)  { benchKey(b, gen.Call400(), canon.JS) }
func BenchmarkKeyStrings(b *testing.B)   { benchKey(b, gen.Strings16MiB(), canon.JS) }
func BenchmarkKeyNumbers(b *testing.B)   { benchKey(b, gen.Numbers16MiB(), canon.JS) }
func BenchmarkSHA256_64MiB(b *testing.B) { benchSum(b, gen.Mixed64MiB()) }

// BenchmarkKeyParsed64MiB measures Key alone over a document parsed once:
// the serialize pass plus SHA-256.
func BenchmarkKeyParsed64MiB(b *testing.B) {
	src := gen.Mixed64MiB()
	d, err := canon.Parse(src, canon.JS)
	if err != nil {
		b.Fatal(err)
	}
	c := derive.Call{Task: "T", Tool: "X", Args: d.Root()}
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		sink = c.Key()
	}
}

// benchSum measures SHA-256 alone over src: the ceiling for a key.
func benchSum(b *testing.B, src []byte) {
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		sink = sha256.Sum256(src)
	}
}

// BenchmarkKeyBatch derives keys for JSON Lines calls
// {"task","tool","args"} one line at a time on one core, as each worker
// of `idemkey key --batch --from call` does: parse the line with a reused
// Parser, pick out the three members, hash. It reports keys/s per core.
func BenchmarkKeyBatch(b *testing.B) {
	data := gen.Calls10k()
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	var p canon.Parser
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		for _, line := range lines {
			d, err := p.Parse(line, canon.JS)
			if err != nil {
				b.Fatal(err)
			}
			r := d.Root()
			task, _ := r.Get("task")
			tool, _ := r.Get("tool")
			args, _ := r.Get("args")
			sink = derive.Call{Task: task.Text(), Tool: tool.Text(), Args: args}.Key()
		}
	}
	b.ReportMetric(float64(len(lines))*float64(b.N)/b.Elapsed().Seconds(), "keys/s")
}

// BenchmarkKeyerBatch is BenchmarkKeyBatch the way `idemkey key --batch
// --from call` derives the keys of plain call records: one pass over each
// line with a reused canon.Pass, which gives the canonical text of the
// task, tool and args members, hashed by a reused Keyer.
func BenchmarkKeyerBatch(b *testing.B) {
	data := gen.Calls10k()
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	var p canon.Pass
	k := derive.NewKeyer(nil)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		for _, line := range lines {
			mems, ok := p.Members(line, canon.JS)
			if !ok {
				b.Fatal("invalid line")
			}
			var task, tool, args []byte
			for _, m := range mems {
				switch string(m.Name) {
				case "task":
					task = m.Value
				case "tool":
					tool = m.Value
				case "args":
					args = m.Value
				}
			}
			sink = k.Key(task, tool, args)
		}
	}
	b.ReportMetric(float64(len(lines))*float64(b.N)/b.Elapsed().Seconds(), "keys/s")
}
