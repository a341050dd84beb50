//go:build unix

package cmd

import "syscall"

// signalPid sends sig to the process pid.
func signalPid(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }
