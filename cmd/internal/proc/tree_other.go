//go:build !linux

package proc

import "os"

// ProcessTree returns pid (descendants are not looked for here).
func ProcessTree(pid int) []int { return []int{pid} }

// InTerminalForeground is not checked here: signals are forwarded.
func InTerminalForeground() bool { return false }

// PipeBuffered is not looked for here: what a pipe holds when idemkey
// stops reading it is not passed on.
func PipeBuffered(*os.File) int { return 0 }
