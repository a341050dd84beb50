//go:build linux

package proc

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"golang.org/x/sys/unix"
)

// reaperArg is the argument that makes idemkey conform's reaper. On Linux,
// conform reaches every process an implementation starts, also one that
// leaves its process group (setsid, a daemon): the implementation
// runs under a reaper, idemkey itself run again as
//
//	idemkey __idemkey-conform-reaper PATH ARG...
//
// which makes itself a child subreaper (prctl PR_SET_CHILD_SUBREAPER,
// prctl(2)), so that every process the implementation leaves behind is
// reparented to it, not to init. When the implementation exits, the
// reaper kills what is left of its tree, waits for all of it, writes on
// descriptor 3 how many processes it killed (or why the implementation
// could not be started), and exits as the implementation did; on SIGTERM
// (conform stopping it) it kills the whole tree first. The reaper is
// entered from this package's init, before any command is set up: it
// reads no setting and prints nothing.
const reaperArg = "__idemkey-conform-reaper"

func init() {
	if len(os.Args) > 2 && os.Args[1] == reaperArg {
		os.Exit(reaperMain(os.Args[2], os.Args[2:]))
	}
}

// Impl is an implementation started under the reaper.
type Impl struct {
	Cmd    *exec.Cmd
	report *os.File // the read end of the reaper's descriptor 3
	w      *os.File
}

// ImplCommand returns the command that runs argv under the reaper, in a
// process group of its own; stopping it (its context) asks the reaper to
// kill the whole tree. The caller sets its standard streams, calls start
// and, once it has waited for it, result.
func ImplCommand(ctx context.Context, argv []string) (*Impl, error) {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, StartError(argv[0], err)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, self)
	cmd.Args = append([]string{"idemkey", reaperArg, path}, argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.ExtraFiles = []*os.File{w}
	return &Impl{Cmd: cmd, report: r, w: w}, nil
}

// Start starts the reaper.
func (p *Impl) Start(argv0 string) error {
	err := p.Cmd.Start()
	p.w.Close() // the reaper holds it now
	if err != nil {
		p.report.Close()
		return StartError(argv0, err)
	}
	return nil
}

// Result reads the reaper's report, once it has been waited for: the
// number of processes it killed after the implementation exited, or the
// error that kept the implementation from starting.
func (p *Impl) Result(argv0 string) (left int, err error) {
	defer p.report.Close()
	sc := bufio.NewScanner(p.report)
	for sc.Scan() {
		verb, arg, _ := strings.Cut(sc.Text(), " ")
		switch verb {
		case "left":
			left, _ = strconv.Atoi(arg)
		case "error":
			return 0, &cli.UsageError{Err: fmt.Errorf("cannot run %s: %s", argv0, arg)}
		}
	}
	return left, nil
}

// Close kills what is left of the reaper's group, if it was started.
func (p *Impl) Close() {
	KillGroup(p.Cmd)
}

// reaperMain runs the implementation at path with argv (argv[0] its name)
// as described at reaperArg, and returns the exit code (or ends by the
// signal that ended the implementation).
func reaperMain(path string, argv []string) int {
	report := os.NewFile(3, "report")
	syscall.CloseOnExec(3)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(report, "error cannot become a child subreaper: %v\n", err)
		return 125
	}
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	proc, err := os.StartProcess(path, argv, &os.ProcAttr{
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		fmt.Fprintf(report, "error %v\n", UnwrapExec(err))
		return 126
	}
	// The implementation's streams are its own: they end when it and
	// what it started close them, as without a reaper.
	nullStdio()
	var stopped atomic.Bool
	go func() {
		<-sigc
		stopped.Store(true)
		_ = unix.Kill(-proc.Pid, unix.SIGKILL)
		_ = unix.Kill(proc.Pid, unix.SIGKILL)
	}()
	ws := waitChild(proc.Pid)
	left := killTree(proc.Pid)
	fmt.Fprintf(report, "left %d\n", left)
	report.Close()
	switch {
	case stopped.Load():
		return exitLike(syscall.SIGTERM)
	case ws.Signaled():
		return exitLike(ws.Signal())
	}
	return ws.ExitStatus()
}

// nullStdio points this process's standard streams at /dev/null (a
// subreaper's child has its own).
func nullStdio() {
	if null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0); err == nil {
		for fd := 0; fd <= 2; fd++ {
			_ = unix.Dup2(int(null.Fd()), fd)
		}
		null.Close()
	}
}

// waitChild waits for the child pid, reaping the orphans of its tree that
// end meanwhile (this process is their subreaper), and returns its status.
func waitChild(pid int) unix.WaitStatus {
	var ws unix.WaitStatus
	for {
		got, err := unix.Wait4(-1, &ws, 0, nil)
		if got == pid || err == unix.ECHILD {
			return ws
		}
	}
}

// killTree kills the implementation's process group (pgid), then every
// child of this process (the subreaper: the implementation's orphans come
// here), again as each one's death reparents its own children, until none
// is left; and returns how many processes it found alive.
func killTree(pgid int) int {
	if unix.Kill(-pgid, 0) == unix.ESRCH && noChildren() {
		return 0 // nothing of the tree is left (see noChildren)
	}
	self := os.Getpid()
	seen := map[int]bool{}
	for _, p := range listProcesses() {
		if p.state != 'Z' && (p.ppid == self || p.pgrp == pgid) {
			seen[p.pid] = true
		}
	}
	_ = unix.Kill(-pgid, unix.SIGKILL)
	for {
		kids := 0
		for _, p := range listProcesses() {
			if p.ppid != self {
				continue
			}
			kids++
			if p.state != 'Z' {
				seen[p.pid] = true
				_ = unix.Kill(p.pid, unix.SIGKILL)
			}
		}
		if kids == 0 {
			if _, err := unix.Wait4(-1, nil, unix.WNOHANG, nil); err == unix.ECHILD {
				return len(seen)
			}
			time.Sleep(time.Millisecond) // a child being reparented
			continue
		}
		_, _ = unix.Wait4(-1, nil, 0, nil)
	}
}

// procStat is a process as /proc/PID/stat shows it.
type procStat struct {
	pid, ppid, pgrp int
	state           byte
}

// listProcesses lists the processes of /proc (proc(5)).
func listProcesses() []procStat {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var ps []procStat
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …: comm may hold spaces and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 3 || f[0] == "" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pgrp, _ := strconv.Atoi(f[2])
		ps = append(ps, procStat{pid: pid, ppid: ppid, pgrp: pgrp, state: f[0][0]})
	}
	return ps
}

// exitLike ends this process by sig, as the implementation ended, so
// that conform reads the same status; 128+sig if it survives that.
func exitLike(sig syscall.Signal) int {
	signal.Reset(sig)
	_ = unix.Kill(os.Getpid(), sig)
	time.Sleep(100 * time.Millisecond)
	return 128 + int(sig)
}
