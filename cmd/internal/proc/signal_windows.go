package proc

import (
	"os"
	"syscall"
)

// SignalPid stops the process pid: Windows has no signals to forward, so
// every signal ends it.
func SignalPid(pid int, _ syscall.Signal) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

// UserSignals: Windows has none.
var UserSignals []os.Signal
