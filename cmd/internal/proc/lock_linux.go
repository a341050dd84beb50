//go:build linux

package proc

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// LockHeld reports whether a process holds the flock of the lock file at
// path, without taking it (taking it, even for a moment, would make a run
// of the key that starts then read it as busy): /proc/locks lists every
// flock with its file's inode (proc(5)). The inode alone is compared (a
// device number may read differently there, as on btrfs), so a lock on
// another file system's file of the same inode counts as held: the error
// is on the side of a live holder. known is false when /proc/locks cannot
// be read.
func LockHeld(path string) (held, known bool) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, true // no lock file: no one holds it
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if err != nil || !ok {
		return false, false
	}
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		return false, false
	}
	ino := ":" + strconv.FormatUint(st.Ino, 10)
	for _, line := range strings.Split(string(data), "\n") {
		// "1: FLOCK  ADVISORY  WRITE 4711 fd:01:1234567 0 EOF"; a waiter's
		// line has "->" after the number.
		f := strings.Fields(line)
		if len(f) >= 6 && f[1] == "FLOCK" && strings.HasSuffix(f[5], ino) && strings.Count(f[5], ":") == 2 {
			return true, true
		}
	}
	return false, true
}
