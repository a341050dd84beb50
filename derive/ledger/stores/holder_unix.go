//go:build unix

package stores

import "syscall"

// processExists reports whether the process pid exists (a zombie counts,
// until it is reaped); a process of another user counts too.
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
