//go:build unix

package cmd

import (
	"os"
	"syscall"
)

// signalPid sends sig to the process pid.
func signalPid(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }

// userSignals are forwarded to the command too: Go would take them in and
// do nothing (a supervisor's "reopen your logs", dd's progress report).
var userSignals = []os.Signal{syscall.SIGUSR1, syscall.SIGUSR2}
