//go:build !linux

package input

import "os"

// mapFile does not map files on this system: the caller reads them.
func mapFile(f *os.File, size int64) (data []byte, unmap func(), ok bool) {
	return nil, nil, false
}
