package sqlite

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// holderID: a holder is recorded in a running record (Record.Holder) as
//
//	HOST pid PID pgid PGID start TICKS boot BOOT-ID
//
// host and pid for the reader; where the system tells them (Linux), the
// process group, the process's start time (clock ticks after boot,
// /proc/PID/stat field 22) and the boot's id (/proc/sys/kernel/random/
// boot_id), so that HolderAlive can tell the process that claimed the
// record from a later one that reuses its pid. Elsewhere it is "HOST pid
// PID" and HolderAlive vouches for no one.
type holderID struct {
	host       string
	pid, pgid  int
	start      uint64
	boot       string
	verifiable bool // pgid, start and boot are known
}

func (h holderID) String() string {
	s := fmt.Sprintf("%s pid %d", h.host, h.pid)
	if h.verifiable {
		s += fmt.Sprintf(" pgid %d start %d boot %s", h.pgid, h.start, h.boot)
	}
	return s
}

// parseHolder reads a holder as String writes it; ok is false for any
// other text (a record an older idemkey wrote: "HOST pid PID").
func parseHolder(s string) (h holderID, ok bool) {
	f := strings.Fields(s)
	if len(f) != 9 || f[1] != "pid" || f[3] != "pgid" || f[5] != "start" || f[7] != "boot" || f[8] == "" {
		return h, false
	}
	var err1, err2, err3 error
	h.host, h.boot, h.verifiable = f[0], f[8], true
	h.pid, err1 = strconv.Atoi(f[2])
	h.pgid, err2 = strconv.Atoi(f[4])
	h.start, err3 = strconv.ParseUint(f[6], 10, 64)
	return h, err1 == nil && err2 == nil && err3 == nil && h.pid > 0 && h.pgid > 0
}

var self = sync.OnceValue(func() holderID {
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	host = strings.Join(strings.Fields(host), "-") // one word
	h := holderID{host: host, pid: os.Getpid()}
	h.pgid, h.start, h.boot, h.verifiable = identify(h.pid)
	return h
})

// Holder names this process in the records it claims (see holderID):
// every store's records carry it, for the reader; HolderAlive reads it
// back on this machine.
func Holder() string { return self().String() }
