package sqlite

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/idemkey/idemkey/derive/ledger"
)

// procStat is what HolderAlive reads of /proc/PID/stat (proc(5)).
type procStat struct {
	state byte   // field 3: R, S, D, Z, …
	pgrp  int    // field 5
	start uint64 // field 22: clock ticks after boot
}

// readStat reads /proc/PID/stat. The command's name (field 2, in
// parentheses) may hold spaces and parentheses: the fields are counted
// from the last ")".
func readStat(pid int) (procStat, error) {
	b, err := readProc("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, errors.New("malformed stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, errors.New("malformed stat")
	}
	pgrp, err1 := strconv.Atoi(f[2])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil {
		return procStat{}, errors.New("malformed stat")
	}
	return procStat{state: f[0][0], pgrp: pgrp, start: start}, nil
}

// readProc reads a small file of /proc (4 KiB at most) with plain system
// calls. os.ReadFile would register it with the runtime's network poller,
// whose set-up (epoll_create1, eventfd2, epoll_ctl) a replay, which opens
// no other file through package os, would pay for nothing.
func readProc(path string) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	b := make([]byte, 4096)
	n := 0
	for n < len(b) {
		m, err := syscall.Read(fd, b[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if m == 0 {
			return b[:n], nil
		}
		n += m
	}
	return nil, &os.PathError{Op: "read", Path: path, Err: errors.New("longer than 4 KiB")}
}

func bootID() string {
	b, err := readProc("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// identify returns this process's group, start time and boot id.
func identify(pid int) (pgid int, start uint64, boot string, ok bool) {
	st, err := readStat(pid)
	boot = bootID()
	if err != nil || boot == "" || strings.ContainsAny(boot, " \t\n") {
		return 0, 0, "", false
	}
	return st.pgrp, st.start, boot, true
}

// HolderAlive implements ledger.HolderCheck for records claimed on this
// machine: asked when a running record's kernel lock is free, it reports
// whether the record's holder is alive after all, its lock lost by
// accident (a command that closed the descriptor it inherited, a lock
// file removed by a cleaner). True when the holder was recorded on this
// host in this boot and
//
//   - the process with its pid runs and started when it did (a later
//     process reusing the pid started later), or
//   - a process that started after it is in its process group, when it
//     led one (its command's processes, as a shell's job is one group), or
//   - a process that started after it has the attempt's
//     IDEMPOTENCY_KEY and IDEMPOTENCY_ATTEMPT in its environment (the
//     step's command and what it started, whatever group they are in).
//
// Zombies are dead. A holder it cannot read back (another host, another
// boot, a record an older idemkey wrote) is not vouched for: its free
// lock says it is dead, as before.
func HolderAlive(rec *ledger.Record) bool {
	h, ok := parseHolder(rec.Holder)
	me := self()
	if !ok || !me.verifiable || h.host != me.host || h.boot != me.boot {
		return false
	}
	if st, err := readStat(h.pid); err == nil && st.state != 'Z' && st.start == h.start {
		return true
	}
	return stepAlive(h, rec, me.pid)
}

// stepAlive looks through /proc for a process of the holder's step (see
// HolderAlive) other than this one.
func stepAlive(h holderID, rec *ledger.Record, self int) bool {
	d, err := os.Open("/proc")
	if err != nil {
		return false
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return false
	}
	env := [][]byte{
		[]byte("IDEMPOTENCY_KEY=" + rec.Key + "\x00"),
		[]byte("IDEMPOTENCY_ATTEMPT=" + strconv.FormatInt(rec.Attempt, 10) + "\x00"),
	}
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid == self {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.state == 'Z' || st.start < h.start {
			continue
		}
		if h.pgid == h.pid && st.pgrp == h.pgid {
			return true
		}
		if hasEnv(pid, env) {
			return true
		}
	}
	return false
}

// hasEnv reports whether the initial environment of pid holds every one
// of want ("NAME=value\x00"). Another user's processes cannot be read,
// and are not the step's.
func hasEnv(pid int, want [][]byte) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	b = append([]byte{0}, b...)
	if len(b) > 0 && b[len(b)-1] != 0 {
		b = append(b, 0)
	}
	for _, w := range want {
		if !bytes.Contains(b, append([]byte{0}, w...)) {
			return false
		}
	}
	return true
}
