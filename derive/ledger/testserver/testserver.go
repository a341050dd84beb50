// Package testserver starts real PostgreSQL and Redis servers for tests, on
// free loopback ports in temporary directories, and stops them afterwards.
//
// No mock stands in for a server. When a server's binaries are missing, a
// test that needs it is skipped with a message naming scripts/services.sh
// (which installs them), except under CI=true, where it fails: CI must not
// go green by skipping.
//
// PostgreSQL: initdb runs once per test binary (as the postgres user when
// the binary runs as root, because initdb refuses root); one shared cluster
// serves every test a fresh database (Postgres), and a test that needs a
// cluster of its own (to stop and restart it) gets a copy of the initdb'd
// directory (NewPostgres). Redis: every test gets a redis-server of its own
// (it starts in milliseconds).
//
// Cleanup: t.Cleanup stops a test's servers, Main stops the shared ones;
// every server runs in its own process group with a parent-death signal,
// and its directory (named after the test binary's pid) holds its pid, so
// that a later run kills servers left behind by a binary that died.
package testserver

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Main runs the tests (WaitBound) and then stops the servers shared
// between them. Use it from TestMain: os.Exit(testserver.Main(m)).
func Main(m *testing.M) int {
	WaitBound()
	code := m.Run()
	stopShared()
	if buildsDir != "" {
		os.RemoveAll(buildsDir)
	}
	return code
}

// WaitBound lets four parallel tests run at once unless -parallel says
// otherwise (its default is the number of CPUs): for a package whose tests
// spend most of their time waiting for processes, leases and servers, not
// computing. Call it from TestMain, before the tests run.
func WaitBound() { _ = flag.Set("test.parallel", "4") }

// missing skips (or, under CI=true, fails) a test whose server is missing.
func missing(t testing.TB, what string, err error) {
	t.Helper()
	Unavailable(t, "%s not available (%v): run bash scripts/services.sh to install it", what, err)
}

// Unavailable ends a test that lacks what it needs (a server, node, a
// package scripts/services.sh installs): it fails under CI=true, where
// everything a test needs is installed, and is skipped elsewhere.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI=true: what a test needs must be installed; bash scripts/services.sh)")
	}
	t.Skip(msg)
}

// base is the directory that holds every server's directory: under
// /dev/shm, Linux's memory file system, when there is one with room
// (shmRoom free: a container's is often 64 MiB, less than two clusters),
// else under the temporary directory. A server's files live no longer than
// the test binary and survive the server's kill -9 on either; on a disk
// file system, creating, syncing and removing them (a PostgreSQL cluster
// is a thousand files, copied for each) took more CPU than the servers'
// work.
func base() string {
	baseOnce.Do(func() {
		dir := os.TempDir()
		var st unix.Statfs_t
		if unix.Access("/dev/shm", unix.W_OK|unix.X_OK) == nil && unix.Statfs("/dev/shm", &st) == nil &&
			st.Bavail*uint64(st.Bsize) >= shmRoom {
			dir = "/dev/shm"
		}
		baseDir = filepath.Join(dir, "idemkey-testservers")
	})
	return baseDir
}

// shmRoom is the free space /dev/shm must have to hold the servers: the
// suite's test binaries run two at a time, each with a few PostgreSQL
// clusters (about 40 MB each, and the template) and Redis servers whose
// append-only files hold the largest outputs a test records (2 × 128 MiB).
const shmRoom = 2 << 30

var (
	baseOnce sync.Once
	baseDir  string
)

var sweepOnce sync.Once

// sweep kills the servers of test binaries that died without stopping
// them, found by their directories' names (the binary's pid) and pid files.
func sweep() {
	sweepOnce.Do(func() {
		entries, err := os.ReadDir(base())
		if err != nil {
			return
		}
		for _, e := range entries {
			owner, _, ok := strings.Cut(e.Name(), "-")
			pid, err := strconv.Atoi(owner)
			if !ok || err != nil || pid == os.Getpid() || alive(pid) {
				continue
			}
			dir := filepath.Join(base(), e.Name())
			killPidFile(filepath.Join(dir, "server.pid"))
			os.RemoveAll(dir)
		}
	})
}

func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil || errors.Is(syscall.Kill(pid, 0), syscall.EPERM)
}

// killPidFile kills the process group whose leader's pid the file holds,
// if that process is still a server of ours.
func killPidFile(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if !strings.Contains(string(cmdline), "postgres") && !strings.Contains(string(cmdline), "redis") {
		return
	}
	syscall.Kill(-pid, syscall.SIGKILL)
}

// newDir makes a server directory owned by owner (nil: the current user).
func newDir(name string, owner *user.User) (string, error) {
	sweep()
	if err := os.MkdirAll(base(), 0o1777); err != nil {
		return "", err
	}
	os.Chmod(base(), 0o1777)
	dir, err := os.MkdirTemp(base(), fmt.Sprintf("%d-%s-", os.Getpid(), name))
	if err != nil {
		return "", err
	}
	if owner != nil {
		if err := chown(dir, owner); err != nil {
			os.RemoveAll(dir)
			return "", err
		}
	}
	return dir, nil
}

func ids(u *user.User) (uint32, uint32) {
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return uint32(uid), uint32(gid)
}

func chown(path string, u *user.User) error {
	uid, gid := ids(u)
	return os.Chown(path, int(uid), int(gid))
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// proc is a server process in its own process group.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	log  string
}

// spawner starts every server from one goroutine locked to its OS thread
// that never exits, so that the parent-death signal (sent when the thread
// that started a child exits) fires only when the test binary dies.
var (
	spawnOnce sync.Once
	spawnReq  chan func()
)

func spawn(f func()) {
	spawnOnce.Do(func() {
		spawnReq = make(chan func())
		go func() {
			runtime.LockOSThread()
			for f := range spawnReq {
				f()
			}
		}()
	})
	done := make(chan struct{})
	spawnReq <- func() { f(); close(done) }
	<-done
}

// start runs a server binary with its output in logPath, as owner (nil:
// the current user), in its own process group, killed if the binary dies.
func start(bin string, args []string, logPath string, owner *user.User, pidFile string) (*proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	if owner != nil {
		chown(logPath, owner)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if owner != nil {
		uid, gid := ids(owner)
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uid, Gid: gid}
	}
	spawn(func() { err = cmd.Start() })
	if err != nil {
		return nil, err
	}
	os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
	p := &proc{cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	return p, nil
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends sig to the server and waits up to wait for it to exit, then
// kills it and whatever it started: postgres backends run in sessions of
// their own (setsid), so the process group does not reach them, and one
// left alive would still answer its client, or keep the cluster's shared
// memory in use so that the restart fails.
func (p *proc) stop(sig syscall.Signal, wait time.Duration) {
	if p == nil || p.exited() {
		return
	}
	pid := p.cmd.Process.Pid
	kids := descendants(pid)
	if sig == syscall.SIGKILL {
		for _, k := range kids {
			syscall.Kill(k, syscall.SIGKILL)
		}
	}
	syscall.Kill(-pid, sig)
	select {
	case <-p.done:
	case <-time.After(wait):
		syscall.Kill(-pid, syscall.SIGKILL)
		<-p.done
	}
	kids = append(kids, descendants(pid)...)
	for _, k := range kids {
		syscall.Kill(k, syscall.SIGKILL)
	}
	for deadline := time.Now().Add(5 * time.Second); anyRunning(kids) && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
}

// procStat returns a process's state and parent from /proc.
func procStat(pid string) (state, ppid string, ok bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return "", "", false
	}
	// pid (comm) state ppid …; comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return "", "", false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return "", "", false
	}
	return f[0], f[1], true
}

// descendants lists the running processes below pid.
func descendants(pid int) []int {
	children := map[string][]string{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if c := e.Name()[0]; c < '0' || c > '9' {
			continue
		}
		if st, pp, ok := procStat(e.Name()); ok && st != "Z" {
			children[pp] = append(children[pp], e.Name())
		}
	}
	var out []int
	var walk func(string)
	walk = func(p string) {
		for _, c := range children[p] {
			n, _ := strconv.Atoi(c)
			out = append(out, n)
			walk(c)
		}
	}
	walk(strconv.Itoa(pid))
	return out
}

// anyRunning reports whether one of pids still runs (zombies do not).
func anyRunning(pids []int) bool {
	for _, p := range pids {
		if st, _, ok := procStat(strconv.Itoa(p)); ok && st != "Z" {
			return true
		}
	}
	return false
}

// tail returns the end of the server's log, for an error message.
func (p *proc) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// waitReady polls ready until it succeeds, the process exits, or timeout.
func (p *proc) waitReady(timeout time.Duration, ready func(ctx context.Context) error) error {
	deadline := time.Now().Add(timeout)
	var err error
	for delay := 5 * time.Millisecond; time.Now().Before(deadline); delay = min(delay*2, 100*time.Millisecond) {
		if p.exited() {
			return fmt.Errorf("server exited: %v\n%s", p.err, p.tail())
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = ready(ctx)
		cancel()
		if err == nil {
			return nil
		}
		time.Sleep(delay)
	}
	return fmt.Errorf("server not ready after %v: %v\n%s", timeout, err, p.tail())
}
