package cmd_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/idemkey/idemkey"

// pkgInfo is what go list says of one package.
type pkgInfo struct {
	ImportPath string
	Imports    []string // direct, not the tests'
	Deps       []string // transitive, not the tests'
}

// listPackages runs go list on the module, from its root.
func listPackages(t *testing.T) map[string]pkgInfo {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the layering test needs the go command: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command("go", "list", "-deps=false", "-json", "./...")
	c.Dir = root
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	pkgs := map[string]pkgInfo{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkgInfo
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs[strings.TrimPrefix(p.ImportPath, module+"/")] = p
	}
	return pkgs
}

// layerViolations checks the house's rules on what go list
// says, one message a broken rule:
//   - the rules (canon, derive, derive/diff, derive/drift, derive/conform,
//     derive/ledger) import no os: files and networks are the stores' and
//     derive/post's;
//   - no library (canon/..., derive/...) depends on a CLI package
//     (github.com/spf13/..., this module's cmd/...), directly or not;
//   - a face (cmd/X) imports no other face: what faces share lives in
//     cmd/internal, which imports no face either.
func layerViolations(pkgs map[string]pkgInfo) []string {
	var bad []string
	for _, rules := range []string{"canon", "derive", "derive/diff", "derive/drift", "derive/conform", "derive/ledger"} {
		p, ok := pkgs[rules]
		if !ok {
			bad = append(bad, rules+": not found")
			continue
		}
		if slices.Contains(p.Imports, "os") {
			bad = append(bad, rules+" imports os")
		}
	}
	for name, p := range pkgs {
		if name == "canon" || strings.HasPrefix(name, "canon/") || name == "derive" || strings.HasPrefix(name, "derive/") {
			for _, d := range p.Deps {
				if strings.HasPrefix(d, "github.com/spf13/") || d == module+"/cmd" || strings.HasPrefix(d, module+"/cmd/") {
					bad = append(bad, name+" depends on the CLI package "+d)
				}
			}
		}
		if face(name) != "" || strings.HasPrefix(name, "cmd/internal/") {
			for _, imp := range p.Imports {
				if other := face(strings.TrimPrefix(imp, module+"/")); other != "" && strings.HasPrefix(imp, module+"/") {
					bad = append(bad, name+" imports the face "+other)
				}
			}
		}
	}
	slices.Sort(bad)
	return bad
}

// face is cmd/X for a package of a command's face (cmd/X or below it,
// not cmd/internal), or "".
func face(name string) string {
	rest, ok := strings.CutPrefix(name, "cmd/")
	if !ok || rest == "" || strings.HasPrefix(rest, "internal/") || rest == "internal" {
		return ""
	}
	x, _, _ := strings.Cut(rest, "/")
	return "cmd/" + x
}

// TestLayers holds the module to the house's layering (see
// layerViolations), and checks that the check can fail.
func TestLayers(t *testing.T) {
	pkgs := listPackages(t)
	for _, v := range layerViolations(pkgs) {
		t.Error(v)
	}
	// Each rule catches its violation.
	for _, c := range []struct {
		pkg, imp, want string
	}{
		{"derive/diff", "os", "derive/diff imports os"},
		{"derive/ledger/stores", "github.com/spf13/pflag", "derive/ledger/stores depends on the CLI package github.com/spf13/pflag"},
		{"cmd/key", module + "/cmd/diff", "cmd/key imports the face cmd/diff"},
		{"cmd/internal/cli", module + "/cmd/key", "cmd/internal/cli imports the face cmd/key"},
	} {
		p, ok := pkgs[c.pkg]
		if !ok {
			t.Errorf("%s: not found", c.pkg)
			continue
		}
		broken := map[string]pkgInfo{}
		for k, v := range pkgs {
			broken[k] = v
		}
		p.Imports = append(slices.Clone(p.Imports), c.imp)
		p.Deps = append(slices.Clone(p.Deps), c.imp)
		broken[c.pkg] = p
		if got := layerViolations(broken); !slices.Contains(got, c.want) {
			t.Errorf("%s importing %s: violations %q, want %q among them", c.pkg, c.imp, got, c.want)
		}
	}
}
