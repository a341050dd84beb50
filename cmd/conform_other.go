//go:build !unix

package cmd

import (
	"os"
	"os/exec"
)

func ownGroup(*exec.Cmd)  {}
func killGroup(*exec.Cmd) {}

var conformSignals = []os.Signal{os.Interrupt}
