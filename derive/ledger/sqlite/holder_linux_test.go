package sqlite

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemkey/idemkey/derive/ledger"
	"golang.org/x/sys/unix"
)

func TestHolderReadBack(t *testing.T) {
	h, ok := parseHolder(Holder())
	if !ok || h.pid != os.Getpid() || h.pgid != syscall.Getpgrp() || h.start == 0 || len(h.boot) != 36 {
		t.Fatalf("Holder() = %q: %+v, %v", Holder(), h, ok)
	}
	for _, bad := range []string{"", "host pid 12", "host pid x pgid 1 start 2 boot b", "host pid 1 pgid 1 start 2 boot"} {
		if _, ok := parseHolder(bad); ok {
			t.Errorf("parseHolder(%q) accepted", bad)
		}
	}
	if !HolderAlive(&ledger.Record{Holder: Holder()}) {
		t.Fatal("this process is not alive")
	}
}

// startStep starts sh -c script as a step's command would run: in a
// process group of its own or not, with the attempt's environment or not.
func startStep(t *testing.T, script string, group bool, env ...string) *exec.Cmd {
	t.Helper()
	c := exec.Command("sh", "-c", "exec "+script)
	c.Env = append(os.Environ(), env...)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: group}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL); _ = c.Process.Kill(); _ = c.Wait() })
	return c
}

// holderOf is the Holder a process would have recorded.
func holderOf(t *testing.T, pid int) string {
	t.Helper()
	st, err := readStat(pid)
	if err != nil {
		t.Fatal(err)
	}
	h := self()
	h.pid, h.pgid, h.start = pid, st.pgrp, st.start
	return h.String()
}

// TestHolderAlive with real processes: a holder alive; one killed (a
// zombie, then reaped); a pid reused (a later start time); a dead leader
// whose group lives on; a dead holder whose step's processes live on in
// another group, found by their environment.
func TestHolderAlive(t *testing.T) {
	c := startStep(t, "sleep 30", false)
	rec := &ledger.Record{Key: "k", Attempt: 2, Holder: holderOf(t, c.Process.Pid)}
	if !HolderAlive(rec) {
		t.Fatal("a live holder read as dead")
	}
	c.Process.Kill()
	waitFor(t, func() bool { st, err := readStat(c.Process.Pid); return err == nil && st.state == 'Z' })
	if HolderAlive(rec) {
		t.Fatal("a zombie read as alive")
	}
	c.Wait()
	if HolderAlive(rec) {
		t.Fatal("a dead holder read as alive")
	}
	// The same pid, another start time: a later process.
	h, _ := parseHolder(holderOf(t, os.Getpid()))
	h.start--
	if HolderAlive(&ledger.Record{Holder: h.String()}) {
		t.Fatal("a reused pid read as its holder")
	}
	// Another boot, another host: not vouched for.
	for _, change := range []func(*holderID){func(h *holderID) { h.boot = "00000000-0000-0000-0000-000000000000" }, func(h *holderID) { h.host += "x" }} {
		h, _ := parseHolder(Holder())
		change(&h)
		if HolderAlive(&ledger.Record{Holder: h.String()}) {
			t.Fatalf("%s read as alive", h)
		}
	}
	// A leader dies; a process of its group lives.
	mark := filepath.Join(t.TempDir(), "child")
	leader := startStep(t, "sh -c 'sleep 30 & echo $! > "+mark+"; wait'", true)
	waitFor(t, func() bool { b, _ := os.ReadFile(mark); return strings.HasSuffix(string(b), "\n") })
	rec = &ledger.Record{Key: "k", Attempt: 1, Holder: holderOf(t, leader.Process.Pid)}
	leader.Process.Kill()
	leader.Wait()
	if !HolderAlive(rec) {
		t.Fatal("a group whose leader died read as dead")
	}
	b, _ := os.ReadFile(mark)
	child, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	syscall.Kill(child, syscall.SIGKILL)
	waitFor(t, func() bool { return !HolderAlive(rec) })
	// A holder in another's group dies; its step lives on, carrying the
	// attempt's key in its environment.
	holder := startStep(t, "sleep 30", false)
	rec = &ledger.Record{Key: "k-env", Attempt: 3, Holder: holderOf(t, holder.Process.Pid)}
	step := startStep(t, "sleep 30", false, "IDEMPOTENCY_KEY=k-env", "IDEMPOTENCY_ATTEMPT=3")
	other := startStep(t, "sleep 30", false, "IDEMPOTENCY_KEY=k-env", "IDEMPOTENCY_ATTEMPT=2") // another attempt's
	holder.Process.Kill()
	holder.Wait()
	if !HolderAlive(rec) {
		t.Fatal("a step whose holder died read as dead")
	}
	step.Process.Kill()
	step.Wait()
	if HolderAlive(rec) {
		t.Fatal("another attempt's process vouched for this one")
	}
	other.Process.Kill()
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

// TestChildFilesHighLock: a command given the key's lock by ChildFiles
// finds it at LockFD, keeps it through "exec 3>log" (which closed it when
// it was fd 3), and gets this process's inherited descriptors at their
// numbers.
func TestChildFilesHighLock(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "ledger.db"), Options{})
	lock, err := s.LockKey("k")
	if err != nil {
		t.Fatal(err)
	}
	// A descriptor as one this process inherited (no close-on-exec; above
	// 9, which dash's redirections cannot name).
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	in, err := unix.FcntlInt(w.Fd(), unix.F_DUPFD, 20)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	files, fd := ChildFiles(lock)
	if fd != LockFD {
		t.Fatalf("lock at %d, want %d", fd, LockFD)
	}
	dir := t.TempDir()
	c := exec.Command("sh", "-c", `exec 3>log; exec 4>&-; echo inherited > /proc/$$/fd/`+strconv.Itoa(in)+`; [ -e /proc/$$/fd/`+strconv.Itoa(fd)+` ] && touch has-lock; while [ ! -e go ]; do sleep 0.05; done`)
	c.Dir, c.ExtraFiles = dir, files
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	unix.Close(in)
	lock.Close()
	waitFor(t, func() bool { _, err := os.Stat(filepath.Join(dir, "has-lock")); return err == nil })
	if _, err := s.LockKey("k"); err != ErrLocked {
		t.Fatalf("after the command's exec 3>log: %v, want the key still locked", err)
	}
	buf := make([]byte, 9)
	if n, _ := r.Read(buf); string(buf[:n]) != "inherited" {
		t.Fatalf("the inherited descriptor %d: %q", in, buf[:n])
	}
	os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
	c.Wait()
	f, err := s.LockKey("k")
	if err != nil {
		t.Fatalf("after the command's exit: %v", err)
	}
	f.Close()
}

// TestRelock: a holder whose lock directory was removed locks the key's
// new lock file again; one whose lock is intact gets nil.
func TestRelock(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "ledger.db"), Options{})
	held, err := s.LockKey("k")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if f, err := s.Relock("k", held); f != nil || err != nil {
		t.Fatalf("intact: %v, %v", f, err)
	}
	os.RemoveAll(s.LockDir())
	f, err := s.Relock("k", held)
	if err != nil || f == nil {
		t.Fatalf("removed: %v, %v", f, err)
	}
	defer f.Close()
	if _, err := s.LockKey("k"); err != ErrLocked {
		t.Fatalf("after Relock: %v, want the key locked", err)
	}
}

// TestReadProc: readProc reads a /proc file as os.ReadFile does, and
// fails on a missing one with the path in its error.
func TestReadProc(t *testing.T) {
	for _, p := range []string{"/proc/sys/kernel/random/boot_id", "/proc/sys/kernel/ostype", "/proc/self/comm"} {
		got, err := readProc(p)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("readProc(%s) = %q, os.ReadFile %q", p, got, want)
		}
	}
	if _, err := readProc("/proc/no-such-file"); err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "/proc/no-such-file") {
		t.Errorf("readProc of a missing file: %v", err)
	}
}
