//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package cmd

import (
	"os"
	"syscall"
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
	var st, null syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil || syscall.Stat(os.DevNull, &null) != nil {
		return false
	}
	if st.Rdev != null.Rdev || st.Mode&syscall.S_IFMT != syscall.S_IFCHR {
		return false
	}
	if !rw {
		return true
	}
	fl, err := fcntl(fd, syscall.F_GETFL, 0)
	return err == nil && fl&syscall.O_ACCMODE == syscall.O_RDWR
}

func fcntl(fd, cmd, arg int) (int, error) {
	r, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), uintptr(cmd), uintptr(arg))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}
