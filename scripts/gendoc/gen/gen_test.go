package gen

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestDeterministicValidJSON: every generator must give valid JSON, the same bytes for the same seed,
// and other bytes for another seed: the benchmarks and scripts/bench.sh
// compare figures across runs on the strength of that.
func TestDeterministicValidJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		gen  func(seed uint64) []byte
		min  int
	}{
		{"mixed", func(s uint64) []byte { return Mixed(1<<20, s) }, 1 << 20},
		{"strings", func(s uint64) []byte { return Strings(1<<20, s) }, 1 << 20},
		{"numbers", func(s uint64) []byte { return Numbers(1<<20, s) }, 1 << 20},
		{"call", ToolCall, 300},
	} {
		a, b, c := tc.gen(7), tc.gen(7), tc.gen(8)
		if !json.Valid(a) {
			t.Errorf("%s: not valid JSON", tc.name)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s: two runs with seed 7 differ", tc.name)
		}
		if bytes.Equal(a, c) {
			t.Errorf("%s: seeds 7 and 8 give the same bytes", tc.name)
		}
		if len(a) < tc.min || len(a) > tc.min+tc.min/8+4096 {
			t.Errorf("%s: %d bytes, want about %d", tc.name, len(a), tc.min)
		}
	}
}

// TestNoDuplicateNames: the documents must be valid under RFC 8785 too, so that the jcs
// benchmarks run on the same input: no object repeats a member name.
func TestNoDuplicateNames(t *testing.T) {
	for _, doc := range []string{`{"a":1,"a":2}`, `[{"x":{"b":[1,{"c":0}],"b":0}}]`} {
		if _, ok := duplicateName([]byte(doc)); !ok {
			t.Fatalf("the check misses the duplicate in %s", doc)
		}
	}
	for name, doc := range map[string][]byte{
		"mixed":   Mixed(1<<20, 3),
		"strings": Strings(1<<20, 3),
		"call":    ToolCall(3),
	} {
		if dup, ok := duplicateName(doc); ok {
			t.Errorf("%s: duplicate member name %q", name, dup)
		}
	}
}

// duplicateName reports a member name that appears twice in one object.
func duplicateName(doc []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	var names []map[string]bool // nil for an array
	expectName := false
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				names = append(names, map[string]bool{})
				expectName = true
				continue
			case '[':
				names = append(names, nil)
			default:
				names = names[:len(names)-1]
			}
		case string:
			if expectName {
				seen := names[len(names)-1]
				if seen[v] {
					return v, true
				}
				seen[v] = true
				expectName = false
				continue
			}
		}
		// After a value, the next string inside an object is a name.
		expectName = len(names) > 0 && names[len(names)-1] != nil
	}
}

// TestCalls: Calls gives one {"task","tool","args"} record per line, each a valid
// JSON object with those three members.
func TestCalls(t *testing.T) {
	data := Calls(500, 1)
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	if len(lines) != 500 {
		t.Fatalf("%d lines, want 500", len(lines))
	}
	for i, line := range lines {
		var rec struct {
			Task, Tool string
			Args       map[string]any
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if rec.Task == "" || rec.Tool == "" || len(rec.Args) == 0 {
			t.Fatalf("line %d: incomplete record %s", i+1, line)
		}
	}
}
