package diff

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/canon"
)

// lcsLen is the textbook dynamic program.
func lcsLen(a, b []uint64) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}

// checkCommon fails unless pairs is a common subsequence of a and b.
func checkCommon(t *testing.T, a, b []uint64, pairs [][2]int) {
	t.Helper()
	for k, p := range pairs {
		if a[p[0]] != b[p[1]] || k > 0 && (p[0] <= pairs[k-1][0] || p[1] <= pairs[k-1][1]) {
			t.Fatalf("not a common subsequence at %d: %v of %v / %v", k, pairs, a, b)
		}
	}
}

func TestAlignIsALongestCommonSubsequence(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	e := newEngine(canon.JS, 0, false)
	for n := range 2000 {
		a := make([]uint64, r.IntN(30))
		b := make([]uint64, r.IntN(30))
		alpha := uint64(2 + n%6)
		for i := range a {
			a[i] = r.Uint64N(alpha)
		}
		for i := range b {
			b[i] = r.Uint64N(alpha)
		}
		pairs, how := e.align(a, b)
		checkCommon(t, a, b, pairs)
		if how != alignExact || len(pairs) != lcsLen(a, b) {
			t.Fatalf("align(%v, %v) = %v (how %v), want length %d", a, b, pairs, how, lcsLen(a, b))
		}
		checkCommon(t, a, b, patience(a, b))
	}
}

// TestAlignFallback forces the patience alignment: a budget too small for
// the whole arrays, unique elements, a few scattered edits. The unchanged
// elements must still match, and the gaps be diffed exactly.
func TestAlignFallback(t *testing.T) {
	e := newEngine(canon.JS, 0, false)
	e.alignBudget = 500
	var a, b []uint64
	for i := range uint64(1000) {
		a = append(a, i)
		if i%100 == 50 {
			b = append(b, 1_000_000+i) // inserted
		}
		if i%100 != 70 { // removed
			b = append(b, i)
		}
	}
	pairs, how := e.align(a, b)
	checkCommon(t, a, b, pairs)
	if how != alignPatience || len(pairs) != 990 {
		t.Errorf("fallback matched %d (how %v), want 990 by patience", len(pairs), how)
	}
}

// BenchmarkDiffLarge compares two ~20 MB call arguments with about 2700
// scattered differences: changed values, inserted and removed elements.
func BenchmarkDiffLarge(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 7))
	var x, y bytes.Buffer
	x.WriteString(`{"rows":[`)
	y.WriteString(`{"rows":[`)
	first := true
	sep := func() {
		if !first {
			x.WriteByte(',')
			y.WriteByte(',')
		}
		first = false
	}
	for i := range 100_000 {
		row := fmt.Sprintf(`{"id":%d,"name":"customer %d","email":"c%d@example.com","tags":["a","b","c"],"amount":%d.%02d,"note":"%s"}`,
			i, i, i, r.IntN(100000), r.IntN(100), strings.Repeat("lorem ipsum ", 8))
		switch {
		case i%40 == 17: // changed value
			sep()
			x.WriteString(row)
			y.WriteString(strings.Replace(row, "customer", "Customer", 1))
		case i%1000 == 500: // removed from b
			if !first {
				x.WriteByte(',')
			}
			x.WriteString(row)
			first = false
		case i%1000 == 900: // inserted into b
			sep()
			x.WriteString(row)
			y.WriteString(fmt.Sprintf(`{"id":-%d},`, i))
			y.WriteString(row)
		default:
			sep()
			x.WriteString(row)
			y.WriteString(row)
		}
	}
	x.WriteString(`]}`)
	y.WriteString(`]}`)
	da, err := canon.Parse(x.Bytes(), canon.JS)
	if err != nil {
		b.Fatal(err)
	}
	db, err := canon.Parse(y.Bytes(), canon.JS)
	if err != nil {
		b.Fatal(err)
	}
	sa := &Side{Name: "a", Doc: da, Task: "t", Tool: "pay", Args: da.Root()}
	sb := &Side{Name: "b", Doc: db, Task: "t", Tool: "pay", Args: db.Root()}
	b.SetBytes(int64(x.Len() + y.Len()))
	b.ResetTimer()
	var res *Result
	for b.Loop() {
		res = Compare(sa, sb, Options{Scheme: canon.JS, Max: 50})
	}
	b.ReportMetric(float64(res.Diffs.Total()), "diffs")
	b.ReportMetric(float64(x.Len())/1e6, "MB/side")
}
