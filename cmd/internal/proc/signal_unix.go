//go:build unix

package proc

import (
	"os"
	"syscall"
)

// SignalPid sends sig to the process pid.
func SignalPid(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }

// UserSignals are forwarded to the command too: Go would take them in and
// do nothing (a supervisor's "reopen your logs", dd's progress report).
var UserSignals = []os.Signal{syscall.SIGUSR1, syscall.SIGUSR2}
