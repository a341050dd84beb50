package sqlite

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// remoteFS: file systems on which SQLite's locking (and flock) cannot be trusted:
// network and FUSE file systems, by their statfs magic numbers. An array,
// not a map: it is static data, where a map would be built by every
// idemkey process's initialisation, a `key` call's too.
var remoteFS = [...]struct {
	magic int64
	name  string
}{
	{0x6969, "NFS"},
	{0x517b, "SMB"},
	{0xff534d42, "CIFS"},
	{0xfe534d42, "SMB2"},
	{0x564c, "NCP"},
	{0x65735546, "FUSE"},
	{0x73757245, "Coda"},
	{0x5346414f, "AFS"},
	{0x6b414653, "AFS (kAFS)"},
	{0x00c36400, "Ceph"},
	{0x01021997, "9P"},
	{0x01161970, "GFS2"},
	{0x7461636f, "OCFS2"},
	{0x0bd00bd0, "Lustre"},
	{0x47504653, "GPFS"},
	{0x013111a8, "IBRIX"},
	{0x19830326, "FhGFS (BeeGFS)"},
	{0xbacbacbc, "VxFS cluster"},
}

// remoteFSName returns the name of the network or FUSE file system whose
// statfs magic number is t.
func remoteFSName(t int64) (string, bool) {
	for _, fs := range remoteFS {
		if fs.magic == t {
			return fs.name, true
		}
	}
	return "", false
}

// checkFS refuses a directory on a network or FUSE file system.
func checkFS(dir string, hook func(int64) int64) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", dir, err)
	}
	t := int64(st.Type)
	if hook != nil {
		t = hook(t)
	}
	if name, ok := remoteFSName(t); ok {
		return &RemoteFSError{Dir: dir, FS: name, Magic: t}
	}
	return nil
}

// mountedAlone reports whether file is a mount point of its own (a bind
// mount of the file alone): its mount is not its directory's. Kernels
// without statx's mount id (before Linux 5.8) are not asked.
func mountedAlone(dir, file string) (bool, error) {
	var d, f unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, dir, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &d); err != nil {
		return false, nil
	}
	if err := unix.Statx(unix.AT_FDCWD, file, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &f); err != nil {
		return false, nil
	}
	if d.Mask&f.Mask&unix.STATX_MNT_ID == 0 {
		return false, nil
	}
	return d.Mnt_id != f.Mnt_id, nil
}
