//go:build linux

package proc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// stepHolderArg is the argument that makes idemkey a step's holder. On
// Linux, a step's command (run's, a reconcile command) runs under a
// holder: idemkey itself run again as
//
//	idemkey __idemkey-step-holder LOCKFD,REPORTFD,CONTROLFD REAP PATH ARGV0 ARG...
//
// which makes itself a child subreaper (prctl(2)), so that every process
// the command starts stays its descendant, also one that leaves its
// process group or session (setsid, a daemon's double fork), and holds
// the key's lock (LOCKFD, -1: none) for as long as any of them runs when
// idemkey is gone. The command cannot shed it: closing the descriptor it
// was given, clearing its environment (env -i, sudo, su -) or starting a
// session of its own leaves it a process under the holder. A step's
// command is given the lock too, at the same descriptor (a step whose
// holder was killed still holds its key); a reconcile command is not.
//
// The holder stays in idemkey's process group, as the command does: the
// terminal's signals and a job control stop reach the command as they
// would without idemkey. It reports on REPORTFD "pid N" once the command
// started (or "error ERRNO PATH") and "status W" (the wait status) once
// it ended; it takes orders on CONTROLFD, one a line:
//
//	signal N  send signal N to the command
//	stop N    send N (0: none) to every process of the command's tree,
//	          and kill what is left of it once the command exited
//	kill      kill every process of the tree now
//
// With REAP 1 (a reconcile command, which only looks) the command is not
// given the lock, and what it leaves behind is killed when it exits. When CONTROLFD ends (idemkey
// died), the holder waits for every process of the tree, holding the
// key's lock, and then exits.
const stepHolderArg = "__idemkey-step-holder"

func init() {
	if len(os.Args) > 4 && os.Args[1] == stepHolderArg {
		os.Exit(stepHolderMain(os.Args[2], os.Args[3] == "1", os.Args[4], os.Args[5:]))
	}
}

// Step is a command started under a holder (see stepHolderArg).
type Step struct {
	// Cmd is the holder's process: the caller sets its Env, Stdin,
	// Stdout and Stderr (the command's) before Start.
	Cmd     *exec.Cmd
	report  *os.File
	control *os.File
	rd      *bufio.Reader
	path    string
	pid     int
	mu      sync.Mutex
	status  syscall.WaitStatus
	ended   bool
}

// NewStep prepares path with argv (argv[0] its name) under a holder that
// keeps lock (nil: none) and the descriptors this process was started
// with at their numbers; reap: kill what the command leaves behind.
func NewStep(path string, argv []string, lock *os.File, inherited func(lock *os.File) ([]*os.File, int), reap bool) (*Step, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	files, lockFD := inherited(lock)
	if lock == nil {
		lockFD = -1
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		repR.Close()
		repW.Close()
		return nil, err
	}
	files = append(files, repW, ctlR)
	n := len(files) + 2 // fds: 3 + index
	r := "0"
	if reap {
		r = "1"
	}
	c := exec.Command(self)
	c.Args = append([]string{"idemkey", stepHolderArg, fmt.Sprintf("%d,%d,%d", lockFD, n-1, n), r, path}, argv...)
	c.ExtraFiles = files
	return &Step{Cmd: c, report: repR, control: ctlW, rd: bufio.NewReader(repR), path: path}, nil
}

// Start starts the holder and waits until the command has started: an
// error that kept it from starting is an *os.PathError (Op "fork/exec").
func (s *Step) Start() error {
	err := s.Cmd.Start()
	for _, f := range s.Cmd.ExtraFiles[len(s.Cmd.ExtraFiles)-2:] {
		f.Close() // the holder's now
	}
	if err != nil {
		s.report.Close()
		s.control.Close()
		return err
	}
	line, _ := s.rd.ReadString('\n')
	verb, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
	switch verb {
	case "pid":
		s.pid, _ = strconv.Atoi(arg)
		return nil
	case "error":
		no, path, _ := strings.Cut(arg, " ")
		errno, _ := strconv.Atoi(no)
		_ = s.Cmd.Wait()
		s.report.Close()
		s.control.Close()
		return &os.PathError{Op: "fork/exec", Path: path, Err: syscall.Errno(errno)}
	}
	// The holder ended without a word: it may have started the command,
	// which may have run (and killed it) before the holder said so. That
	// is a start whose end Wait cannot see (Pid is 0), never a command
	// that did not run.
	return nil
}

// Pid is the command's process id (0 when the holder ended before it
// said it).
func (s *Step) Pid() int { return s.pid }

// HolderPid is the holder's process id.
func (s *Step) HolderPid() int { return s.Cmd.Process.Pid }

func (s *Step) order(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		fmt.Fprintf(s.control, format+"\n", args...)
	}
}

// Signal sends sig to the command alone.
func (s *Step) Signal(sig syscall.Signal) { s.order("signal %d", int(sig)) }

// Stop sends sig (0: none) to every process of the command's tree; what
// is left of it once the command exited is killed before Wait returns.
func (s *Step) Stop(sig syscall.Signal) { s.order("stop %d", int(sig)) }

// Kill kills every process of the command's tree.
func (s *Step) Kill() { s.order("kill") }

// Wait waits for the holder, and returns the command's wait status; ok is
// false when the holder ended without saying it (it was killed): then ps
// is the holder's. err is the holder's wait's (exec.Cmd.Wait: its status,
// or its output not ending).
func (s *Step) Wait() (ws syscall.WaitStatus, ps *os.ProcessState, ok bool, err error) {
	err = s.Cmd.Wait() // its status is the holder's: the command's is reported
	s.mu.Lock()
	s.ended = true
	s.control.Close()
	s.mu.Unlock()
	defer s.report.Close()
	for {
		line, rerr := s.rd.ReadString('\n')
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "status "); ok {
			n, _ := strconv.Atoi(v)
			return syscall.WaitStatus(n), s.Cmd.ProcessState, true, err
		}
		if rerr != nil {
			break
		}
	}
	return 0, s.Cmd.ProcessState, false, err
}

// stepHolderMain is the holder (see stepHolderArg).
func stepHolderMain(fds string, reap bool, path string, argv []string) int {
	var lockFD, repFD, ctlFD int
	if _, err := fmt.Sscanf(fds, "%d,%d,%d", &lockFD, &repFD, &ctlFD); err != nil {
		return 125
	}
	syscall.CloseOnExec(repFD)
	syscall.CloseOnExec(ctlFD)
	if reap && lockFD >= 0 {
		syscall.CloseOnExec(lockFD) // a reconcile's command only looks: not its to keep
	}
	report := os.NewFile(uintptr(repFD), "report")
	control := os.NewFile(uintptr(ctlFD), "control")
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(report, "error %d %s\n", int(syscall.ENOSYS), path)
		return 125
	}
	// Signals are taken in, not acted on: idemkey says what reaches the
	// command (a terminal's reaches it directly, as the holder's group
	// is idemkey's). Caught, the command gets them at their defaults;
	// those the holder was started with ignored (nohup) stay ignored.
	sigc := make(chan os.Signal, 8)
	for _, sig := range []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2} {
		if !signal.Ignored(sig) {
			signal.Notify(sigc, sig)
		}
	}
	go func() {
		for range sigc {
		}
	}()
	attr := &os.ProcAttr{Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}}
	p, err := os.StartProcess(path, argv, attr)
	if errors.Is(err, syscall.ENOEXEC) {
		// A script without a #! line: the shell runs it, as execvp does.
		p, err = os.StartProcess("/bin/sh", append([]string{"sh", path}, argv[1:]...), attr)
	}
	if err != nil {
		var errno syscall.Errno
		if !errors.As(err, &errno) {
			errno = syscall.EINVAL
		}
		fmt.Fprintf(report, "error %d %s\n", int(errno), path)
		return 126
	}
	fmt.Fprintf(report, "pid %d\n", p.Pid)
	// The command's streams are its own: they end when it and what it
	// started close them.
	nullStdio()
	var stopping, orphaned atomic.Bool
	go func() {
		sc := bufio.NewScanner(control)
		for sc.Scan() {
			verb, arg, _ := strings.Cut(sc.Text(), " ")
			n, _ := strconv.Atoi(arg)
			switch verb {
			case "signal":
				_ = unix.Kill(p.Pid, syscall.Signal(n))
			case "stop":
				stopping.Store(true)
				if n > 0 {
					signalTree(syscall.Signal(n))
				}
			case "kill":
				stopping.Store(true)
				signalTree(syscall.SIGKILL)
			}
		}
		orphaned.Store(true)
	}()
	ws := waitChild(p.Pid)
	switch {
	case reap || stopping.Load():
		killChildren()
	case orphaned.Load() || controlEnded(ctlFD):
		// idemkey is gone: the key stays in progress while any process
		// of the step runs.
		for {
			if _, err := unix.Wait4(-1, nil, 0, nil); err == unix.ECHILD {
				break
			}
		}
	}
	fmt.Fprintf(report, "status %d\n", int(ws))
	return 0
}

// noChildren reports whether this process has no child left, running or
// not yet reaped (it reaps one that has ended). For a subreaper whose
// command has been reaped, it means the command's whole tree is gone:
// every living process of it is a child or has a living ancestor that is
// one. It saves reading /proc after a command that left nothing behind.
func noChildren() bool {
	_, err := unix.Wait4(-1, nil, unix.WNOHANG, nil)
	return err == unix.ECHILD
}

// controlEnded reports whether the control pipe's writer (idemkey) has
// gone, without reading it.
func controlEnded(fd int) bool {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(pfd, 0)
	return err == nil && n > 0 && pfd[0].Revents&unix.POLLHUP != 0
}

// signalTree sends sig to every descendant of this process, all found
// before any of them is sent it.
func signalTree(sig syscall.Signal) {
	tree := ProcessTree(os.Getpid())
	for _, p := range tree[1:] {
		_ = unix.Kill(p, sig)
	}
}

// killChildren kills every descendant of this process (a subreaper: the
// tree's orphans are its children) and reaps them, until none is left.
func killChildren() {
	for {
		if noChildren() {
			return
		}
		signalTree(syscall.SIGKILL)
		if _, err := unix.Wait4(-1, nil, 0, nil); err == unix.ECHILD {
			return
		}
	}
}
