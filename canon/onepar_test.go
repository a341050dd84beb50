package canon

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// runsCheck runs writeRunsParallel on src with runs of runSize bytes and
// checks it against Parse: the same canonical text, or a report that the
// input is invalid exactly when Parse fails.
func runsCheck(t *testing.T, src []byte, s Scheme, runSize int) (done bool) {
	t.Helper()
	var buf bytes.Buffer
	n, werr, valid, done := writeRunsParallel(&buf, src, s, runSize)
	if !done {
		if buf.Len() != 0 || n != 0 {
			t.Fatalf("%s: declined %q but wrote %q", s, src, buf.Bytes())
		}
		return false
	}
	d, err := Parse(src, s)
	switch {
	case werr != nil:
		t.Fatalf("%s: %q: write error %v", s, src, werr)
	case err != nil && valid:
		t.Fatalf("%s: %q: runs accepted input Parse rejects (%v): %q", s, src, err, buf.Bytes())
	case err == nil && !valid:
		t.Fatalf("%s: %q: runs rejected valid input", s, src)
	case err == nil && (n != int64(buf.Len()) || !bytes.Equal(buf.Bytes(), d.Append(nil))):
		t.Fatalf("%s: %q (runs of %d): wrote %q (%d), want %q", s, src, runSize, buf.Bytes(), n, d.Append(nil))
	}
	return true
}

// TestRunsMatchParse compares the parallel runs with Parse on random
// arrays of lines, valid and not, cut into runs of many sizes.
func TestRunsMatchParse(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	done := 0
	for n := 0; n < 3000; n++ {
		// One element a line (boundaries guessed from the lines), or all
		// on one line (boundaries found by a structural scan).
		nl, indent := "\n", strings.Repeat(" ", r.IntN(3))
		if n%3 == 0 {
			nl, indent = "", ""
		}
		var b strings.Builder
		b.WriteString("[" + nl)
		children := 1 + r.IntN(40)
		for i := 0; i < children; i++ {
			if i > 0 {
				b.WriteString("," + nl)
			}
			b.WriteString(indent)
			randomChild(r, &b, 1)
		}
		b.WriteString(nl + "]" + nl)
		src := []byte(b.String())
		if r.IntN(4) == 0 {
			// Break it somewhere: most such inputs become invalid.
			k := r.IntN(len(src))
			src = append(src[:k:k], append([]byte(`}"`[r.IntN(2):][:1]), src[k:]...)...)
		}
		array := bytes.HasPrefix(src, []byte("[")) && bytes.HasSuffix(bytes.TrimRight(src, " \n"), []byte("]"))
		for _, s := range []Scheme{JS, JCS} {
			if runsCheck(t, src, s, 1+r.IntN(60)) != array {
				t.Fatalf("%q: runs taken %v, want %v (the root is an array)", src, !array, array)
			}
			if array {
				done++
			}
		}
	}
	if done < 5000 {
		t.Fatalf("the runs ran on only %d of 6000 inputs", done)
	}
}

// TestRunsMisguessed feeds arrays whose nested elements sit at the root's
// indentation, so that guessed run ends fall inside them: the runs must
// notice and finish sequentially with the right text.
func TestRunsMisguessed(t *testing.T) {
	for _, src := range []string{
		"[\n1,\n[\n2,\n3,\n4,\n5,\n6],\n7\n]",
		"[\n{\"a\": [\n1,\n2,\n3,\n4]},\n{\"b\": 2}\n]",
		"[\n  1,\n  [\n  2,\n  3],\n  4,\n  5\n]",
		"[\n1,\n[\n2,\n3,\n4,\n5,\n6],\n7,\n[\n8,\n9],\n10,\n11,\n12\n]",
		"[\n1,\n[\n2,\n3,\n4,\n5,\n6],\n7,\n[\n8,\n9],\n10,\n11,\n12,\n]", // invalid at the end
		"[\n1,\n2,\n3,\n4,\n5,\n6\n]",
	} {
		for _, s := range []Scheme{JS, JCS} {
			for size := 1; size < 12; size++ {
				if !runsCheck(t, []byte(src), s, size) {
					t.Fatalf("%q: declined", src)
				}
			}
		}
	}
}

// TestRunsDecline checks the inputs the runs leave to the one pass on one
// core: those whose root is not an array, or is an empty one.
func TestRunsDecline(t *testing.T) {
	for _, src := range []string{
		"{\n\"a\": 1\n}", "[\n1,\n2\n] x", "[ \n ]", "[]", "\"x\"", "[\n1,\n2", "",
	} {
		if runsCheck(t, []byte(src), JS, 1) {
			t.Errorf("%q: not declined", src)
		}
	}
}

type failWriter struct{ after int }

func (f *failWriter) Write(b []byte) (int, error) {
	if f.after -= len(b); f.after < 0 {
		return 0, errors.New("disk full")
	}
	return len(b), nil
}

// TestRunsWriteError checks that the writer's error comes back.
func TestRunsWriteError(t *testing.T) {
	var b strings.Builder
	b.WriteString("[\n")
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&b, "{\"b\": %d, \"a\": [%d]},\n", i, i)
	}
	b.WriteString("null\n]")
	_, werr, valid, done := writeRunsParallel(&failWriter{after: 5000}, []byte(b.String()), JS, 100)
	if !done || !valid || werr == nil || werr.Error() != "disk full" {
		t.Fatalf("done %v, valid %v, error %v", done, valid, werr)
	}
}

// TestWriteCanonicalWriteError checks that the one pass on one core stops
// writing at the writer's first error and returns it, and that a pooled
// writer state left by a failed pass does not leak into the next pass.
func TestWriteCanonicalWriteError(t *testing.T) {
	var b strings.Builder
	b.WriteString("[")
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&b, "{\"b\": %d, \"a\": [%d, \"x\"]},", i, i)
	}
	b.WriteString("null]")
	n, err := WriteCanonical(&failWriter{after: 40000}, []byte(b.String()), JS)
	if err == nil || err.Error() != "disk full" || n > 40000 {
		t.Fatalf("wrote %d bytes, error %v; want the writer's error after at most 40000 bytes", n, err)
	}
	// A pass that fails inside an object, then passes that must not see
	// its state.
	for k := 0; k < 3; k++ {
		if _, err := WriteCanonical(io.Discard, []byte(`{"a":{"b":[1,{"c":`), JS); err == nil {
			t.Fatal("truncated input accepted")
		}
		var out bytes.Buffer
		if _, err := WriteCanonical(&out, []byte(`[{"z":1,"y":[2]},3]`), JS); err != nil || out.String() != `[{"y":[2],"z":1},3]` {
			t.Fatalf("after a failed pass: %q, %v", out.String(), err)
		}
	}
}

// TestWriteCanonicalLargeShapes checks WriteCanonical on large documents
// of the shapes at the edges of the runs: an empty array padded with
// white space, one element, and an object.
func TestWriteCanonicalLargeShapes(t *testing.T) {
	pad := strings.Repeat(" ", ParallelMin)
	for _, src := range []string{
		"[" + pad + "]",
		"[\n" + pad + "\n]\n",
		"[\n\"" + strings.Repeat("x", ParallelMin) + "\"\n]",
		"[" + pad + "{\"b\":1,\"a\":2}" + pad + "]",
		"{\"b\":" + pad + "1,\"a\":[]}",
	} {
		d, err := Parse([]byte(src), JS)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if _, err := WriteCanonical(&out, []byte(src), JS); err != nil || !bytes.Equal(out.Bytes(), d.Append(nil)) {
			t.Fatalf("%.20q…: %.40q, %v; want %.40q", src, out.Bytes(), err, d.Append(nil))
		}
	}
}

// TestRunsGuessedCommas feeds minified arrays of objects to the runs,
// whose boundaries guessComma proposes from "},{": nested arrays of
// objects longer than its scan ahead, and "},{" inside strings, mislead
// it; the runs must notice and give Parse's text.
func TestRunsGuessedCommas(t *testing.T) {
	nested := "[" + strings.Repeat(`{"x":1},`, 2000) + `{"x":2}]`
	for _, src := range []string{
		"[" + strings.Repeat(`{"b":1,"a":2},`, 3000) + `{"c":3}]`,
		"[" + strings.Repeat(`{"n":`+nested+`},`, 8) + `{"c":3}]`,
		"[" + strings.Repeat(`{"s":"},{\"},{"},`, 3000) + `{"c":3}]`,
		"[" + strings.Repeat(`{"n":[{"x":1},{"y":[{}]}]},`, 2000) + `{"c":3}]`,
		"[" + strings.Repeat(`{"n":`+nested+`},`, 8) + `{"c":3},]`, // invalid at the end
	} {
		for _, s := range []Scheme{JS, JCS} {
			for _, size := range []int{100, 1000, 5000} {
				if !runsCheck(t, []byte(src), s, size) {
					t.Fatalf("%.40q: declined", src)
				}
			}
		}
	}
	if c := guessComma([]byte(`[{"a":[{"x":1},{"y":2}]},{"b":1}]`), 2, 32); c != 24 {
		t.Errorf("guessComma = %d, want 24 (past the nested array)", c)
	}
}
