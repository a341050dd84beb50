//go:build unix

package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

const noFollow = syscall.O_NOFOLLOW

// The ledger's path is trusted as ssh trusts a key file (OpenSSH's
// safe_path, StrictModes), so that another local user cannot plant a
// step's outcome (a succeeded record the real step would be replayed
// from), nor make this user's idemkey, root's above all, turn a file of
// theirs into a database or create files where a symbolic link of theirs
// points. With "trusted" meaning owned by the running user or by root:
//
//   - every directory the path goes through is trusted; one that others
//     can write (group or world) is passed only if it has the sticky bit
//     (as /tmp does) and the entry taken in it is trusted (others can
//     neither rename nor remove it);
//   - every symbolic link followed is trusted, in a directory as above;
//   - the ledger's own directory is trusted and writable by no one else,
//     sticky or not: its -wal, -shm and .locks entries are created later,
//     and another user could make them first;
//   - the ledger file, its -wal and -shm files, its .locks directory and
//     its .outputs directory (large outputs, replayed from there), if
//     they exist, are trusted, writable by no one else, and not
//     symbolic links; the file has one hard link (a second name would be
//     a second set of key locks and a second -wal) and is not a mount
//     point of its own (a bind mount of the file alone: the same).

// trustPath resolves the absolute path abs component by component, as
// the kernel does, checking every directory it goes through and every
// symbolic link it follows, and returns the real path (the part that
// does not exist yet appended as it is).
func trustPath(abs string) (string, error) {
	todo := strings.Split(abs, "/")
	cur := "/"
	curFI, err := os.Lstat(cur)
	if err != nil {
		return "", err
	}
	for links := 0; len(todo) > 0; {
		name := todo[0]
		todo = todo[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			if curFI, err = os.Lstat(cur); err != nil {
				return "", err
			}
			continue
		}
		if !curFI.IsDir() {
			return "", &fs.PathError{Op: "open", Path: cur, Err: syscall.ENOTDIR}
		}
		next := filepath.Join(cur, name)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			// To be created, beneath cur.
			if err := checkDir(cur, curFI, nil); err != nil {
				return "", err
			}
			for _, n := range todo {
				if n == ".." {
					return "", &fs.PathError{Op: "open", Path: abs, Err: syscall.ENOENT}
				}
			}
			return filepath.Join(append([]string{next}, todo...)...), nil
		}
		if err != nil {
			return "", err
		}
		if err := checkDir(cur, curFI, fi); err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur, curFI = next, fi
			continue
		}
		if links++; links > 40 {
			return "", &fs.PathError{Op: "open", Path: abs, Err: syscall.ELOOP}
		}
		if uid := ownerOf(fi); !trusted(uid) {
			return "", &TrustError{What: "symbolic link", Path: next, UID: uid, Mode: fi.Mode(),
				Why: "it is on the ledger's path and belongs to another user, who could point it anywhere",
				fix: "give the path it points to (if you trust it), or make a link of your own"}
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			cur = "/"
			if curFI, err = os.Lstat(cur); err != nil {
				return "", err
			}
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return cur, nil
}

// checkDir checks a directory the ledger's path goes through, taking
// entry (nil: an entry still to be created).
func checkDir(dir string, fi, entry fs.FileInfo) error {
	uid := ownerOf(fi)
	if !trusted(uid) {
		return &TrustError{What: "directory", Path: dir, UID: uid, Mode: fi.Mode(),
			Why: "it is on the ledger's path and belongs to another user, who could replace what it holds",
			fix: "put the ledger under a directory of yours (--ledger PATH, IDEMKEY_LEDGER)"}
	}
	if fi.Mode().Perm()&0o022 == 0 {
		return nil
	}
	if fi.Mode()&fs.ModeSticky != 0 {
		if entry == nil {
			return nil // made by this process, then checked again
		}
		euid := ownerOf(entry)
		if trusted(euid) {
			return nil
		}
		return &TrustError{What: kindOf(entry), Path: filepath.Join(dir, entry.Name()), UID: euid, Mode: entry.Mode(),
			Why: fmt.Sprintf("it is on the ledger's path and belongs to another user, in %s, which others can write (mode %s)", dir, modeOctal(fi.Mode())),
			fix: "put the ledger on a path of your own (--ledger PATH, IDEMKEY_LEDGER)"}
	}
	return &TrustError{What: "directory", Path: dir, UID: uid, Mode: fi.Mode(),
		Why: "it is on the ledger's path and others can write it: they could replace what it holds",
		fix: "chmod go-w " + dir + " (or chmod +t, for a shared directory such as /tmp), or put the ledger elsewhere"}
}

// trustFiles checks the ledger's directory and the files of the ledger
// at real (shown as shown): see the rules above.
func trustFiles(real, shown string) error {
	dir := filepath.Dir(real)
	if err := checkLedgerDir(dir); err != nil {
		return err
	}
	fi, err := os.Lstat(real)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return &fs.PathError{Op: "open", Path: shown, Err: syscall.EISDIR}
	}
	if err := checkFile("ledger file", real, fi); err != nil {
		return err
	}
	if n := linksOf(fi); n > 1 {
		return &TrustError{What: "ledger file", Path: real, UID: ownerOf(fi), Mode: fi.Mode(), Links: n,
			Why: fmt.Sprintf("it has %d hard links: each name would have its own key locks and its own -wal file, and a step could run twice", n),
			fix: "remove the other names (find / -xdev -samefile " + real + "); copy a ledger, never link it"}
	}
	if mounted, err := mountedAlone(dir, real); err != nil {
		return err
	} else if mounted {
		return &TrustError{What: "ledger file", Path: real, UID: ownerOf(fi), Mode: fi.Mode(),
			Why: "it is a mount point of its own (a bind mount of the file alone): the file's other name has other key locks and another -wal file",
			fix: "mount the ledger's directory instead of the file"}
	}
	for _, sib := range []struct{ what, path string }{
		{"ledger -wal file", real + "-wal"}, {"ledger -shm file", real + "-shm"}, {"lock directory", real + ".locks"},
		{"output directory", real + ".outputs"},
	} {
		fi, err := os.Lstat(sib.path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if err := checkFile(sib.what, sib.path, fi); err != nil {
			return err
		}
	}
	return nil
}

// checkLedgerDir checks the ledger's own directory: trusted, and
// writable by no one else. It is checked before a missing ledger is
// created there, so that a refused directory is left as it was.
func checkLedgerDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if uid := ownerOf(fi); !trusted(uid) || fi.Mode().Perm()&0o022 != 0 {
		return &TrustError{What: "ledger directory", Path: dir, UID: uid, Mode: fi.Mode(),
			Why: "others can write it: they could replace the ledger, or make its -wal, -shm or lock files first",
			fix: dirFix(dir, uid)}
	}
	return nil
}

// checkFile checks one of the ledger's own files (or its lock
// directory): trusted, writable by no one else, not a symbolic link.
func checkFile(what, path string, fi fs.FileInfo) error {
	uid := ownerOf(fi)
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return &TrustError{What: what, Path: path, UID: uid, Mode: fi.Mode(),
			Why: "it is a symbolic link, which SQLite or idemkey would follow",
			fix: "remove it: rm " + path}
	case !trusted(uid):
		return &TrustError{What: what, Path: path, UID: uid, Mode: fi.Mode(),
			Why: "it belongs to another user, who could have written its records",
			fix: ownerFix(path)}
	case fi.Mode().Perm()&0o022 != 0:
		return &TrustError{What: what, Path: path, UID: uid, Mode: fi.Mode(),
			Why: "others can write it: they could have written its records",
			fix: "chmod go-w " + path + " (if you trust what it holds)"}
	}
	return nil
}

func ownerFix(path string) string {
	return fmt.Sprintf("if you trust what it holds, make it yours (as root: chown %s %s); otherwise use a ledger of your own (--ledger PATH)", me(), path)
}

func dirFix(dir string, uid int) string {
	if !trusted(uid) {
		return ownerFix(dir)
	}
	return "chmod go-w " + dir + ", or put the ledger in a directory only you can write (--ledger PATH)"
}

// me is the running user's name, or uid.
func me() string {
	n := ownerName(os.Geteuid())
	if i := strings.Index(n, " (uid "); i >= 0 {
		return n[:i]
	}
	return strings.TrimPrefix(n, "uid ")
}

// trusted reports whether a file of uid's may be trusted: the running
// user's, or root's.
func trusted(uid int) bool { return uid == 0 || uid == os.Geteuid() }

// kindOf names what fi is, in an error.
func kindOf(fi fs.FileInfo) string {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return "symbolic link"
	case fi.IsDir():
		return "directory"
	}
	return "file"
}

func ownerOf(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

func linksOf(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Nlink)
	}
	return 1
}

// trustAppend checks the directory of a file OpenAppend opens and, once
// open (fi), the file itself.
func trustAppend(real, what string, fi fs.FileInfo) error {
	dir := filepath.Dir(real)
	dfi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if uid := ownerOf(dfi); !trusted(uid) || dfi.Mode().Perm()&0o022 != 0 {
		return &TrustError{What: what + "'s directory", Path: dir, UID: uid, Mode: dfi.Mode(),
			Why: "others can write it: they could replace the " + what + " with a file or link of theirs",
			fix: appendFix(dir, what, uid)}
	}
	if fi == nil {
		return nil
	}
	return checkFile(what, real, fi)
}

func appendFix(dir, what string, uid int) string {
	if !trusted(uid) {
		return ownerFix(dir)
	}
	return "chmod go-w " + dir + ", or put the " + what + " in a directory only you can write"
}
