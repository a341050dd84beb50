//go:build linux

package input

import (
	"os"
	"syscall"
)

// mapFile maps size bytes of the regular file f read-only into memory,
// with every page populated at once. ok is false when the mapping fails;
// the caller then reads the file instead.
func mapFile(f *os.File, size int64) (data []byte, unmap func(), ok bool) {
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_PRIVATE|syscall.MAP_POPULATE)
	if err != nil {
		return nil, nil, false
	}
	return b, func() { syscall.Munmap(b) }, true
}
