package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
)

// TrustError: a file or directory of the ledger that another user could
// have written, so its records cannot be trusted (see trustPath).
type TrustError struct {
	What  string      // "ledger file", "ledger directory", "lock directory", …
	Path  string      // the file or directory
	UID   int         // its owner
	Mode  fs.FileMode // its permission bits (fs.ModeSticky included)
	Why   string      // what is wrong, in words
	fix   string      // the hint
	Links int         // for a file with several hard links: how many
}

func (e *TrustError) Error() string {
	return fmt.Sprintf("refusing %s %s (owner %s, mode %s): %s", e.What, e.Path, ownerName(e.UID), modeOctal(e.Mode), e.Why)
}

// Hint implements the command line's hinter.
func (e *TrustError) Hint() string { return e.fix }

// ownerName is "alice (uid 1000)", or "uid 1000" for a uid without a name.
func ownerName(uid int) string {
	id := strconv.Itoa(uid)
	if u, err := user.LookupId(id); err == nil && u.Username != "" {
		return u.Username + " (uid " + id + ")"
	}
	return "uid " + id
}

// modeOctal is a mode's permission bits as chmod takes them: 0777, 1777.
func modeOctal(m fs.FileMode) string {
	n := uint32(m.Perm())
	if m&fs.ModeSticky != 0 {
		n |= 0o1000
	}
	if m&fs.ModeSetgid != 0 {
		n |= 0o2000
	}
	if m&fs.ModeSetuid != 0 {
		n |= 0o4000
	}
	return fmt.Sprintf("%04o", n)
}

// locate checks the ledger's path and readies its file: the directories
// on the way to it and every symbolic link it goes through must be ones
// no other user can change (trustPath), and so must the file itself, its
// -wal and -shm files and its lock directory (trustFiles). Unless
// opts.MustExist, a missing file is created (mode 0600, its missing
// directories 0700) after the first check, and everything is checked
// again. It returns the file's path, its symbolic links resolved (as
// given, if it has none): every name of one ledger has the same key
// locks, beside the real file.
func locate(path string, opts Options) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	real, err := trustPath(abs)
	if err != nil {
		return "", err
	}
	shown := real
	if real == abs {
		shown = path // the name given, in messages
	}
	dir := filepath.Dir(shown)
	_, err = os.Lstat(real)
	switch {
	case err == nil:
		if err := checkFS(dir, opts.FSType); err != nil {
			return "", err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return "", err
	case opts.MustExist:
		if err := checkFS(existingDir(dir), opts.FSType); err != nil {
			var re *RemoteFSError
			if errors.As(err, &re) {
				re.Dir = filepath.Dir(path) // where the ledger would be
			}
			return "", err
		}
		return "", &fs.PathError{Op: "stat", Path: path, Err: fs.ErrNotExist}
	default:
		if err := create(shown, opts); err != nil {
			return "", err
		}
		// Checked again: what was missing may have been made by another
		// process meanwhile (then it must be as trustworthy).
		if again, err := trustPath(abs); err != nil {
			return "", err
		} else if again != real {
			return "", fmt.Errorf("ledger %s: its path changed while it was being created", path)
		}
	}
	if err := trustFiles(real, shown); err != nil {
		return "", err
	}
	return shown, nil
}

// create makes a missing ledger file (mode 0600: SQLite gives its -wal
// and -shm files the database file's mode) and its missing directories
// (mode 0700), never through a symbolic link.
func create(path string, opts Options) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := checkFS(dir, opts.FSType); err != nil {
		return err
	}
	if err := checkLedgerDir(dir); err != nil {
		return err // before the file: a refused directory is left as it was
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil // another process made it: checked next
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// existingDir is dir, or its nearest ancestor that exists.
func existingDir(dir string) string {
	for {
		if _, err := os.Stat(dir); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			return dir
		}
		dir = up
	}
}

// OpenAppend opens the file at path for appending, creating it (mode
// 0600) if it is missing, under the ledger's rules of trust (see
// trustPath): every directory and symbolic link on its path is one no
// other user can change, its own directory is trusted and writable by no
// one else, and the file is trusted, writable by no one else, and not a
// symbolic link (never followed). what names it in errors ("log file").
func OpenAppend(path, what string) (*os.File, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	real, err := trustPath(abs)
	if err != nil {
		return nil, err
	}
	if err := trustAppend(real, what, nil); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(real, os.O_WRONLY|os.O_APPEND|os.O_CREATE|noFollow, 0o600)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = trustAppend(real, what, fi)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
