//go:build !linux

package cmd

import "os"

// processTree returns pid (descendants are not looked for here).
func processTree(pid int) []int { return []int{pid} }

// inheritedFiles is not looked for here: the key's lock is descriptor 3.
func inheritedFiles() []*os.File { return nil }

// inTerminalForeground is not checked here: signals are forwarded.
func inTerminalForeground() bool { return false }

// pipeBuffered is not looked for here: what a pipe holds when idemkey
// stops reading it is not passed on.
func pipeBuffered(*os.File) int { return 0 }
