//go:build unix

// Package usertest gives tests real second Unix users, for what only
// another user can do: own a file, plant a ledger, hold a directory.
// Running as root (as here and in CI) it creates them with useradd and
// removes them when the test ends; otherwise the test is skipped with a
// message, except under CI=true, where it fails: there it must run.
package usertest

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
)

// User is a Unix user made for a test.
type User struct {
	Name     string
	UID, GID int
}

var seq atomic.Int64

// New creates n users, removed when t ends.
func New(t testing.TB, n int) []User {
	t.Helper()
	if os.Geteuid() != 0 {
		unavailable(t, "not running as root")
	}
	if _, err := exec.LookPath("useradd"); err != nil {
		unavailable(t, "useradd is not installed")
	}
	var us []User
	for range n {
		// Unique to this process and call: test binaries run side by
		// side (at most 32 characters, as useradd takes them).
		name := fmt.Sprintf("idk%d-%d", os.Getpid(), seq.Add(1))
		out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/bin/sh", "--user-group", name).CombinedOutput()
		if err != nil {
			unavailable(t, fmt.Sprintf("useradd %s: %v: %s", name, err, out))
		}
		t.Cleanup(func() { _ = exec.Command("userdel", name).Run() })
		u, err := user.Lookup(name)
		if err != nil {
			t.Fatalf("the user just made: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		us = append(us, User{Name: name, UID: uid, GID: gid})
	}
	return us
}

func unavailable(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("a second Unix user is needed, and cannot be made: %s (under CI=true this test must run)", why)
	}
	t.Skipf("skipped: a second Unix user is needed, and cannot be made: %s", why)
}

// As makes c run as u (with u's group only).
func (u User) As(c *exec.Cmd) *exec.Cmd {
	if c.SysProcAttr == nil {
		c.SysProcAttr = &syscall.SysProcAttr{}
	}
	c.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(u.UID), Gid: uint32(u.GID), Groups: []uint32{}}
	return c
}

// Chown gives path to u.
func (u User) Chown(t testing.TB, path string) {
	t.Helper()
	if err := os.Lchown(path, u.UID, u.GID); err != nil {
		t.Fatal(err)
	}
}

// SharedDir is a new directory every user can reach (mode 0755, in the
// system's temporary directory: a test's own is 0700), removed when t
// ends, with a copy of the running test binary in it that every user can
// run: the path of the copy.
func SharedDir(t testing.TB) (dir, exe string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "idemkey-users-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	exe = filepath.Join(dir, filepath.Base(self))
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, exe
}
