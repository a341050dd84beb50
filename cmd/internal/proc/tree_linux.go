// Package proc starts, signals and reaps the processes idemkey runs: run's
// command, conform's implementation (under a reaper on Linux), the tree
// of processes a command left behind, and the probe of a ledger's lock.
package proc

import (
	"os"

	"golang.org/x/sys/unix"
)

// ProcessTree returns pid and its descendants, as /proc shows them now.
func ProcessTree(pid int) []int {
	children := map[int][]int{}
	for _, p := range listProcesses() {
		children[p.ppid] = append(children[p.ppid], p.pid)
	}
	tree := []int{pid}
	for i := 0; i < len(tree); i++ {
		tree = append(tree, children[tree[i]]...)
	}
	return tree
}

// InTerminalForeground reports whether this process's group is the
// foreground group of its controlling terminal: then the terminal's
// signals (^C, ^\, hang-up) reach the whole group, the command included.
func InTerminalForeground() bool {
	fd, err := unix.Open("/dev/tty", unix.O_RDONLY|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	pgrp, err := unix.IoctlGetUint32(fd, unix.TIOCGPGRP) // a pid_t: 32 bits
	return err == nil && int(pgrp) == unix.Getpgrp()
}

// PipeBuffered returns how many bytes the pipe r holds, unread.
func PipeBuffered(r *os.File) int {
	rc, err := r.SyscallConn()
	if err != nil {
		return 0
	}
	var n uint32 // an int: 32 bits
	var ierr error
	if rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetUint32(int(fd), unix.TIOCINQ) }) != nil || ierr != nil {
		return 0
	}
	return int(n)
}
