//go:build !linux

package proc

import "os"

// ProcessTree returns pid (descendants are not looked for here).
func ProcessTree(pid int) []int { return []int{pid} }

// InheritedFiles is not looked for here: the key's lock is descriptor 3.
func InheritedFiles() []*os.File { return nil }

// InTerminalForeground is not checked here: signals are forwarded.
func InTerminalForeground() bool { return false }

// PipeBuffered is not looked for here: what a pipe holds when idemkey
// stops reading it is not passed on.
func PipeBuffered(*os.File) int { return 0 }
