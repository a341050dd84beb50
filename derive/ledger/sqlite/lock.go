package sqlite

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// RemoteFSError: the ledger's directory is on a network or FUSE file
// system.
type RemoteFSError struct {
	Dir   string
	FS    string
	Magic int64
}

func (e *RemoteFSError) Error() string {
	return fmt.Sprintf("ledger directory %s is on a %s file system (statfs type %#x): SQLite's locking is not reliable there", e.Dir, e.FS, e.Magic)
}

// Hint implements the command line's hinter.
func (e *RemoteFSError) Hint() string {
	return "put the ledger on a local disk (--ledger PATH or IDEMKEY_LEDGER), or use a shared store (postgres://, redis://)"
}

// ErrLocked: another process holds the key's lock.
var ErrLocked = errors.New("the key is locked by another process")

// LockDir is the directory of the per-key lock files: the database's path
// with ".locks" appended.
func (s *Store) LockDir() string { return s.path + ".locks" }

// LockPath is the lock file of key.
func (s *Store) LockPath(key string) string {
	h := sha256.Sum256([]byte(key))
	return filepath.Join(s.LockDir(), hex.EncodeToString(h[:16])+".lock")
}

// LockKey takes the key's exclusive kernel lock (flock) without waiting,
// or returns ErrLocked. The lock belongs to the open file description: a
// child process that inherits the returned file keeps the key locked
// until it exits too, whatever happens to this process. A lock file may
// have been removed (by gc) and created again between open and lock, so
// the lock counts only if the path still names the locked file.
func (s *Store) LockKey(key string) (*os.File, error) {
	if err := os.MkdirAll(s.LockDir(), 0o700); err != nil {
		return nil, err
	}
	path := s.LockPath(key)
	for range 100 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600) // close-on-exec, as os opens every file
		if err != nil {
			return nil, err
		}
		if err := lockNB(f); err != nil {
			f.Close()
			if errors.Is(err, ErrLocked) {
				return nil, ErrLocked
			}
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		same, err := samePath(f, path)
		if err != nil {
			CloseLock(f)
			return nil, err
		}
		if same {
			return f, nil
		}
		CloseLock(f) // removed meanwhile: lock the new file
	}
	return nil, fmt.Errorf("lock %s: the lock file keeps being replaced", path)
}

// CloseLock unlocks and closes a locked file (a key's from LockKey, or
// the writer queue's) that no command was given, so that the lock is free
// when it returns. Closing alone is not enough: the lock belongs to the
// open file, not to a descriptor, and a child that another goroutine is
// starting holds a copy of every descriptor from its fork until its exec
// closes those marked close-on-exec. A lock only closed would stay held
// by such a child for as long as it takes to get there (tens of
// milliseconds on a loaded machine): the key's next claim in this process
// would find it busy, its next write the writer queue taken. A file given to a
// command (ChildFiles) must be closed, not unlocked: the command's copy
// keeps the key locked.
func CloseLock(f *os.File) error {
	unlock(f)
	return f.Close()
}

// RemoveLock removes the key's lock file if no one holds it: it is locked
// first, then unlinked while locked, so that a process that opened the
// old file finds, after locking it, that the path names another file.
func (s *Store) RemoveLock(key string) error {
	f, err := s.LockKey(key)
	if err != nil {
		if errors.Is(err, ErrLocked) {
			return nil
		}
		return err
	}
	defer CloseLock(f)
	if err := os.Remove(f.Name()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func samePath(f *os.File, path string) (bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	pi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(fi, pi), nil
}

// Relock is for a holder that keeps the key's lock for a while (its
// renewal loop): if the lock path no longer names held (the lock file, or
// the whole lock directory, was removed: a temporary-file cleaner, rm -rf
// ledger.db.locks), it locks the key's new file and returns it, to be kept
// with held until the outcome is recorded; nil if held is still the
// key's lock file. ErrLocked: another process has locked the new file
// meanwhile (it found the running record's holder alive, see HolderAlive,
// and lets it go). Until it is locked again, only the recorded holder
// keeps the key busy.
func (s *Store) Relock(key string, held *os.File) (*os.File, error) {
	same, err := samePath(held, s.LockPath(key))
	if err != nil || same {
		return nil, err
	}
	return s.LockKey(key)
}
