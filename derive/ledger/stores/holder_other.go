//go:build !unix

package stores

import "os"

// processExists reports whether the process pid exists.
func processExists(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
