package conform

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/idemkey/idemkey/canon"
)

// frozenCases and frozenDigest pin the first cases of the suite: their ids,
// rules, inputs and js answers may never change (the suite is append-only).
// When cases are appended, leave these alone; raise frozenCases (and set
// the digest the test prints) only to freeze the appended ones too.
const (
	frozenCases  = 331
	frozenDigest = "6ac9093f0ff40efe2c87963b96fd298184a97eb663d0bef3a0891e89e954bacf"
)

func TestSuiteAppendOnly(t *testing.T) {
	cs := Cases()
	if len(cs) < frozenCases {
		t.Fatalf("the suite has %d cases, fewer than the %d frozen ones: cases are never removed", len(cs), frozenCases)
	}
	h := sha256.New()
	for _, c := range cs[:frozenCases] {
		h.Write(frozenLine(c, canon.JS))
		h.Write([]byte{'\n'})
		h.Write(frozenLine(c, canon.JCS))
		h.Write([]byte{'\n'})
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != frozenDigest {
		t.Errorf("the first %d cases changed (digest %s, want %s): append new cases at the end of build instead", frozenCases, got, frozenDigest)
	}
}

// frozenLine is a case and its answer under s in the layout the digest was
// taken in (the vectors' lines before args_text): what is pinned is the
// cases' content, not how vectors lays it out.
func frozenLine(c Case, s canon.Scheme) []byte {
	e := Expected(c, s)
	line := fmt.Appendf(nil, `{"id":%d,"rule":%s,"note":%s,"task":%s,"tool":%s,"args":%s`, c.ID, quote(c.Rule), quote(c.Note), quote(c.Task), quote(c.Tool), c.Args)
	if e.Rejected {
		return append(line, `,"error":true}`...)
	}
	return fmt.Appendf(line, `,"canonical":%s,"key":%s}`, quote(e.Canonical), quote(e.Key))
}

func TestSuiteShape(t *testing.T) {
	rules := map[string]int{}
	for _, r := range Rules {
		rules[r.Name] = 0
	}
	for i, c := range Cases() {
		if c.ID != i+1 {
			t.Fatalf("case %d has id %d", i+1, c.ID)
		}
		if _, ok := rules[c.Rule]; !ok {
			t.Errorf("case %d: unknown rule %q", c.ID, c.Rule)
		}
		rules[c.Rule]++
		if c.Note == "" || c.Task == "" || c.Tool == "" {
			t.Errorf("case %d: empty note, task or tool", c.ID)
		}
		if !utf8.ValidString(c.Args) {
			t.Errorf("case %d: the arguments are not UTF-8", c.ID)
		}
		if bytes.ContainsAny([]byte(c.Args), "\n\r") {
			t.Errorf("case %d: the arguments hold a line break, which would split the request line", c.ID)
		}
		// The request line is JSON whatever the arguments, and carries
		// their exact text; and inline exactly where the vectors have them
		// (I-JSON, nested at most 200 levels), so that every common JSON
		// reader parses the line itself alike.
		var req struct {
			ID       int    `json:"id"`
			ArgsText string `json:"args_text"`
		}
		if err := json.Unmarshal(AppendRequest(nil, c), &req); err != nil || req.ID != c.ID || req.ArgsText != c.Args {
			t.Errorf("case %d: request line %s: %v", c.ID, AppendRequest(nil, c), err)
		}
		req1 := AppendRequest(nil, c)
		hasArgs := bytes.Contains(req1, []byte(`,"args":`))
		for _, sc := range []canon.Scheme{canon.JS, canon.JCS} {
			if inVector := bytes.Contains(AppendVector(nil, c, sc), []byte(`,"args":`)); hasArgs != inVector {
				t.Errorf("case %d (%s): inline args in the request %v, in the %s vector %v", c.ID, c.Rule, hasArgs, sc, inVector)
			}
		}
		if hasArgs && !json.Valid([]byte(c.Args)) {
			t.Errorf("case %d: inline args that are not JSON", c.ID)
		}
		shallow := canon.Parser{MaxDepth: 201} // the line's object, then at most 200 levels of arguments
		if _, err := shallow.Parse(req1, canon.JS); err != nil {
			t.Errorf("case %d (%s): the request line is nested deeper than 201 levels: %v", c.ID, c.Rule, err)
		}
		if js := Expected(c, canon.JS); js.Rejected != (c.Rule == "invalid-json") {
			t.Errorf("case %d (%s): rejected under js: %v", c.ID, c.Rule, js.Rejected)
		}
	}
	for name, n := range rules {
		if n == 0 {
			t.Errorf("rule %s has no case", name)
		}
	}
	if n := len(Cases()); n < 300 {
		t.Errorf("%d cases; the suite should have several hundred", n)
	}
}

// TestSuiteNode checks the expected answer of every case under js against
// the reference harness running on Node: the same verdict, the same key and
// the same canonical text; and under jcs against the independent RFC 8785
// serializer of scripts/refharness.js (except repeated names, which
// JSON.parse cannot see).
func TestSuiteNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skipf("node not found: %v; checking the suite against the reference harness needs Node.js", err)
	}
	for _, mode := range []string{"lines", "jcs"} {
		s := canon.JS
		if mode == "jcs" {
			s = canon.JCS
		}
		for i, o := range runHarness(t, node, mode) {
			c := Cases()[i]
			if s == canon.JCS && c.Rule == "duplicate-names" {
				continue
			}
			e := Expected(c, s)
			text, _ := hex.DecodeString(o.Canonical)
			switch {
			case (o.Error != "") != e.Rejected:
				t.Errorf("%s case %d (%s, %s): node rejected: %q, idemkey rejected: %v", s, c.ID, c.Rule, c.Note, o.Error, e.Rejected)
			case !e.Rejected && (o.Key != e.Key || string(text) != e.Canonical):
				t.Errorf("%s case %d (%s, %s):\nnode    %s %s\nidemkey %s %s", s, c.ID, c.Rule, c.Note, o.Key, short(string(text)), e.Key, short(e.Canonical))
			}
		}
	}
}

type harnessOutcome struct{ Key, Canonical, Error string }

// runHarness gives every case to `node scripts/refharness.js MODE` and
// returns its outcomes, in order.
func runHarness(t *testing.T, node, mode string) []harnessOutcome {
	t.Helper()
	var in bytes.Buffer
	for _, c := range Cases() {
		// canon.AppendQuoted writes a lone surrogate as its escape, which
		// encoding/json would replace.
		line := append([]byte(`{"task":`), canon.AppendQuoted(nil, c.Task)...)
		line = append(append(line, `,"tool":`...), canon.AppendQuoted(nil, c.Tool)...)
		line = append(append(line, `,"text":`...), canon.AppendQuoted(nil, c.Args)...)
		in.Write(append(line, '}', '\n'))
	}
	cmd := exec.Command(node, filepath.Join("..", "..", "scripts", "refharness.js"), mode)
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", mode, err, stderr.Bytes())
	}
	var res []harnessOutcome
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<26)
	for sc.Scan() {
		var o harnessOutcome
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			t.Fatalf("node %s: line %d: %q: %v", mode, len(res)+1, sc.Bytes(), err)
		}
		res = append(res, o)
	}
	if len(res) != len(Cases()) {
		t.Fatalf("node %s answered %d of %d cases", mode, len(res), len(Cases()))
	}
	return res
}

func short(s string) string {
	if len(s) > 200 {
		return fmt.Sprintf("%q… (%d bytes)", s[:200], len(s))
	}
	return fmt.Sprintf("%q", s)
}
