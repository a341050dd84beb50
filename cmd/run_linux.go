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
