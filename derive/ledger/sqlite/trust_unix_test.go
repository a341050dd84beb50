//go:build unix

package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/idemkey/idemkey/derive/ledger/sqlite/usertest"
)

// TestTrustHelperProcess: the helper process of the trust tests, run as another user:
// IDEMKEY_TRUST_HELPER=plant:PATH plants a ledger at PATH with a
// succeeded record of key k (made where others can write: directory 0777,
// files 0666, as the review's attacker did); open:PATH opens a ledger and
// exits 3 if it was refused as untrusted, 4 on another error.
func TestTrustHelperProcess(t *testing.T) {
	verb, path, ok := strings.Cut(os.Getenv("IDEMKEY_TRUST_HELPER"), ":")
	if !ok {
		return
	}
	ctx := context.Background()
	s, err := Open(ctx, path, Options{})
	if err != nil {
		fmt.Println(err)
		if errors.As(err, new(*TrustError)) {
			os.Exit(3)
		}
		os.Exit(4)
	}
	if verb == "plant" {
		now := time.Now()
		rec := ledger.Record{Key: "k", Task: "t", Tool: "x", Kind: "run", Fingerprint: "f", State: ledger.Succeeded,
			Attempt: 1, StartedAt: now, EndedAt: now, Stdout: ledger.Output{Data: []byte("attacker\n"), Length: 9}}
		if _, err := s.Insert(ctx, &rec, 0); err != nil {
			fmt.Println(err)
			os.Exit(4)
		}
	}
	s.Close()
	if verb == "plant" {
		os.Chmod(filepath.Dir(path), 0o777)
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			os.Chmod(p, 0o666)
		}
	}
	os.Exit(0)
}

// helper runs the helper process as u; code is its exit code.
func helper(t *testing.T, exe string, u *usertest.User, verb, path string) (code int, out string) {
	t.Helper()
	c := exec.Command(exe, "-test.run=^TestTrustHelperProcess$")
	c.Env = append(os.Environ(), "IDEMKEY_TRUST_HELPER="+verb+":"+path)
	if u != nil {
		u.As(c)
	}
	b, err := c.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return c.ProcessState.ExitCode(), string(b)
}

// refused checks that opening path fails as untrusted, with an error
// naming want (the path, the owner, the mode) and a hint.
func refused(t *testing.T, path string, want ...string) {
	t.Helper()
	_, err := Open(context.Background(), path, Options{})
	var te *TrustError
	if !errors.As(err, &te) {
		t.Fatalf("%s opened (%v), want it refused as untrusted", path, err)
	}
	all := err.Error() + "\nhint: " + te.Hint()
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("the error %q does not name %q", all, w)
		}
	}
	if te.Hint() == "" {
		t.Errorf("no hint for %q", err)
	}
}

// TestTrustOtherUsersLedger: another local user plants team/ledger.db with
// a succeeded record of a step (the key and fingerprint are computable),
// in a directory they made 0777 beneath a shared sticky one, files 0666.
// root, and a second non-root user, were replaying the planted output: now
// both refuse the ledger, naming the path, its owner and mode.
func TestTrustOtherUsersLedger(t *testing.T) {
	users := usertest.New(t, 2)
	attacker, victim := users[0], users[1]
	shared, exe := usertest.SharedDir(t)
	pub := filepath.Join(shared, "pub") // as /tmp is
	if err := os.Mkdir(pub, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(pub, os.ModeSticky|0o777)
	team := filepath.Join(pub, "team", "ledger.db")
	if code, out := helper(t, exe, &attacker, "plant", team); code != 0 {
		t.Fatalf("the attacker could not plant the ledger: exit %d: %s", code, out)
	}
	// root: the directory in the sticky one is the attacker's.
	refused(t, team, filepath.Join(pub, "team"), attacker.Name, "0777", "1777")
	// The second user is refused too.
	if code, out := helper(t, exe, &victim, "open", team); code != 3 || !strings.Contains(out, attacker.Name) {
		t.Fatalf("the second user: exit %d: %s, want refused naming %s", code, out, attacker.Name)
	}
	// Each of the ledger's files, given to another user or left writable
	// by others in a directory of one's own: refused, by name.
	own := filepath.Join(shared, "own")
	path := filepath.Join(own, "ledger.db")
	open(t, path, Options{}).Close()
	os.Mkdir(path+".locks", 0o700)
	os.Mkdir(path+".outputs", 0o700)
	for _, f := range []string{path, path + "-wal", path + "-shm", path + ".locks", path + ".outputs"} {
		attacker.Chown(t, f)
		refused(t, path, f, attacker.Name)
		usertest.User{}.Chown(t, f)
		fi, _ := os.Stat(f)
		os.Chmod(f, fi.Mode().Perm()|0o020)
		refused(t, path, f, fmt.Sprintf("%04o", fi.Mode().Perm()|0o020), "chmod go-w")
		os.Chmod(f, fi.Mode().Perm())
	}
	os.Chmod(own, 0o770)
	refused(t, path, own, "0770", "chmod go-w")
	os.Chmod(own, 0o700)
	open(t, path, Options{}).Close() // restored: trusted again
	// The second user's own ledger, beneath the sticky directory: theirs,
	// trusted.
	if code, out := helper(t, exe, &victim, "open", filepath.Join(pub, "victim", "ledger.db")); code != 0 {
		t.Fatalf("the second user's own ledger: exit %d: %s", code, out)
	}
}

// TestTrustPlantedSymlink: a symbolic link that another user planted in
// a shared directory, pointing into a directory only root can write:
// root's idemkey followed it and created the ledger there. And an empty
// file of another user's became a database. Both are refused, and
// nothing is created or written.
func TestTrustPlantedSymlink(t *testing.T) {
	attacker := usertest.New(t, 1)[0]
	shared, _ := usertest.SharedDir(t)
	pub := filepath.Join(shared, "pub")
	os.Mkdir(pub, 0o755)
	os.Chmod(pub, os.ModeSticky|0o777)
	rootOnly := filepath.Join(shared, "root-only")
	os.Mkdir(rootOnly, 0o700)
	link := filepath.Join(pub, "ledger.db")
	if err := os.Symlink(filepath.Join(rootOnly, "made.db"), link); err != nil {
		t.Fatal(err)
	}
	attacker.Chown(t, link)
	refused(t, link, link, attacker.Name)
	if _, err := os.Lstat(filepath.Join(rootOnly, "made.db")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a file was made through the planted link: %v", err)
	}
	// A link through a directory others can write (no sticky bit): they
	// could swap it.
	open2 := filepath.Join(shared, "open")
	os.Mkdir(open2, 0o777)
	os.Chmod(open2, 0o777)
	link2 := filepath.Join(open2, "ledger.db")
	os.Symlink(filepath.Join(rootOnly, "made2.db"), link2)
	refused(t, link2, open2, "0777")
	if _, err := os.Lstat(filepath.Join(rootOnly, "made2.db")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a file was made through a link in a writable directory: %v", err)
	}
	// An empty file of the attacker's, in a directory of root's.
	empty := filepath.Join(rootOnly, "empty.db")
	os.WriteFile(empty, nil, 0o600)
	attacker.Chown(t, empty)
	refused(t, empty, empty, attacker.Name)
	if fi, err := os.Stat(empty); err != nil || fi.Size() != 0 {
		t.Fatalf("the other user's file was written: %v %v", fi, err)
	}
	// A link of one's own, in a directory of one's own, to one's own
	// ledger: trusted (the ledger is the target, locks beside it).
	mine := filepath.Join(rootOnly, "mine.db")
	os.Symlink(filepath.Join(rootOnly, "real.db"), mine)
	if s := open(t, mine, Options{}); s.Path() != filepath.Join(rootOnly, "real.db") {
		t.Fatalf("a trusted link: path %s", s.Path())
	}
}

// TestHardLinkRefused: the key locks are beside the name, so a hard link
// to the ledger (or.db) was a second, independent set of locks (and
// SQLite a second -wal file): a step held through one name was free
// through the other. A ledger file with more than one link is refused,
// through either name.
func TestHardLinkRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.db")
	s := open(t, path, Options{})
	held, err := s.LockKey("k")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	other := filepath.Join(dir, "or.db")
	if err := os.Link(path, other); err != nil {
		t.Fatal(err)
	}
	refused(t, other, other, "2 hard links", "samefile")
	refused(t, path, path, "2 hard links")
	os.Remove(other)
	if _, err := open(t, path, Options{}).LockKey("k"); !errors.Is(err, ErrLocked) {
		t.Fatalf("the one name left: %v, want the key locked", err)
	}
}

// TestBindMountedFileRefused: a bind mount of the ledger file alone is a
// second name with its own locks, as a hard link is (skipped where the
// test may not mount).
func TestBindMountedFileRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.db")
	open(t, path, Options{}).Close()
	other := filepath.Join(t.TempDir(), "mounted.db")
	os.WriteFile(other, nil, 0o600)
	if out, err := exec.Command("mount", "--bind", path, other).CombinedOutput(); err != nil {
		t.Skipf("skipped: cannot bind-mount a file here: %v: %s", err, out)
	}
	defer exec.Command("umount", other).Run()
	refused(t, other, other, "mount point")
}

// TestWorldWritableDirLeavesNoFile: a new ledger right in a directory
// others can write (with or without the sticky bit, as /tmp) is refused,
// and nothing is created there: the check comes before the file.
func TestWorldWritableDirLeavesNoFile(t *testing.T) {
	for _, mode := range []os.FileMode{0o777, 0o777 | os.ModeSticky} {
		dir := filepath.Join(t.TempDir(), "shared")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		_, err := Open(context.Background(), filepath.Join(dir, "ledger.db"), Options{})
		var te *TrustError
		if !errors.As(err, &te) || te.Path != dir {
			t.Fatalf("Open in a directory of mode %v: %v, want a TrustError naming it", mode, err)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Fatalf("mode %v: left behind: %v", mode, ents)
		}
	}
}
