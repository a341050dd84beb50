package cmd

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
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/derive/conform"
)

var adapters = filepath.Join("..", "scripts", "conformance")

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
	out, errs, code := run(t, "", append([]string{"conform", "--json"}, args...)...)
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
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = need(t, "go")
	}
	bin := filepath.Join(t.TempDir(), name)
	cmd := exec.Command(goTool, "build", "-o", bin, "./scripts/conformance/"+name)
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./scripts/conformance/%s: %v\n%s", name, err, out)
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
var pythonFailures = map[string]string{
	"order-utf16":           "sorts names by code point, not by UTF-16 code units",
	"order-index":           "sorts array-index names as strings",
	"number-integer":        "writes 1.0 where JavaScript writes 1",
	"number-negative-zero":  "writes -0.0 where JavaScript writes 0",
	"number-exponent":       "writes 1e+16 where JavaScript writes 10000000000000000",
	"number-fraction":       "writes 1e-07 where JavaScript writes 1e-7",
	"number-precision":      "formats numbers as Python's float repr does",
	"number-big-integer":    "keeps integers past 2^53 exact where JSON.parse rounds them",
	"number-overflow":       "writes Infinity for a number outside the double range",
	"number-underflow":      "writes 0.0 where JavaScript writes 0",
	"string-lone-surrogate": "rejects lone surrogates",
	"nesting":               "rejects arguments nested 1000 levels deep",
	"large":                 "sorts array-index names as strings",
	"invalid-json":          "accepts NaN, Infinity and -Infinity",
}

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
