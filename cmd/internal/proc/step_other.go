//go:build !linux

package proc

import (
	"os"
	"os/exec"
	"syscall"
)

// Step is a command run directly: outside Linux there is no child
// subreaper to hold its tree (see step_linux.go); the command is given
// the key's lock itself.
type Step struct {
	Cmd *exec.Cmd
}

func NewStep(path string, argv []string, lock *os.File, inherited func(lock *os.File) ([]*os.File, int), reap bool) (*Step, error) {
	c := &exec.Cmd{Path: path, Args: argv}
	if lock != nil {
		c.ExtraFiles, _ = inherited(lock)
	}
	return &Step{Cmd: c}, nil
}

func (s *Step) Start() error {
	err := s.Cmd.Start()
	if pe, ok := err.(*os.PathError); ok && pe.Err == syscall.ENOEXEC {
		c := s.Cmd
		sh := &exec.Cmd{Path: "/bin/sh", Args: append([]string{"sh", c.Path}, c.Args[1:]...), Env: c.Env,
			Stdin: c.Stdin, Stdout: c.Stdout, Stderr: c.Stderr, ExtraFiles: c.ExtraFiles}
		if sh.Start() == nil {
			s.Cmd = sh
			return nil
		}
	}
	return err
}

func (s *Step) Pid() int       { return s.Cmd.Process.Pid }
func (s *Step) HolderPid() int { return s.Cmd.Process.Pid }

func (s *Step) Signal(sig syscall.Signal) { _ = SignalPid(s.Cmd.Process.Pid, sig) }

func (s *Step) Stop(sig syscall.Signal) {
	if sig != 0 {
		s.Signal(sig)
	}
}

func (s *Step) Kill() { _ = s.Cmd.Process.Kill() }

func (s *Step) Wait() (ws syscall.WaitStatus, ps *os.ProcessState, ok bool, err error) {
	err = s.Cmd.Wait()
	ws, ok = s.Cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ws, s.Cmd.ProcessState, ok, err
}
