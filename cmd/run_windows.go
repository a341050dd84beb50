package cmd

import (
	"os"
	"syscall"
)

// signalPid stops the process pid: Windows has no signals to forward, so
// every signal ends it.
func signalPid(pid int, _ syscall.Signal) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

// userSignals: Windows has none.
var userSignals []os.Signal
