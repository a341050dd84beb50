package postgres

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// builds holds the idemkey binaries built for this test binary, by
// revision ("" for the working tree), in one directory (TestMain removes
// it).
var (
	buildMu   sync.Mutex
	builds    = map[string]string{}
	buildsDir string
)

// idemkey builds the idemkey command of rev (a commit of this
// repository's history; "" for the working tree) with CGO_ENABLED=0, once
// per test binary, and returns its path. A commit the clone does not have
// (a shallow clone) skips the test.
func idemkey(t *testing.T, rev string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if p, ok := builds[rev]; ok {
		return p
	}
	root, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(root)), "go.mod") {
		t.Fatalf("go env GOMOD: %q %v", root, err)
	}
	src := filepath.Dir(strings.TrimSpace(string(root)))
	if buildsDir == "" {
		if buildsDir, err = os.MkdirTemp("", "idemkey-pg-builds-"); err != nil {
			t.Fatal(err)
		}
	}
	name := "idemkey-" + rev
	if rev == "" {
		name = "idemkey-worktree"
	} else {
		if out, err := exec.Command("git", "-C", src, "cat-file", "-e", rev+"^{commit}").CombinedOutput(); err != nil {
			t.Skipf("commit %s is not in this clone (a shallow clone?): %v %s", rev, err, out)
		}
		old := filepath.Join(buildsDir, "src-"+rev)
		if err := os.MkdirAll(old, 0o755); err != nil {
			t.Fatal(err)
		}
		archive := exec.Command("git", "-C", src, "archive", rev)
		untar := exec.Command("tar", "-x", "-C", old)
		var stderr bytes.Buffer
		archive.Stderr, untar.Stderr = &stderr, &stderr
		pipe, _ := archive.StdoutPipe()
		untar.Stdin = pipe
		if err := untar.Start(); err != nil {
			t.Fatal(err)
		}
		if err := archive.Run(); err != nil {
			t.Fatalf("git archive %s: %v %s", rev, err, stderr.String())
		}
		if err := untar.Wait(); err != nil {
			t.Fatalf("untar %s: %v %s", rev, err, stderr.String())
		}
		src = old
	}
	out := filepath.Join(buildsDir, name)
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, ".")
	cmd.Dir = src
	// The old revision's modules are the ones this build has (no
	// download in a hermetic test).
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=-mod=readonly", "GOPROXY=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building idemkey at %q: %v\n%s", rev, err, b)
	}
	builds[rev] = out
	return out
}
