package drift

import (
	"bytes"
	"sync"
	"testing"

	"github.com/idemkey/idemkey/derive/drift/driftgen"
)

var (
	benchOnce sync.Once
	benchLog  []byte
)

// BenchmarkDrift1M analyses a generated log of 1,000,000 calls (parsing,
// keys and analysis, as idemkey drift does them, on every core).
func BenchmarkDrift1M(b *testing.B) {
	benchOnce.Do(func() {
		var buf bytes.Buffer
		if _, err := driftgen.Generate(driftgen.Config{Seed: 7, Calls: 1_000_000}, &buf); err != nil {
			b.Fatal(err)
		}
		benchLog = buf.Bytes()
	})
	b.SetBytes(int64(len(benchLog)))
	b.ResetTimer()
	var rep *Report
	for b.Loop() {
		rep = analyze(b, benchLog, Options{})
	}
	b.ReportMetric(float64(len(rep.Findings)), "findings")
}
