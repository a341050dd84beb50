package testserver

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// builds holds the idemkey binaries built by this test binary, by
// revision ("" for the working tree), in one directory removed by Main.
var (
	buildMu   sync.Mutex
	builds    = map[string]string{}
	buildsDir string
)

// Idemkey builds the idemkey command of rev (a commit of this
// repository's history; "" for the working tree) with CGO_ENABLED=0, once
// per test binary, and returns its path. The build uses the modules
// already in the module cache (GOPROXY=off), so a test stays hermetic.
// The build of a commit is also kept across runs beside the go command's
// build cache (see cachedBuild), keyed by the full commit, the Go version
// and the platform: a commit's tree never changes.
//
// A commit the clone does not have skips the test when the clone is
// shallow (it cannot hold the commit, CI or not) and fails it otherwise
// under CI=true.
func Idemkey(t testing.TB, rev string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if p, ok := builds[rev]; ok {
		return p
	}
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(gomod)), "go.mod") {
		t.Fatalf("go env GOMOD: %q %v", gomod, err)
	}
	src := filepath.Dir(strings.TrimSpace(string(gomod)))
	if buildsDir == "" {
		if buildsDir, err = os.MkdirTemp("", "idemkey-builds-"); err != nil {
			t.Fatal(err)
		}
	}
	name, cached := "idemkey-worktree", ""
	if rev != "" {
		name = "idemkey-" + rev
		if out, err := exec.Command("git", "-C", src, "cat-file", "-e", rev+"^{commit}").CombinedOutput(); err != nil {
			msg := "commit " + rev + " of this repository's history is not in this clone (" + strings.TrimSpace(string(out)) + "): a clone with its history builds the older idemkey"
			shallow, _ := exec.Command("git", "-C", src, "rev-parse", "--is-shallow-repository").Output()
			if os.Getenv("CI") == "true" && strings.TrimSpace(string(shallow)) != "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
		var commit string
		cached, commit = cachedBuild(src, rev)
		if cached != "" {
			if _, err := os.Stat(cached); err == nil {
				builds[rev] = cached
				return cached
			}
		}
		old := filepath.Join(buildsDir, "src-"+commit)
		if err := os.MkdirAll(old, 0o755); err != nil {
			t.Fatal(err)
		}
		archive := exec.Command("git", "-C", src, "archive", rev)
		untar := exec.Command("tar", "-x", "-C", old)
		var stderr bytes.Buffer
		archive.Stderr, untar.Stderr = &stderr, &stderr
		pipe, err := archive.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
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
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=-mod=readonly", "GOPROXY=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building idemkey at %q: %v\n%s", rev, err, b)
	}
	if cached != "" && keep(out, cached) {
		out = cached
	}
	builds[rev] = out
	return out
}

// cachedBuild is where the build of commit rev is kept across runs, in
// idemkey-test-builds beside the go command's build cache, named by the
// full commit, the Go version and the platform ("" when one of them
// cannot be had); and the full commit (rev itself if it cannot be had).
func cachedBuild(src, rev string) (path, commit string) {
	full, err := exec.Command("git", "-C", src, "rev-parse", "--verify", rev+"^{commit}").Output()
	commit = strings.TrimSpace(string(full))
	if err != nil || len(commit) != 40 {
		return "", rev
	}
	env, err := exec.Command("go", "env", "GOCACHE", "GOVERSION", "GOOS", "GOARCH").Output()
	f := strings.Fields(string(env))
	if err != nil || len(f) != 4 || !filepath.IsAbs(f[0]) {
		return "", commit
	}
	return filepath.Join(filepath.Dir(f[0]), "idemkey-test-builds", strings.Join([]string{"idemkey", commit, f[1], f[2], f[3]}, "-")), commit
}

// keep copies the built binary to path (through a temporary file and a
// rename, so that a concurrent run never sees half of it) and reports
// whether it did.
func keep(built, path string) bool {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false
	}
	b, err := os.ReadFile(built)
	if err != nil {
		return false
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".build-")
	if err != nil {
		return false
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil || tmp.Chmod(0o755) != nil || tmp.Close() != nil {
		tmp.Close()
		return false
	}
	return os.Rename(tmp.Name(), path) == nil
}
