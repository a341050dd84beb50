//go:build !unix

package sqlite

import (
	"errors"
	"os"
)

// lockNB: this system has no flock; the embedded ledger's liveness needs it.
func lockNB(*os.File) error {
	return errors.New("per-key kernel locks (flock) are not available on this system")
}
