//go:build unix

package sqlite

import (
	"errors"
	"os"
	"sync/atomic"
	"syscall"
	"time"
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
