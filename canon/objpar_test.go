package canon

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// rewindBuffer is a Rewinder that records how often it was rewound.
type rewindBuffer struct {
	bytes.Buffer
	rewinds int
}

func (b *rewindBuffer) Rewind() error { b.Reset(); b.rewinds++; return nil }

// objectRunsCheck runs writeObjectRuns on src with runs of runSize bytes
// and checks it against Parse, as runsCheck does for arrays. It returns
// whether the runs took src, and whether they rewound.
func objectRunsCheck(t *testing.T, src []byte, s Scheme, runSize int) (done bool, rewound bool) {
	t.Helper()
	var buf rewindBuffer
	n, werr, valid, done := writeObjectRuns(&buf, src, s, runSize)
	if !done {
		if buf.Len() != 0 || n != 0 || buf.rewinds != 0 {
			t.Fatalf("%s: declined %.200q but wrote %.200q", s, src, buf.Bytes())
		}
		return false, false
	}
	d, err := Parse(src, s)
	switch {
	case werr != nil:
		t.Fatalf("%s: %.200q: write error %v", s, src, werr)
	case err != nil && valid:
		t.Fatalf("%s: %.200q: runs accepted input Parse rejects (%v): %.200q", s, src, err, buf.Bytes())
	case err == nil && !valid:
		t.Fatalf("%s: %.200q: runs rejected valid input", s, src)
	case err == nil && (n != int64(buf.Len()) || !bytes.Equal(buf.Bytes(), d.Append(nil))):
		t.Fatalf("%s: %.200q (runs of %d): wrote %.200q (%d), want %.200q", s, src, runSize, buf.Bytes(), n, d.Append(nil))
	}
	return true, buf.rewinds > 0
}

// TestObjectRunsMatchParse compares writeObjectRuns with Parse on random
// root objects around one large array: members before and after it (with
// arrays, objects, strings full of brackets, quotes and backslashes,
// escaped and repeated names, names that sort before and after the
// array's), one element a line or none, valid and broken.
func TestObjectRunsMatchParse(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	names := []string{`"items"`, `"a"`, `"z"`, `"it\u0065ms"`, `"0"`, `"10"`, `"é"`, `"items"`}
	small := func(b *strings.Builder) {
		switch r.IntN(6) {
		case 0:
			b.WriteString(`[1,["]\\\"",{"q":"\\"}],2]`)
		case 1:
			b.WriteString(`"a\"]},\\"`)
		case 2:
			b.WriteString(`{"k":[{"x":"]"}]}`)
		case 3:
			b.WriteString(`-1.5E+3`)
		case 4:
			b.WriteString(`true`)
		default:
			randomChild(r, b, 2)
		}
	}
	defer func(m int) { objLookMax = m }(objLookMax)
	objLookMax = 40
	taken, rewound := 0, 0
	for n := 0; n < 3000; n++ {
		nl := "\n"
		if n%3 == 0 {
			nl = ""
		}
		var b strings.Builder
		b.WriteString("{" + nl)
		member := func() {
			b.WriteString(names[r.IntN(len(names))] + ": ")
			small(&b)
			b.WriteString("," + nl)
		}
		for k := r.IntN(3); k > 0; k-- {
			member()
		}
		b.WriteString(names[r.IntN(3)] + ":[" + nl)
		children := 20 + r.IntN(40)
		for i := 0; i < children; i++ {
			if i > 0 {
				b.WriteString("," + nl)
			}
			randomChild(r, &b, 1)
		}
		b.WriteString(nl + "]")
		for k := r.IntN(3); k > 0; k-- {
			b.WriteString("," + nl)
			b.WriteString(names[r.IntN(len(names))] + ": ")
			small(&b)
		}
		b.WriteString(nl + "}" + nl)
		src := []byte(b.String())
		if r.IntN(5) == 0 {
			k := r.IntN(len(src))
			src = append(src[:k:k], append([]byte(`}"],`[r.IntN(4):][:1]), src[k:]...)...)
		}
		for _, s := range []Scheme{JS, JCS} {
			done, rw := objectRunsCheck(t, src, s, 1+r.IntN(60))
			if done {
				taken++
			}
			if rw {
				rewound++
			}
		}
	}
	if taken < 3000 {
		t.Fatalf("the object runs took only %d of 6000 inputs", taken)
	}
	t.Logf("taken %d of 6000, rewound %d", taken, rewound)
}

// TestObjectRunsShapes checks the shapes at the edges: a later array
// value too long for the backward scan (which then takes it for the
// large array's end, and must rewind), a repeated name that drops the
// large array, the array nested at the depth limit, and documents that
// are not that shape.
func TestObjectRunsShapes(t *testing.T) {
	big := "[" + strings.Repeat(`{"b":1,"a":[2,"x"]},`, 4000) + "0]"
	long := "[" + strings.Repeat("1,", objLookMax) + "1]"
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, c := range []struct {
		src             string
		done, mayRewind bool
		jcsDup          bool // invalid under JCS, and not taken
	}{
		{`{"items":` + big + `}`, true, false, false},
		{`{"z":1,"items":` + big + `,"a":{"c":[1]},"b":"]"}`, true, false, false},
		{`{"items":` + big + `,"a":` + long + `}`, true, true, false},        // rewinds: a's array is taken for the end
		{`{"items":` + big + `,"a":` + long + `,"b":2]}`, true, true, false}, // and invalid
		{`{"items":` + big + `,"items":1}`, false, false, false},
		{`{"items":1,"items":` + big + `}`, true, false, true},
		{`{"items":` + big + `,"x":` + deep(MaxDepth-1) + `}`, true, false, false},
		{`{"items":[` + deep(MaxDepth-2) + `,` + big[1:] + `}`, true, false, false},
		{`{"items":[` + deep(MaxDepth-1) + `,` + big[1:] + `}`, true, true, false}, // too deep: invalid
		{`{"a":1,"b":2}`, false, false, false},
		{`{"items":[1],"b":` + big + `}`, true, false, false},
		{`{"items":` + big + `} x`, false, false, false},
		{`[` + big + `]`, false, false, false},
	} {
		for _, s := range []Scheme{JS, JCS} {
			done, rewound := objectRunsCheck(t, []byte(c.src), s, 512)
			if (done != (c.done && !(c.jcsDup && s == JCS))) || (rewound && !c.mayRewind) {
				t.Errorf("%s: %.60q…: taken %v, rewound %v; want taken %v", s, c.src, done, rewound, c.done)
			}
		}
	}
}
