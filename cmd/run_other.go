//go:build !linux

package cmd

// processTree returns pid (descendants are not looked for here).
func processTree(pid int) []int { return []int{pid} }

// inTerminalForeground is not checked here: signals are forwarded.
func inTerminalForeground() bool { return false }
