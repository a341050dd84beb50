package stores

import (
	"os"
	"strconv"
	"strings"
)

// HolderGone reports whether a recorded holder ("HOST pid N …", as Holder
// writes it) is a process of this host that no longer runs (a pid reused
// since reads as running: the error is on the side of naming it).
func HolderGone(holder string) bool {
	f := strings.Fields(holder)
	if len(f) < 3 || f[1] != "pid" {
		return false
	}
	host, _ := os.Hostname()
	pid, err := strconv.Atoi(f[2])
	if err != nil || pid <= 0 || f[0] != strings.Join(strings.Fields(host), "-") {
		return false
	}
	return !processExists(pid)
}
