//go:build !linux

package sqlite

import "github.com/idemkey/idemkey/derive/ledger"

// identify: this system does not tell a process's start time here.
func identify(int) (pgid int, start uint64, boot string, ok bool) { return 0, 0, "", false }

// HolderAlive vouches for no one where a process's start time cannot be
// read: the kernel lock alone says whether a holder lives.
func HolderAlive(*ledger.Record) bool { return false }
