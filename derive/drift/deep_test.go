package drift

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// deepLog is a log of lines calls of one tool whose arguments hold a value
// nested depth levels deep (arrays, objects, or both alternating) with a
// timestamp at the bottom that moves by a second from call to call, beside
// one that moves at the top: retries, each with a key of its own.
func deepLog(lines, depth int, shape string) []byte {
	var open, close string
	switch shape {
	case "arrays":
		open, close = strings.Repeat("[", depth), strings.Repeat("]", depth)
	case "objects":
		open, close = strings.Repeat(`{"a":`, depth), strings.Repeat("}", depth)
	default:
		open, close = strings.Repeat(`[{"a":`, depth/2), strings.Repeat("}]", depth/2)
	}
	var b strings.Builder
	for k := 0; k < lines; k++ {
		at := fmt.Sprintf(`"2024-05-01T10:00:%02dZ"`, k%60)
		fmt.Fprintf(&b, `{"task":"t","tool":"x","call_id":"c1","args":{"at":%s,"deep":%s%s%s,"n":1}}`+"\n", at, open, at, close)
	}
	return []byte(b.String())
}

// TestDeepLines analyses 50 lines of values nested 2,250 and 4,500 deep,
// of arrays, of objects and of both. Walking every level again at every
// level above it (canon's skip at every level of the diff's element walk;
// a pointer written out for every leaf) would be quadratic in depth:
// minutes and gigabytes. Doubling the depth at most doubles what the
// analysis allocates (a quadratic cost would quadruple it), and the drift
// is still found, with the deep pointer among its variations.
func TestDeepLines(t *testing.T) {
	for _, shape := range []string{"arrays", "objects", "mixed"} {
		t.Run(shape, func(t *testing.T) {
			var last uint64
			for _, depth := range []int{2250, 4500} {
				log := deepLog(50, depth, shape)
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				rep := analyze(t, log, Options{})
				runtime.ReadMemStats(&after)
				total := after.TotalAlloc - before.TotalAlloc
				t.Logf("%d deep, %d bytes of log: %d bytes allocated (%.0f×)", depth, len(log), total, float64(total)/float64(len(log)))
				if last > 0 && float64(total) > 2.5*float64(last) {
					t.Fatalf("%d deep: %d bytes allocated, %.1f times as much as at half the depth; want at most 2.5", depth, total, float64(total)/float64(last))
				}
				last = total
				var deep bool
				for _, f := range rep.Findings {
					for _, v := range f.Variations {
						deep = deep || strings.HasPrefix(v.Pointer, "/deep/") && len(v.Pointer) > depth
					}
				}
				if len(rep.Findings) == 0 || rep.Findings[0].Kind != FindingDrift || !deep {
					t.Errorf("%d deep: want one drift finding that names the deep pointer; got %d findings", depth, len(rep.Findings))
				}
			}
		})
	}
}

// BenchmarkDeepLines analyses 50 lines nested 2,250, 4,500 and 9,000 deep:
// the time per level (ns/level) stays flat when the cost is linear.
func BenchmarkDeepLines(b *testing.B) {
	for _, shape := range []string{"arrays", "objects", "mixed"} {
		for _, depth := range []int{2250, 4500, 9000} {
			log := deepLog(50, depth, shape)
			b.Run(fmt.Sprintf("%s/%d", shape, depth), func(b *testing.B) {
				b.SetBytes(int64(len(log)))
				for b.Loop() {
					analyze(b, log, Options{})
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(depth), "ns/level")
			})
		}
	}
}
