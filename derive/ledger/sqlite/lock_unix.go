//go:build unix

package sqlite

import (
	"errors"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// lockNB takes f's exclusive flock without waiting (ErrLocked if another
// open file description holds it).
func lockNB(f *os.File) error {
	err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return ErrLocked
	}
	return err
}

// unlock releases f's lock, on every descriptor of its open file.
func unlock(f *os.File) { flock(f, syscall.LOCK_UN) }

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// lockWait takes f's exclusive flock, waiting until deadline; ok is false
// when it ran out. The kernel wakes a waiter as soon as the holder lets
// go. A wait that runs out is abandoned, not cancelled (flock cannot be):
// its goroutine owns f from then on, and closes it, releasing the lock at
// once, if it ever gets it.
func lockWait(f *os.File, deadline time.Time) (ok bool, err error) {
	if err := lockNB(f); err != ErrLocked {
		return err == nil, err
	}
	const waiting, abandoned, done = 0, 1, 2
	var state atomic.Int32
	got := make(chan error, 1)
	go func() {
		err := flock(f, syscall.LOCK_EX)
		if state.CompareAndSwap(waiting, done) {
			got <- err
		} else {
			f.Close() // abandoned: nobody will use the lock
		}
	}()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case err := <-got:
		return err == nil, err
	case <-t.C:
		if state.CompareAndSwap(waiting, abandoned) {
			return false, nil
		}
		err := <-got // it got there first
		return err == nil, err
	}
}

// LockFD is the descriptor at which a command is given its key's lock
// (ChildFiles): high, so that a command that reuses the low ones keeps it
// (a shell script's "exec 3>script.log" closed the lock when it was fd 3,
// and with it the key's liveness), and not one a script names by habit (9
// and 200 in flock(1)'s idioms). A command must not close it, nor every
// descriptor it inherited: if it does, HolderAlive still finds the step's
// processes (by their environment) as long as they run.
const LockFD = 100

var (
	inheritedMu sync.Mutex
	inherited   = map[int]*os.File{} // never collected: a collected File closes its descriptor
)

// ChildFiles returns the extra files (os/exec.Cmd.ExtraFiles) that give a
// child process the key's lock at fd, LockFD or the first number above it
// that this process does not pass on already, while every descriptor
// this process inherited without close-on-exec (a make jobserver's pipe,
// a descriptor a script opened for its steps) keeps its number in the
// child, as it would without idemkey.
func ChildFiles(lock *os.File) (files []*os.File, fd int) {
	inheritedMu.Lock()
	defer inheritedMu.Unlock()
	for fd = 3; ; fd++ {
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		passed := err == nil && flags&unix.FD_CLOEXEC == 0
		if fd >= LockFD && !passed {
			return append(files, lock), fd
		}
		if !passed {
			files = append(files, nil) // closed in the child (close-on-exec anyway)
			continue
		}
		f := inherited[fd]
		if f == nil {
			f = os.NewFile(uintptr(fd), "inherited descriptor "+strconv.Itoa(fd))
			inherited[fd] = f
		}
		files = append(files, f)
	}
}
