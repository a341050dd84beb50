//go:build !unix

package proc

import (
	"os"
	"os/exec"
	"syscall"
)

func OwnGroup(*exec.Cmd)  {}
func KillGroup(*exec.Cmd) {}

var StopSignals = []os.Signal{os.Interrupt}

// SetGroup: Windows has no process groups to start cmd in.
func SetGroup(*exec.Cmd) {}

// SignalGroup ends cmd: Windows has no process groups to signal.
func SignalGroup(cmd *exec.Cmd, _ syscall.Signal) error { return cmd.Process.Kill() }
