//go:build !linux

package sqlite

// checkFS has no statfs type to check outside Linux.
func checkFS(dir string, hook func(int64) int64) error {
	if hook != nil {
		if name, ok := remoteFS[hook(0)]; ok {
			return &RemoteFSError{Dir: dir, FS: name, Magic: hook(0)}
		}
	}
	return nil
}

var remoteFS = map[int64]string{0x6969: "NFS", 0x65735546: "FUSE"}

// mountedAlone is not checked outside Linux.
func mountedAlone(dir, file string) (bool, error) { return false, nil }
