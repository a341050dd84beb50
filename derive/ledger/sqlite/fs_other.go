//go:build !linux

package sqlite

// checkFS has no statfs type to check outside Linux.
func checkFS(dir string, hook func(int64) int64) error {
	if hook != nil {
		if name, ok := remoteFSName(hook(0)); ok {
			return &RemoteFSError{Dir: dir, FS: name, Magic: hook(0)}
		}
	}
	return nil
}

// remoteFSName names the network and FUSE file systems a test's hook
// may report, by their statfs magic numbers.
func remoteFSName(t int64) (string, bool) {
	switch t {
	case 0x6969:
		return "NFS", true
	case 0x65735546:
		return "FUSE", true
	}
	return "", false
}

// mountedAlone is not checked outside Linux.
func mountedAlone(dir, file string) (bool, error) { return false, nil }
