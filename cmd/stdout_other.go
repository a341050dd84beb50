//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package cmd

func stdoutClosed() bool { return false }
