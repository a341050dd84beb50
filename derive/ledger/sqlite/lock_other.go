//go:build !unix

package sqlite

import (
	"errors"
	"os"
	"time"
)

// lockNB: this system has no flock; the embedded ledger's liveness needs it.
func lockNB(*os.File) error {
	return errors.New("per-key kernel locks (flock) are not available on this system")
}

// unlock: without flock there is no lock to release.
func unlock(*os.File) {}

// lockWait: without flock, writers are not queued (SQLite's busy handler
// alone orders them).
func lockWait(*os.File, time.Time) (bool, error) { return false, nil }

// LockFD: see the Unix version; without flock there is no lock to pass.
const LockFD = 100

// ChildFiles passes the lock as the first extra file.
func ChildFiles(lock *os.File) ([]*os.File, int) { return []*os.File{lock}, 3 }
