//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package cli

import (
	"os"

	"golang.org/x/sys/unix"
)

// stdoutClosed reports whether standard output was closed when the
// process started. The Go runtime then opens /dev/null read-write in its
// place, and writes to it succeed: a result would be lost without a word.
// A standard output that is /dev/null open read-write is taken for that
// substitute, unless standard input is /dev/null too: a daemon, Node's
// stdio "ignore" and Python's DEVNULL null the streams they do not want,
// standard input among them, and a shell's `>/dev/null` opens it
// write-only. (Such a launcher that nulls standard output alone, read-
// write, cannot be told from `>&-`.)
func stdoutClosed() bool {
	return isDevNull(1, true) && !isDevNull(0, false)
}

// isDevNull reports whether fd is /dev/null (open read-write, if rw).
func isDevNull(fd int, rw bool) bool {
	var st, null unix.Stat_t
	if unix.Fstat(fd, &st) != nil || unix.Stat(os.DevNull, &null) != nil {
		return false
	}
	if st.Rdev != null.Rdev || st.Mode&unix.S_IFMT != unix.S_IFCHR {
		return false
	}
	if !rw {
		return true
	}
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	return err == nil && fl&unix.O_ACCMODE == unix.O_RDWR
}
