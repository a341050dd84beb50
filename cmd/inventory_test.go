package cmd_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestInventory keeps testdata/README.md an inventory of every test file,
// checked both ways: each *_test.go in the repository must be named there
// by its path from the repository root, and each testdata/script/*.txtar
// by its file name, both between backquotes (`cmd/run/run_test.go`,
// `run.txtar`); and each test file or testdata/ path it names must exist.
// A test file added, renamed or removed without its line fails here,
// naming it.
func TestInventory(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "testdata", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := testFiles(t, root)
	if len(files) < 100 {
		t.Fatalf("found only %d test files under %s: not the repository root?", len(files), root)
	}
	var missing []string
	for _, name := range files {
		if !strings.Contains(string(readme), "`"+name+"`") {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		t.Errorf("testdata/README.md does not name %d test file(s); add a line saying what each tests:\n  %s",
			len(missing), strings.Join(missing, "\n  "))
	}
	if gone := namedButMissing(string(readme), root, files); len(gone) > 0 {
		t.Errorf("testdata/README.md names %d file(s) that do not exist; remove or rename their lines:\n  %s",
			len(gone), strings.Join(gone, "\n  "))
	}
}

// quoted matches a name between backquotes.
var quoted = regexp.MustCompile("`([^`\\s]+)`")

// namedButMissing lists what the inventory names that is not there: a
// test file (a *_test.go or a script's *.txtar) that is not among files,
// or a path under testdata/ (a glob pattern counts when it matches) that
// does not exist under root.
func namedButMissing(readme, root string, files []string) []string {
	have := map[string]bool{}
	for _, f := range files {
		have[f] = true
	}
	var gone []string
	for _, m := range quoted.FindAllStringSubmatch(readme, -1) {
		name := m[1]
		switch {
		case strings.ContainsAny(name, "*?["):
			if strings.HasPrefix(name, "testdata/") {
				if ms, _ := filepath.Glob(filepath.Join(root, name)); len(ms) == 0 {
					gone = append(gone, name)
				}
			}
		case strings.HasSuffix(name, "_test.go") || strings.HasSuffix(name, ".txtar"):
			if !have[name] {
				gone = append(gone, name)
			}
		case strings.HasPrefix(name, "testdata/"):
			if _, err := os.Stat(filepath.Join(root, name)); err != nil {
				gone = append(gone, name)
			}
		}
	}
	sort.Strings(gone)
	return slices.Compact(gone)
}

// testFiles lists the repository's test files as the inventory names
// them: *_test.go by their slash-separated path from root, scripts under
// testdata/script by their base name. Hidden directories (.git) and
// installed packages (node_modules) are not the project's.
func testFiles(t *testing.T, root string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case strings.HasSuffix(rel, "_test.go"):
			names = append(names, rel)
		case strings.HasPrefix(rel, "testdata/script/") && strings.HasSuffix(rel, ".txtar"):
			names = append(names, d.Name())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	return names
}
