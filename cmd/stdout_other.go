//go:build !unix

package cmd

func stdoutClosed() bool { return false }
