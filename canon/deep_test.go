package canon_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkey/idemkey/canon"
)

// deepShapes are documents nested 9,999 levels deep (inside MaxDepth),
// the hostile inputs of the memory bounds: chains of objects with long and
// short names, of arrays, of both alternating, and of objects that hold a
// large value beside the next level at every level.
func deepShapes() []struct {
	name string
	src  []byte
} {
	const depth = 9999
	long := `"` + strings.Repeat("n", 110) + `"`
	lossy := `{` + long + `:9007199254740993,` + long + `:1}` // a number rounded, a repeated name
	var alt strings.Builder
	for k := 0; k < depth; k++ {
		if k%2 == 0 {
			alt.WriteString(`[`)
		} else {
			alt.WriteString(`{` + long + `:`)
		}
	}
	alt.WriteString(lossy)
	for k := depth - 1; k >= 0; k-- {
		if k%2 == 0 {
			alt.WriteString(`]`)
		} else {
			alt.WriteString(`}`)
		}
	}
	wide := strings.Repeat(`{"pad":"`+strings.Repeat("p", 100)+`","z":`, depth/10) + `1` + strings.Repeat(`}`, depth/10)
	return []struct {
		name string
		src  []byte
	}{
		{"objects-long-names", []byte(strings.Repeat(`{`+long+`:`, depth) + lossy + strings.Repeat(`}`, depth))},
		{"objects", []byte(strings.Repeat(`{"a":`, depth) + `1` + strings.Repeat(`}`, depth))},
		{"objects-escaped", []byte(strings.Repeat(`{"\u0061b":`, depth) + `"\u00e9"` + strings.Repeat(`}`, depth))},
		{"arrays", []byte(strings.Repeat(`[`, depth) + `1` + strings.Repeat(`]`, depth))},
		{"alternating", []byte(alt.String())},
		{"objects-in-arrays-in-an-object", []byte(`{"a":` + strings.Repeat(`[{"b":`, depth/2) + `1` + strings.Repeat(`}]`, depth/2) + `}`)},
		{"wide", []byte(wide)},
		{"root-array-of-deep", []byte(`[` + strings.Repeat(`{"a":`, depth-1) + `1` + strings.Repeat(`}`, depth-1) + `,2]`)},
	}
}

// heapWatch samples the live heap while f runs and returns its peak and
// the bytes f allocated. A heap past limit panics at once, naming what
// grew, instead of letting a quadratic path take the machine's memory.
func heapWatch(what string, limit uint64, f func()) (peak, total uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	runtime.GC()
	base := read()
	var top atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if h := read(); h > base && h-base > top.Load() {
				top.Store(h - base)
				if h-base > limit {
					panic(fmt.Sprintf("%s: the heap grew by %d bytes, past %d", what, h-base, limit))
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	close(stop)
	<-done
	return max(top.Load(), b.HeapAlloc-min(a.HeapAlloc, b.HeapAlloc)), b.TotalAlloc - a.TotalAlloc
}

// TestDeepMemoryLinear canonicalizes documents nested 9,999 levels deep by
// every path (the one pass to a writer, to a hash and appending; a Pass's
// Append and Members; Parse and its writers) and bounds the bytes each
// allocates, and with them the heap they can hold, to 20 times the input: a pass that copied every level's text into its parent
// again would be quadratic in depth (a 1.1 MB document would take 24 GB).
func TestDeepMemoryLinear(t *testing.T) {
	paths := []struct {
		name string
		f    func(src []byte) []byte
	}{
		{"WriteCanonical", func(src []byte) []byte {
			var b bytes.Buffer
			if _, err := canon.WriteCanonical(&b, src, canon.JS); err != nil {
				t.Fatal(err)
			}
			return b.Bytes()
		}},
		{"WriteCanonical-hash", func(src []byte) []byte {
			h := sha256.New()
			if _, err := canon.WriteCanonical(h, src, canon.JS); err != nil {
				t.Fatal(err)
			}
			return nil
		}},
		{"AppendCanonical", func(src []byte) []byte {
			out, err := canon.AppendCanonical(nil, src, canon.JS)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}},
		{"Pass.Append", func(src []byte) []byte {
			var pass canon.Pass
			out, ok := pass.Append(nil, src, canon.JS)
			if !ok {
				t.Fatal("Pass.Append failed")
			}
			return out
		}},
		{"Pass.Members", func(src []byte) []byte {
			var pass canon.Pass
			if _, ok := pass.Members(src, canon.JS); ok != (src[0] == '{') {
				t.Fatal("Pass.Members failed")
			}
			return nil
		}},
		{"Losses", func(src []byte) []byte {
			d, err := canon.Parse(src, canon.JS)
			if err != nil {
				t.Fatal(err)
			}
			d.Root().Losses(0)
			return nil
		}},
		{"Parse-WriteTo", func(src []byte) []byte {
			d, err := canon.Parse(src, canon.JS)
			if err != nil {
				t.Fatal(err)
			}
			d.WriteTo(io.Discard)
			return d.Append(nil)
		}},
	}
	for _, sh := range deepShapes() {
		want, err := canon.Append(nil, sh.src, canon.JS)
		if err != nil {
			t.Fatalf("%s: %v", sh.name, err)
		}
		for _, p := range paths {
			n := uint64(len(sh.src))
			var out []byte
			peak, total := heapWatch(sh.name+" by "+p.name, 64*n+(64<<20), func() { out = p.f(sh.src) })
			if out != nil && !bytes.Equal(out, want) {
				t.Errorf("%s by %s: the canonical form differs from Parse's", sh.name, p.name)
			}
			t.Logf("%s (%d bytes) by %s: peak heap %.1f×, allocated %.1f×", sh.name, n, p.name, float64(peak)/float64(n), float64(total)/float64(n))
			if total > 20*n {
				t.Errorf("%s (%d bytes) by %s: %d bytes allocated; want at most %d", sh.name, n, p.name, total, 20*n)
			}
		}
	}
}

// TestDeepArraysEndLinear asks for the end of every array of arrays nested
// 9,999 deep, outermost first, as a walk of the tree does (diff, drift):
// a walk of each one's whole subtree would be quadratic in depth. The walks
// read no more than the input before the arrays are indexed, and every
// answer is right.
func TestDeepArraysEndLinear(t *testing.T) {
	const depth = 9999
	for _, src := range [][]byte{
		[]byte(strings.Repeat(`[`, depth) + `1` + strings.Repeat(`]`, depth)),
		[]byte(strings.Repeat(`[0,"]",{"a":[`, depth/3) + `1` + strings.Repeat(`]}]`, depth/3)),
	} {
		d, err := canon.Parse(src, canon.JS)
		if err != nil {
			t.Fatal(err)
		}
		ends := map[int]int{} // container start → end, by a scan
		var open []int
		for j := 0; j < len(src); j++ {
			switch src[j] {
			case '"':
				j += 1 + bytes.IndexByte(src[j+1:], '"')
			case '[', '{':
				open = append(open, j)
			case ']', '}':
				ends[open[len(open)-1]] = j + 1
				open = open[:len(open)-1]
			}
		}
		levels := 0
		for n := d.Root(); n.Kind() == canon.Array || n.Kind() == canon.Object; levels++ {
			if end := n.End(); end != ends[n.Offset()] {
				t.Fatalf("level %d: End = %d, want %d", levels, end, ends[n.Offset()])
			}
			if n.Kind() == canon.Object {
				n = n.Members()[0].Value
				continue
			}
			es := n.Elements()
			n = es[len(es)-1]
		}
		walked, indexed := d.Walked()
		t.Logf("%d levels, %d bytes: the walks read %d bytes, indexed %v", levels, len(src), walked, indexed)
		if !indexed || walked > 2*int64(len(src))+int64(levels) {
			t.Errorf("%d levels, %d bytes: the walks read %d bytes (indexed %v); want at most about the input", levels, len(src), walked, indexed)
		}
	}
}

// TestLossesManyDuplicates has Losses check 100,000 repeated names inside a
// value that a later repeat drops, and as many outside: checking each against
// every other, and finding its pointer by a walk of its object's members,
// would be quadratic (past the test binary's timeout); the walk meets each
// where its member was kept.
func TestLossesManyDuplicates(t *testing.T) {
	const n = 100000
	var b strings.Builder
	b.WriteString(`{"a":{`)
	for k := 0; k < n; k++ {
		fmt.Fprintf(&b, `"x%d":1,"x%d":2,`, k, k)
	}
	b.WriteString(`"z":0},"a":1,"b":{`)
	for k := 0; k < n; k++ {
		fmt.Fprintf(&b, `"y%d":1,"y%d":2,`, k, k)
	}
	b.WriteString(`"z":0}}`)
	d, err := canon.Parse([]byte(b.String()), canon.JS)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Duplicates()) != 2*n+1 {
		t.Fatalf("%d duplicates, want %d", len(d.Duplicates()), 2*n+1)
	}
	ls := d.Root().Losses(0)
	if len(ls) != n+1 || ls[0].Pointer != "/a" || ls[1].Pointer != "/b/y0" || ls[n].Pointer != fmt.Sprintf("/b/y%d", n-1) {
		t.Fatalf("%d losses (want %d), the first %+v", len(ls), n+1, ls[:min(len(ls), 2)])
	}
}
