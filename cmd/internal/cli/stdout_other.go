//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package cli

func stdoutClosed() bool { return false }
