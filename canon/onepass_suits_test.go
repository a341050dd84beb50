package canon

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// TestOnePassSuits: canon chooses the one pass for small documents,
// arrays, and objects whose bulk is one array (written in runs), and the
// indexed path for other large objects; OnePassMayFit says the same from
// a file's size and first bytes.
func TestOnePassSuits(t *testing.T) {
	if !useParallel(make([]byte, ParallelMin)) {
		t.Skip("one core: nothing is written in runs")
	}
	item := `{"sku":"a-1","qty":3,"note":"` + strings.Repeat("x", 200) + `"}`
	array := func() []byte {
		var b bytes.Buffer
		b.WriteByte('[')
		for b.Len() < ParallelMin+1024 {
			b.WriteString(item + ",")
		}
		b.WriteString(item + "]")
		return b.Bytes()
	}
	bulk := append(append([]byte(`{"task":"t","items":`), array()...), '}')
	var spread bytes.Buffer
	spread.WriteByte('{')
	for i := 0; spread.Len() < ParallelMin+1024; i++ {
		if i > 0 {
			spread.WriteByte(',')
		}
		spread.WriteString(`"k` + strconv.Itoa(i) + `":` + item)
	}
	spread.WriteByte('}')
	for _, c := range []struct {
		name string
		doc  []byte
		want bool
	}{
		{"small object", []byte(`{"a":1}`), true},
		{"large array", array(), true},
		{"large object, one bulk array", bulk, true},
		{"large object, many members", spread.Bytes(), false},
	} {
		if got := OnePassSuits(c.doc); got != c.want {
			t.Errorf("%s: OnePassSuits = %v, want %v", c.name, got, c.want)
		}
		if got := OnePassMayFit(int64(len(c.doc)), c.doc[:min(len(c.doc), 4096)]); !got {
			t.Errorf("%s: OnePassMayFit = false for a document it may fit", c.name)
		}
	}
	if OnePassMayFit(ParallelMin, []byte(` "a long string"`)) {
		t.Error("OnePassMayFit: a large scalar document")
	}
}
