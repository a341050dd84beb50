package canon

import (
	"fmt"
	"strings"
	"testing"
)

// TestFaults says what makes a text not canonical, and where: member
// order, number form, string form, duplicates, white space and the line
// ending; a canonical text (with one final newline or none) has none.
func TestFaults(t *testing.T) {
	for _, c := range []struct {
		src    string
		scheme Scheme
		want   string // kind@pointer@offset, space-separated
	}{
		{`{"a":1,"b":[1,2]}`, JS, ``},
		{`{"a":1,"b":[1,2]}` + "\n", JS, ``},
		{`{"b":1,"a":2}`, JS, `member order@@1`},
		{`{"x":{"b":1,"a":2},"y":{"c":3,"d":4}}`, JS, `member order@/x@6`},
		{`{"b":1,"1":2}`, JS, `member order@@1`},
		{`{"1":2,"b":1}`, JCS, ``},
		{`{"a":1.0,"b":[1,1e2,-0]}`, JS, `number form@/a@5 number form@/b/1@16 number form@/b/2@20`},
		{`[1e400]`, JS, `number form@/0@1`},
		{`{"a":"\u0041","b":"\n"}`, JS, `string form@/a@5`},
		{`{"\u0061":1}`, JS, `string form@/a@1`},
		{`{"a~/b":"\/"}`, JS, `string form@/a~0~1b@8`},
		{`{"a":1,"a":2}`, JS, `duplicate member@/a@1`},
		{`{ "a": [1, 2] }`, JS, `whitespace@@1`},
		{"  [1]", JS, `whitespace@@0`},
		{"[1]\n\n", JS, `whitespace@@3`},
		{"[1] ", JS, `whitespace@@3`},
		{"[1]\r\n", JS, `line ending@@3`},
		{"{\r\n  \"b\": 1,\r\n  \"a\": 2\r\n}\r\n", JS, `whitespace@@1 member order@@5 line ending@@25`},
		{`{"b":{"d":1.50,"c":0},"a":"\u00e9"}`, JS, `member order@@1 member order@/b@6 number form@/b/d@10 string form@/a@26`},
	} {
		doc, err := Parse([]byte(c.src), c.scheme)
		if err != nil {
			t.Fatalf("%q: %v", c.src, err)
		}
		fs, more := doc.Faults(0)
		var got []string
		for _, f := range fs {
			got = append(got, fmt.Sprintf("%s@%s@%d", f.Kind, f.Pointer, f.Offset))
		}
		if strings.Join(got, " ") != c.want || more {
			t.Errorf("%q (%s): faults %q (more %v), want %q", c.src, c.scheme, strings.Join(got, " "), more, c.want)
		}
		// The faults are exactly the texts that are not canonical.
		canonical := string(doc.Append(nil))
		if (len(fs) == 0) != (strings.TrimSuffix(c.src, "\n") == canonical) {
			t.Errorf("%q: %d faults, canonical form %q", c.src, len(fs), canonical)
		}
	}
}

// TestFaultsLimit stops at max and says more were left out; the cost
// stays linear in the input however deep it nests.
func TestFaultsLimit(t *testing.T) {
	src := "[" + strings.Repeat("1.0,", 999) + "1.0]"
	doc, err := Parse([]byte(src), JS)
	if err != nil {
		t.Fatal(err)
	}
	fs, more := doc.Faults(5)
	if len(fs) != 5 || !more || fs[4].Pointer != "/4" {
		t.Errorf("faults %+v, more %v", fs, more)
	}
	deep := strings.Repeat(`{"b":1,"a":`, 5000) + "2" + strings.Repeat("}", 5000)
	if doc, err = Parse([]byte(deep), JS); err != nil {
		t.Fatal(err)
	}
	fs, _ = doc.Faults(0)
	if len(fs) != 5000 || fs[0].Pointer != "" || fs[4999].Pointer != strings.Repeat("/a", 4999) {
		t.Errorf("%d faults, the last at %.40q", len(fs), fs[len(fs)-1].Pointer)
	}
}
