//go:build unix

package sqlite

import (
	"errors"
	"os"
	"syscall"
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
