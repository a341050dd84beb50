//go:build !unix

package proc

import (
	"os"
	"os/exec"
)

func OwnGroup(*exec.Cmd)  {}
func KillGroup(*exec.Cmd) {}

var StopSignals = []os.Signal{os.Interrupt}
