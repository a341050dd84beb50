//go:build !linux

package cmd

import "os"

// closedAtStart is known on Linux only (see post_stdout_linux.go).
func closedAtStart(*os.File) bool { return false }
