//go:build unix

package cmd

import (
	"os"
	"syscall"
)

// stdoutClosed reports whether standard output was closed when the
// process started. The Go runtime then opens /dev/null read-write in its
// place, and writes to it succeed: a result would be lost without a word.
// A descriptor that is /dev/null, open read-write, and not shared with
// standard input is taken for that substitute. (A daemon gives all three
// descriptors one /dev/null opened read-write; a shell's `>/dev/null`
// opens it write-only; both are left alone.)
func stdoutClosed() bool {
	if !isDevNullRW(1) {
		return false
	}
	if !isDevNullRW(0) {
		return true
	}
	// Both are: the same open file (a daemon) shares its status flags.
	return !sameOpenFile(0, 1)
}

func isDevNullRW(fd int) bool {
	var st, null syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil || syscall.Stat(os.DevNull, &null) != nil {
		return false
	}
	if st.Rdev != null.Rdev || st.Mode&syscall.S_IFMT != syscall.S_IFCHR {
		return false
	}
	fl, err := fcntl(fd, syscall.F_GETFL, 0)
	return err == nil && fl&syscall.O_ACCMODE == syscall.O_RDWR
}

// sameOpenFile reports whether two descriptors share one open file
// description: a status flag set through one shows through the other.
func sameOpenFile(a, b int) bool {
	fa, err := fcntl(a, syscall.F_GETFL, 0)
	if err != nil {
		return false
	}
	fb, err := fcntl(b, syscall.F_GETFL, 0)
	if err != nil {
		return false
	}
	if fa&syscall.O_NONBLOCK != fb&syscall.O_NONBLOCK {
		return false
	}
	if _, err := fcntl(a, syscall.F_SETFL, fa^syscall.O_NONBLOCK); err != nil {
		return false
	}
	fb2, err := fcntl(b, syscall.F_GETFL, 0)
	_, _ = fcntl(a, syscall.F_SETFL, fa)
	return err == nil && fb2&syscall.O_NONBLOCK != fb&syscall.O_NONBLOCK
}

func fcntl(fd, cmd, arg int) (int, error) {
	r, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), uintptr(cmd), uintptr(arg))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}
