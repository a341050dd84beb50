//go:build unix

package cmd

import (
	"os"
	"os/exec"
	"syscall"
)

// ownGroup starts cmd in a process group of its own and makes stopping it
// kill the whole group: an implementation is often a wrapper (sh -c, a
// launcher script) whose own children would otherwise go on running after
// conform stopped the wrapper and exited.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

// killGroup kills whatever is left of cmd's process group once cmd has
// been waited for (a background child still holding its pipes). The
// group's id cannot be reused while a member is alive, so this reaches
// only what cmd started.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil && cmd.SysProcAttr != nil && cmd.SysProcAttr.Setpgid {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// conformSignals end conform early; it stops the implementation first (in
// its own group, it does not get the terminal's Ctrl-C itself).
var conformSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}
