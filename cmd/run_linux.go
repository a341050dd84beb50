package cmd

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

// processTree returns pid and its descendants, as /proc shows them now.
func processTree(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return []int{pid}
	}
	children := map[int][]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(string(f[1])); err == nil {
			children[pp] = append(children[pp], p)
		}
	}
	tree := []int{pid}
	for i := 0; i < len(tree); i++ {
		tree = append(tree, children[tree[i]]...)
	}
	return tree
}

// inTerminalForeground reports whether this process's group is the
// foreground group of its controlling terminal: then the terminal's
// signals (^C, ^\, hang-up) reach the whole group, the command included.
func inTerminalForeground() bool {
	fd, err := syscall.Open("/dev/tty", syscall.O_RDONLY|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer syscall.Close(fd)
	var pgrp int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCGPGRP, uintptr(unsafe.Pointer(&pgrp))); e != 0 {
		return false
	}
	return int(pgrp) == syscall.Getpgrp()
}

// inheritedFiles returns the descriptors from 3 up that idemkey inherited
// from its parent (open without close-on-exec, so not idemkey's own), up
// to the first one that is not: the command gets them at the same
// numbers, as it would without idemkey ("3>log"), and the key's lock goes
// in the first free place after them.
func inheritedFiles() []*os.File {
	var fs []*os.File
	for fd := 3; ; fd++ {
		flags, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFD, 0)
		if e != 0 || flags&syscall.FD_CLOEXEC != 0 {
			return fs
		}
		fs = append(fs, os.NewFile(uintptr(fd), "inherited descriptor "+strconv.Itoa(fd)))
	}
}

// pipeBuffered returns how many bytes the pipe r holds, unread.
func pipeBuffered(r *os.File) int {
	rc, err := r.SyscallConn()
	if err != nil {
		return 0
	}
	var n int32
	var e syscall.Errno
	if rc.Control(func(fd uintptr) {
		_, _, e = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n)))
	}) != nil || e != 0 {
		return 0
	}
	return int(n)
}
