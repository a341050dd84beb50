package cmd

import (
	"os"
	"syscall"
)

// postStdoutClosedAtStart reports whether f (standard output) was closed when the
// program started: Go's runtime then opens /dev/null in its place, read
// and write, where a shell's >/dev/null opens it write-only. Writes to it
// succeed, so the closing is found only this way.
func postStdoutClosedAtStart(f *os.File) bool {
	var st, null syscall.Stat_t
	if syscall.Fstat(int(f.Fd()), &st) != nil || syscall.Stat(os.DevNull, &null) != nil {
		return false
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFCHR || st.Rdev != null.Rdev {
		return false
	}
	fl, _, errno := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), syscall.F_GETFL, 0)
	return errno == 0 && fl&syscall.O_ACCMODE == syscall.O_RDWR
}
