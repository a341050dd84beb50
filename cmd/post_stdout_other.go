//go:build !linux

package cmd

import "os"

// postStdoutClosedAtStart is known on Linux only (see post_stdout_linux.go).
func postStdoutClosedAtStart(*os.File) bool { return false }
