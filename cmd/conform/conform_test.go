package conform_test

// Tests of `idemkey conform` against real implementations: the reference
// harness on Node, Python's json.dumps, Go's encoding/json, jsontext's
// Canonicalize and npm's canonicalize, through the adapters in
// scripts/conformance/. Each asserts the exact set of failing rules and
// that the diagnosis names what is wrong. Without node, python3 or npm the
// tests that need them are skipped with a message.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/derive/conform"
)

var adapters = filepath.Join("..", "..", "scripts", "conformance")

type conformReport struct {
	Scheme   string `json:"scheme"`
	Output   string `json:"output"`
	Cases    int    `json:"cases"`
	Passed   *int   `json:"passed"`
	Failed   *int   `json:"failed"`
	Skipped  int    `json:"skipped"`
	Like     string `json:"like"`
	Failures []struct {
		ID       *int    `json:"id"`
		Rule     string  `json:"rule"`
		Expected *string `json:"expected"`
		Got      *string `json:"got"`
	} `json:"failures"`
	Rules []struct {
		Rule      string  `json:"rule"`
		Passed    *int    `json:"passed"`
		Total     *int    `json:"total"`
		Diagnosis *string `json:"diagnosis"`
	} `json:"rules"`
	Causes []string `json:"causes"`
}

// runConformJSON runs idemkey conform --json with args and decodes the report.
func runConformJSON(t *testing.T, want int, args ...string) conformReport {
	t.Helper()
	out, errs, code := clitest.Run(t, "", append([]string{"conform", "--json"}, args...)...)
	if code != want {
		t.Fatalf("idemkey conform %s: exit %d, want %d\nstderr: %s", strings.Join(args, " "), code, want, errs)
	}
	var r conformReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("the report is not JSON: %v\n%s", err, out)
	}
	if r.Passed == nil || r.Failed == nil || r.Cases != *r.Passed+*r.Failed+r.Skipped || len(r.Failures) != *r.Failed {
		t.Fatalf("inconsistent report: %s", out)
	}
	for _, f := range r.Failures {
		if f.ID == nil || f.Rule == "" || (f.Expected == nil && f.Got == nil) {
			t.Fatalf("a failure without id, rule, expected or got: %s", out)
		}
	}
	for _, rr := range r.Rules {
		if rr.Passed == nil || rr.Total == nil || rr.Diagnosis == nil {
			t.Fatalf("a rule without passed, total or diagnosis: %s", out)
		}
	}
	return r
}

// checkFailing asserts the exact set of failing rules and, for each, that
// its diagnosis says what it should.
func checkFailing(t *testing.T, r conformReport, want map[string]string) {
	t.Helper()
	var got []string
	for _, rr := range r.Rules {
		if *rr.Passed < *rr.Total {
			got = append(got, rr.Rule)
			if w, ok := want[rr.Rule]; ok && !strings.Contains(*rr.Diagnosis, w) {
				t.Errorf("%s %s: rule %s: diagnosis %q does not say %q", r.Scheme, r.Output, rr.Rule, *rr.Diagnosis, w)
			}
		} else if *rr.Diagnosis != "" {
			t.Errorf("rule %s passes but has a diagnosis %q", rr.Rule, *rr.Diagnosis)
		}
	}
	var names []string
	for n := range want {
		names = append(names, n)
	}
	slices.Sort(got)
	slices.Sort(names)
	if !slices.Equal(got, names) {
		t.Errorf("%s %s: failing rules %v, want %v", r.Scheme, r.Output, got, names)
	}
}

func need(t *testing.T, prog string) string {
	t.Helper()
	p, err := exec.LookPath(prog)
	if err != nil {
		t.Skipf("%s not found (%v): this conformance test needs it", prog, err)
	}
	return p
}

// goAdapter builds the adapter scripts/conformance/NAME with go build.
func goAdapter(t *testing.T, name string) string {
	t.Helper()
	return goBuild(t, name, "./scripts/conformance/"+name)
}

// goBuild builds the package pkg (relative to the repository) as NAME.
func goBuild(t *testing.T, name, pkg string) string {
	t.Helper()
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = need(t, "go")
	}
	bin := filepath.Join(t.TempDir(), name)
	cmd := exec.Command(goTool, "build", "-o", bin, pkg)
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

func TestConformHarness(t *testing.T) {
	node := need(t, "node")
	for _, out := range []string{"key", "canonical"} {
		r := runConformJSON(t, 0, "--output", out, "--", node, filepath.Join(adapters, "harness.js"), out)
		if *r.Failed != 0 || *r.Passed != len(conform.Cases()) {
			t.Errorf("--output %s: %d passed, %d failed", out, *r.Passed, *r.Failed)
		}
	}
}

// pythonFailures is what Python's json.dumps(sort_keys=True,
// separators=(",", ":"), ensure_ascii=False) gets wrong, and how.
var pythonFailures = merged(pythonNumbers, map[string]string{
	"order-utf16":           "sorts names by code point, not by UTF-16 code units",
	"order-index":           "sorts array-index names as strings",
	"string-lone-surrogate": "rejects lone surrogates",
	"large":                 "sorts array-index names as strings",
})

func TestConformPython(t *testing.T) {
	py := need(t, "python3")
	for _, out := range []string{"key", "canonical"} {
		r := runConformJSON(t, 1, "--output", out, "--", py, filepath.Join(adapters, "python_json.py"), out)
		checkFailing(t, r, pythonFailures)
		if !strings.HasPrefix(r.Like, "Python's json.dumps(sort_keys=True, separators") {
			t.Errorf("--output %s: recognized as %q", out, r.Like)
		}
	}
}

func TestConformGoJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds a Go adapter")
	}
	bin := goAdapter(t, "gojson")
	want := map[string]string{
		"order-utf16":           "sorts names by code point",
		"order-index":           "sorts array-index names as strings",
		"number-negative-zero":  "writes -0 where JavaScript writes 0",
		"number-overflow":       "rejects numbers outside the double range",
		"string-html":           "escapes <, > and &",
		"string-line-separator": "escapes U+2028 and U+2029",
		"string-lone-surrogate": "replaces lone surrogates with U+FFFD",
		"large":                 "sorts array-index names as strings",
	}
	for _, out := range []string{"key", "canonical"} {
		r := runConformJSON(t, 1, "--output", out, "--", bin, out)
		checkFailing(t, r, want)
		if !strings.HasPrefix(r.Like, "Go's encoding/json") {
			t.Errorf("--output %s: recognized as %q", out, r.Like)
		}
	}
}

func TestConformJSONText(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds a Go adapter")
	}
	bin := goAdapter(t, "jsontext")
	for _, out := range []string{"key", "canonical"} {
		r := runConformJSON(t, 1, "--scheme", "jcs", "--output", out, "--", bin, out)
		checkFailing(t, r, map[string]string{
			"number-overflow": "accepts numbers outside the double range and writes the largest double (1.7976931348623157e+308), where RFC 8785 rejects them",
		})
	}
	// Under js, it is RFC 8785 against the harness.
	r := runConformJSON(t, 1, "--", bin)
	checkFailing(t, r, map[string]string{
		"order-index":           "sorts array-index names as strings",
		"duplicate-names":       "rejects repeated names",
		"number-overflow":       "writes the largest double",
		"string-lone-surrogate": "rejects lone surrogates",
		"large":                 "sorts array-index names as strings",
	})
}

// npmCanonicalize installs npm's canonicalize (the version pinned in
// scripts/conformance/package.json) into scripts/conformance/node_modules,
// which git ignores, unless it is there.
func npmCanonicalize(t *testing.T) {
	t.Helper()
	need(t, "node")
	if _, err := os.Stat(filepath.Join(adapters, "node_modules", "canonicalize", "package.json")); err == nil {
		return
	}
	npm := need(t, "npm")
	cmd := exec.Command(npm, "install", "--no-audit", "--no-fund", "--no-package-lock")
	cmd.Dir = adapters
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("npm install canonicalize failed (offline?): %v\n%s", err, out)
	}
}

func TestConformNpmCanonicalize(t *testing.T) {
	npmCanonicalize(t)
	script := filepath.Join(adapters, "canonicalize.mjs")
	for _, out := range []string{"key", "canonical"} {
		r := runConformJSON(t, 1, "--scheme", "jcs", "--output", out, "--", "node", script, out)
		checkFailing(t, r, map[string]string{
			"duplicate-names": "accepts repeated names (the last one wins, as in JSON.parse), where RFC 8785 rejects them",
		})
	}
}

// More implementations, each with defects the adapters above do not have
// (testdata/conformance-impls/: test-only, a few lines each on a shared
// protocol loop). Each asserts the exact set of failing rules, what each
// rule's diagnosis says, and which known implementation is recognized.

var impls = filepath.Join("..", "..", "testdata", "conformance-impls")

// rules maps each of names to phrase.
func rules(phrase string, names ...string) map[string]string {
	m := map[string]string{}
	for _, n := range names {
		m[n] = phrase
	}
	return m
}

// merged returns the union of ms; a later map's phrase wins.
func merged(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// everyRule is every rule whose cases are all accepted by the scheme (a
// defect in what is hashed fails them all).
var everyRule = []string{"structure", "whitespace", "order-ascii", "order-utf16", "order-index", "names-special", "duplicate-names",
	"number-integer", "number-negative-zero", "number-exponent", "number-fraction", "number-precision", "number-big-integer",
	"number-overflow", "number-underflow", "string-escape", "string-control", "string-html", "string-line-separator",
	"string-non-ascii", "string-lone-surrogate", "task-tool", "nesting", "large"}

// pythonNumbers is what Python's floats and ints get wrong, whatever the
// other settings of json.dumps.
var pythonNumbers = map[string]string{
	"number-integer":       "writes 1.0 where JavaScript writes 1",
	"number-negative-zero": "writes -0.0 where JavaScript writes 0",
	"number-exponent":      "writes 1e+16 where JavaScript writes 10000000000000000",
	"number-fraction":      "writes 1e-07 where JavaScript writes 1e-7",
	"number-precision":     "formats numbers as Python's float repr does",
	"number-big-integer":   "keeps integers past 2^53 exact where JSON.parse rounds them",
	"number-overflow":      "writes Infinity for a number outside the double range",
	"number-underflow":     "writes 0.0 where JavaScript writes 0",
	"nesting":              "rejects arguments nested 1000 levels deep",
	"invalid-json":         "accepts NaN, Infinity and -Infinity",
}

type implCase struct {
	name   string
	argv   []string // the command; "canonical" is appended for --output canonical
	scheme string
	want   map[string]string
	like   string // a prefix of the recognized implementation, or ""
}

func moreImpls(t *testing.T) []implCase {
	py, node := "python3", "node"
	return []implCase{
		{"python ensure_ascii", []string{py, filepath.Join(impls, "py_ensure_ascii.py")}, "js", merged(pythonNumbers, map[string]string{
			"order-utf16":           "sorts names by code point, not by UTF-16 code units",
			"order-index":           "sorts array-index names as strings",
			"string-escape":         `escapes non-ASCII characters (writes "\u00e9" for "é")`,
			"string-control":        `escapes U+007F as \u007f`,
			"string-line-separator": "escapes non-ASCII characters",
			"string-non-ascii":      "escapes non-ASCII characters",
			"string-lone-surrogate": "escapes non-ASCII characters",
			"task-tool":             "escapes non-ASCII characters",
			"large":                 "escapes non-ASCII characters",
		}), `Python's json.dumps(sort_keys=True, separators=(",", ":")), ensure_ascii left True`},
		{"python without sort_keys", []string{py, filepath.Join(impls, "py_nosort.py")}, "js", merged(pythonNumbers,
			rules("does not sort names: they keep the order of the input", "structure", "whitespace", "order-ascii", "order-utf16",
				"order-index", "names-special", "string-control", "large"), map[string]string{
				"string-lone-surrogate": "rejects lone surrogates",
			}), `Python's json.dumps(separators=(",", ":"), ensure_ascii=False) without sort_keys`},
		{"python default separators", []string{py, filepath.Join(impls, "py_default_sep.py")}, "js", merged(
			rules(`writes a space after "," and ":"`, everyRule...), pythonNumbers, map[string]string{
				"order-utf16":           "sorts names by code point",
				"number-big-integer":    "keeps integers past 2^53 exact",
				"string-lone-surrogate": "rejects lone surrogates",
			}), `Python's json.dumps(sort_keys=True, ensure_ascii=False) with its default separators`},
		{"python Decimal", []string{py, filepath.Join(impls, "py_decimal.py")}, "js", merged(pythonNumbers, map[string]string{
			"order-utf16":           "sorts names by code point",
			"order-index":           "sorts array-index names as strings",
			"number-integer":        "formats numbers as Python's Decimal does (str(Decimal(repr(f)).normalize()): 1E+2, 1E-7): writes 1E+2 where JavaScript writes 100",
			"number-negative-zero":  "writes -0 where JavaScript writes 0",
			"number-exponent":       "writes 1E+16 where JavaScript writes 10000000000000000",
			"number-fraction":       "writes 1E-7 where JavaScript writes 1e-7",
			"number-precision":      "writes 5E-324 where JavaScript writes 5e-324",
			"number-underflow":      "writes 5E-324 where JavaScript writes 5e-324",
			"string-lone-surrogate": "rejects lone surrogates",
			"large":                 "writes 9.06E+4 where JavaScript writes 90600",
		}), ""},
		{"java Double.toString", []string{py, filepath.Join(impls, "py_java.py")}, "js", merged(pythonNumbers, map[string]string{
			"order-utf16":           "sorts names by code point",
			"order-index":           "sorts array-index names as strings",
			"number-integer":        "formats numbers as Java's Double.toString does (1.0, 1.0E21, 1.0E-7): writes 1.0 where JavaScript writes 1",
			"number-negative-zero":  "Java's Double.toString does (1.0, 1.0E21, 1.0E-7): writes -0.0 where JavaScript writes 0",
			"number-exponent":       "writes 1.0E16 where JavaScript writes 10000000000000000",
			"number-fraction":       "writes 1.0E-5 where JavaScript writes 0.00001",
			"number-precision":      "writes 5.0E-324 where JavaScript writes 5e-324",
			"number-overflow":       "rejects numbers outside the double range",
			"number-underflow":      "writes 0.0 where JavaScript writes 0",
			"string-lone-surrogate": "rejects lone surrogates",
			"large":                 "writes 90600.0 where JavaScript writes 90600",
		}), ""},
		{"node JSON.stringify unsorted", []string{node, filepath.Join(impls, "node_nosort.js")}, "js",
			rules("does not sort names: they keep the order of the input", "structure", "whitespace", "order-ascii", "order-utf16",
				"order-index", "names-special", "string-control", "string-lone-surrogate", "nesting", "large"), ""},
		{"node localeCompare", []string{node, filepath.Join(impls, "node_locale.js")}, "js",
			rules(`sorts names by a locale's collation (localeCompare or Intl.Collator: "a" before "B", "_" before "1", "é" before "z"), not by UTF-16 code units`,
				"order-ascii", "order-utf16", "order-index", "string-control"), ""},
		{"node top-level sort", []string{node, filepath.Join(impls, "node_toplevel.js")}, "js",
			rules("sorts the names of the arguments' own members only, not those of nested objects", "order-ascii", "order-utf16", "nesting"), ""},
		{"node lodash-style", []string{node, filepath.Join(impls, "node_lodash.js")}, "js",
			rules(`drops members named "__proto__" (an assignment obj[name] = value, as in lodash's fromPairs, sets the prototype instead of adding a member), which JavaScript keeps`,
				"names-special"), ""},
		{"node replacer array", []string{node, filepath.Join(impls, "node_replacer_array.js")}, "js",
			rules("sorts with a replacer array (JSON.stringify(x, Object.keys(args).sort())), which also drops every name of a nested object that the arguments lack, and sorts array-index names as strings",
				"structure", "order-ascii", "order-utf16", "order-index", "names-special", "duplicate-names", "large"), ""},
		{"node arguments alone", []string{node, filepath.Join(impls, "node_args_only.js")}, "js",
			rules("hashes the canonical arguments alone, where the key is of [task, tool, args]", everyRule...), ""},
		{"node upper-case escapes", []string{node, filepath.Join(impls, "node_upper_hex.js")}, "js",
			rules(`writes \u escapes in upper-case hex (\u001F), where JSON.stringify writes lower case (\u001f)`, "string-control", "string-lone-surrogate"), ""},
		{"node NFC", []string{node, filepath.Join(impls, "node_nfc.js")}, "js",
			rules(`normalizes strings to NFC (writes "é" for "e\u0301"), where JSON.stringify keeps them as they are`, "string-non-ascii", "task-tool"), ""},
		{"go SetEscapeHTML(false)", []string{implBinary(t, "goescape")}, "js", map[string]string{
			"order-utf16":           "sorts names by code point",
			"order-index":           "sorts array-index names as strings",
			"number-negative-zero":  "writes -0 where JavaScript writes 0",
			"number-overflow":       "rejects numbers outside the double range",
			"string-line-separator": "escapes U+2028 and U+2029",
			"string-lone-surrogate": "replaces lone surrogates with U+FFFD",
			"large":                 "sorts array-index names as strings",
		}, "Go's encoding/json (map[string]any) through an Encoder with SetEscapeHTML(false)"},
		{"go json.Number", []string{implBinary(t, "gonumber")}, "js", merged(
			rules("keeps numbers as written instead of writing the nearest double as JavaScript does", "number-integer", "number-negative-zero",
				"number-exponent", "number-fraction", "number-precision", "number-big-integer", "number-overflow", "number-underflow", "large"), map[string]string{
				"order-utf16":           "sorts names by code point",
				"order-index":           "sorts array-index names as strings",
				"number-integer":        "writes 1.0 where JavaScript writes 1",
				"number-overflow":       "writes 1e400 where JavaScript writes null",
				"string-html":           "escapes <, > and &",
				"string-line-separator": "escapes U+2028 and U+2029",
				"string-lone-surrogate": "replaces lone surrogates with U+FFFD",
			}), "Go's encoding/json (map[string]any) with json.Number (Decoder.UseNumber)"},
		{"jcs with strconv 'g'", []string{implBinary(t, "gostrconvg")}, "jcs", merged(
			rules("formats numbers with Go's strconv.FormatFloat(f, 'g', -1, 64): exponents from 1e+06 and below 0.0001", "number-integer",
				"number-exponent", "number-fraction", "number-precision", "number-big-integer", "large"), map[string]string{
				"number-integer":  "writes 1.23456789e+08 where RFC 8785 writes 123456789",
				"number-fraction": "writes 1e-05 where RFC 8785 writes 0.00001",
				"number-overflow": "accepts numbers outside the double range and writes the largest double",
			}), ""},
		{"jcs keeping repeated names", []string{py, filepath.Join(impls, "py_jcs_dups.py")}, "jcs", map[string]string{
			"duplicate-names": "accepts repeated names (the last one wins, as in JSON.parse), where RFC 8785 rejects them",
			"nesting":         "rejects arguments nested 1000 levels deep (a recursion limit), which RFC 8785 accepts",
			"invalid-json":    "accepts NaN, Infinity and -Infinity, which are not JSON",
		}, ""},
	}
}

// implBinary builds testdata/conformance-impls/NAME.
func implBinary(t *testing.T, name string) string {
	t.Helper()
	return goBuild(t, name, "./testdata/conformance-impls/"+name)
}

func TestConformMoreImplementations(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: builds and runs a dozen implementations")
	}
	need(t, "python3")
	need(t, "node")
	for _, ic := range moreImpls(t) {
		t.Run(ic.name, func(t *testing.T) {
			for _, out := range []string{"key", "canonical"} {
				r := runConformJSON(t, 1, append([]string{"--scheme", ic.scheme, "--output", out, "--"}, append(ic.argv, out)...)...)
				checkFailing(t, r, ic.want)
				if ic.like != "" && !strings.HasPrefix(r.Like, ic.like) || ic.like == "" && r.Like != "" {
					t.Errorf("--output %s: recognized as %q, want %q", out, r.Like, ic.like)
				}
			}
		})
	}
}

// TestConformMoreShapes: what is hashed, and in what form the key is
// printed. A key of the concatenated texts or of the text and a newline is
// diagnosed from the key alone; keys in another form and extra lines are
// misbehaviours (exit 2) whose message says what the answer is.
func TestConformMoreShapes(t *testing.T) {
	t.Parallel()
	need(t, "node")
	node := "node" // named so in the messages
	impl := func(name string) string { return filepath.Join(impls, name) }
	r := runConformJSON(t, 1, "--", node, impl("node_concat.js"))
	checkFailing(t, r, rules("hashes the task id, the tool name and the canonical arguments concatenated (`${task}${tool}${json}`), where the key is of the array [task, tool, args]", everyRule...))
	r = runConformJSON(t, 1, "--", node, impl("node_newline_hash.js"))
	checkFailing(t, r, rules("hashes the canonical text followed by a newline (as echo … | sha256sum does)", everyRule...))
	r = runConformJSON(t, 1, "--", node, impl("node_utf16.js"))
	checkFailing(t, r, rules("hashes the text encoded as UTF-16 (little-endian, as C#'s Encoding.Unicode), where the key is of its UTF-8 bytes", everyRule...))
	// Their texts are right: only the key is of something else.
	runConformJSON(t, 0, "--output", "canonical", "--", node, impl("node_newline_hash.js"), "canonical")
	runConformJSON(t, 0, "--output", "canonical", "--", node, impl("node_utf16.js"), "canonical")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--", node, impl("node_upper_key.js")},
			`^idemkey: error: node answered "FFDB7D0C[0-9A-F]{56}" for case 1 \(structure: an empty object\), which is not a key: it is a key in upper-case hex, where a key is written in lower case \(the expected key, in that form\)\n$`},
		{[]string{"--", node, impl("node_base64.js")},
			`^idemkey: error: node answered "/9t9DFUguu5P5Kmee5PJdEcKCacXlws1cZKZeQBH0ZY=" for case 1 \(structure: an empty object\), which is not a key: it is a SHA-256 digest in base64, where a key is the digest in 64 lower-case hex digits \(the expected key, in that form\)\n$`},
		{[]string{"--", node, impl("node_sha1.js")},
			`^idemkey: error: node answered "e90648654fdc8c55859cd571e7cab7b19df3a9c6" for case 1 \(structure: an empty object\), which is not a key: it is 40 hex digits, the length of a SHA-1 digest, where a key is a SHA-256 digest \(64 hex digits\) \(the SHA-1 of the expected text\)\n$`},
		{[]string{"--per-case", "--rule", "invalid-json", "--", "sh", "-c", "echo null"},
			`^idemkey: error: sh answered "null" for case [0-9]+ \(invalid-json: [^)]*\), which is not a key: it looks like a rejection, but a rejection is answered with an empty line \(and the scheme rejects this case\)\n$`},
		{[]string{"--per-case", "--", "sh", "-c", "echo 'Error: cannot parse'"},
			`^idemkey: error: sh answered "Error: cannot parse" for case 1 \(structure: an empty object\), which is not a key: it looks like a rejection, but a rejection is answered with an empty line\n$`},
		{[]string{"--", node, impl("node_blank_line.js")},
			`^idemkey: error: node printed more lines than there are cases \([0-9]+\), the first extra one "": it writes an empty line after each answer \(lines 2, 4, 6, … are empty\), two lines a case\n$`},
		// A raw line break in a task id: the text takes two lines.
		{[]string{"--output", "canonical", "--", node, impl("node_concat.js"), "canonical"},
			`^idemkey: error: node printed more lines than there are cases \([0-9]+\), the first extra one "": either an answer took more than one line \(one with a line break in it\), putting every answer after it out of step, or it printed more after its last answer\n$`},
		{[]string{"--per-case", "--", "sh", "-c", `printf 'sha256:%s\n' "$(node "$0" <"$3")"`, impl("node_upper_key.js"), "{task}", "{tool}", "{file}"},
			`^idemkey: error: sh answered "sha256:`},
	} {
		out, errs, code := clitest.Run(t, "", append([]string{"conform"}, tc.args...)...)
		if code != 2 || out != "" || !regexp.MustCompile(tc.want).MatchString(errs) {
			t.Errorf("idemkey conform %q: exit %d, stdout %q, stderr %q; want exit 2, nothing on stdout, stderr matching %s", tc.args, code, out, errs, tc.want)
		}
	}
}

// TestConformJq: jq -cS, run once per case through a shell script.
func TestConformJq(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: runs a shell and jq for each of the cases")
	}
	need(t, "jq")
	if out, err := exec.Command("jq", "--version").Output(); err != nil || strings.TrimSpace(string(out)) != "jq-1.6" {
		t.Skipf("jq 1.6 wanted (the number format the diagnosis models): %s %v", out, err)
	}
	script := filepath.Join(impls, "jq_case.sh")
	r := runConformJSON(t, 1, "--per-case", "--", "sh", script, "{task}", "{tool}", "{file}")
	checkFailing(t, r, merged(rules("formats numbers as jq 1.6 does: exponent notation sooner (1e+16, 1e-05) and -0 kept",
		"number-negative-zero", "number-exponent", "number-fraction", "number-big-integer", "large"), map[string]string{
		"order-utf16":           "sorts names by code point, not by UTF-16 code units",
		"order-index":           "sorts array-index names as strings",
		"number-negative-zero":  "writes -0 where JavaScript writes 0",
		"number-fraction":       "writes 1e-07 where JavaScript writes 1e-7",
		"number-overflow":       "writes the largest double (1.7976931348623157e+308) for a number outside the double range",
		"string-control":        `escapes U+007F as \u007f`,
		"string-lone-surrogate": "replaces lone surrogates with U+FFFD",
		"nesting":               "rejects arguments nested 500 levels deep or more (a nesting limit between 100 and 500 levels, such as jq's 256)",
		"invalid-json":          "accepts input JavaScript rejects: a leading zero; NaN; Infinity",
	}))
	if r.Skipped != 3 {
		t.Errorf("%d cases skipped, want 3 (a lone surrogate or a NUL in a task id or tool name)", r.Skipped)
	}
	// jq reads "[1] 2" as two documents and prints two texts: the report
	// covers the cases before it.
	out, errs, code := clitest.Run(t, "", "conform", "--per-case", "--output", "canonical", "--rule", "invalid-json", "--", "sh", script, "{task}", "{tool}", "{file}", "canonical")
	if code != 2 || !strings.Contains(out, "canonical texts: 11 passed, 7 failed, 3 not run: it stopped at case 329 (invalid-json: trailing data after the value)\n") || !strings.Contains(errs, `idemkey: error: sh printed more than one line for case 329 (invalid-json: trailing data after the value): "[\"task-1\",\"echo\",[1]]\n[\"task-1\",\"echo\",2]\n"`) {
		t.Errorf("--output canonical: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
