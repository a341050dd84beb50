//go:build unix

package proc

import (
	"os"
	"os/exec"
	"syscall"
)

// OwnGroup starts cmd in a process group of its own and makes stopping it
// kill the whole group: an implementation is often a wrapper (sh -c, a
// launcher script) whose own children would otherwise go on running after
// conform stopped the wrapper and exited.
func OwnGroup(cmd *exec.Cmd) {
	SetGroup(cmd)
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

// KillGroup kills whatever is left of cmd's process group once cmd has
// been waited for (a background child still holding its pipes). The
// group's id cannot be reused while a member is alive, so this reaches
// only what cmd started.
func KillGroup(cmd *exec.Cmd) {
	if cmd.Process != nil && cmd.SysProcAttr != nil && cmd.SysProcAttr.Setpgid {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// StopSignals end conform early; it stops the implementation first (in
// its own group, it does not get the terminal's Ctrl-C itself).
var StopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// SetGroup starts cmd in a process group of its own (see SignalGroup).
func SetGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// SignalGroup sends sig to cmd's process group when OwnGroup started it
// there (to cmd alone otherwise): a wrapper's children (npx, sh -c) get it
// too, and none is left holding the pipes.
func SignalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	if cmd.SysProcAttr != nil && cmd.SysProcAttr.Setpgid {
		return syscall.Kill(-cmd.Process.Pid, sig)
	}
	return cmd.Process.Signal(sig)
}
