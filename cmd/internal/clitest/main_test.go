package clitest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMainLeavesNothing: a face's test binary (cmd/vectors', whose
// TestMain is clitest.Main) leaves nothing of idemkey's in its TMPDIR:
// the hermetic directories are removed when its tests end, and the go
// command's caches are the caller's, not new ones under them.
func TestMainLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test")
	}
	tmp := t.TempDir()
	c := exec.Command("go", "test", "-count=1", "-run", "TestVectors", "../../vectors")
	c.Env = append(os.Environ(), "TMPDIR="+tmp)
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("go test ./cmd/vectors: %v\n%s", err, out)
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "idemkey-") {
			t.Errorf("left behind in TMPDIR: %s", filepath.Join(tmp, e.Name()))
		}
	}
}
