package clitest

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// peakRSSName is the name by which the test binary is the meter that
// PeakRSS runs commands under.
const peakRSSName = "idemkey-peakrss"

// PeakRSS runs c under a limit of asLimit bytes on its address space (none
// if 0) and returns its peak resident memory in bytes, with c.Run's error.
//
// A child's peak as wait4 reports it is not its own: Linux carries a
// process's peak across execve, and Go starts children with CLONE_VM, so a
// child of the test binary starts at the test binary's own peak, which is
// whatever the tests running beside it took. So c runs under a meter: the
// test binary started afresh by another name, a small process, which
// starts c, waits for it and writes c's peak to a pipe. c's exit code is
// the meter's (a signal is 128 plus its number).
func PeakRSS(c *exec.Cmd, asLimit uint64) (int64, error) {
	meter, err := exec.LookPath(peakRSSName)
	if err != nil {
		return 0, fmt.Errorf("the meter is not on PATH (is TestMain clitest.Main?): %w", err)
	}
	path := c.Path
	if c.Err != nil {
		return 0, c.Err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	c.Args = append([]string{peakRSSName, strconv.FormatUint(asLimit, 10), path}, c.Args[1:]...)
	c.Path = meter
	c.ExtraFiles = append([]*os.File{w}, c.ExtraFiles...)
	err = c.Run()
	w.Close()
	var peak int64
	if _, scanErr := fmt.Fscan(r, &peak); scanErr != nil {
		if err == nil {
			err = fmt.Errorf("the meter wrote no peak: %v", scanErr)
		}
		return 0, err
	}
	return peak, err
}

// peakRSSMain is the meter: its arguments are the address-space limit,
// the command's path and its arguments; file descriptor 3 takes the
// command's peak resident memory in bytes.
func peakRSSMain() {
	report := os.NewFile(3, "peak")
	if len(os.Args) < 3 || report == nil {
		fmt.Fprintln(os.Stderr, "usage: "+peakRSSName+" AS-LIMIT PATH [ARG...]")
		os.Exit(125)
	}
	limit, err := strconv.ParseUint(os.Args[1], 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, peakRSSName+":", err)
		os.Exit(125)
	}
	c := exec.Command(os.Args[2], os.Args[3:]...)
	c.Args[0] = os.Args[2]
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	c.ExtraFiles = nil
	if err := c.Start(); err != nil {
		fmt.Fprintln(os.Stderr, peakRSSName+":", err)
		os.Exit(125)
	}
	if limit > 0 {
		// Set on the running child: it has mapped a few MiB by then.
		lim := unix.Rlimit{Cur: limit, Max: limit}
		if err := unix.Prlimit(c.Process.Pid, unix.RLIMIT_AS, &lim, nil); err != nil {
			c.Process.Kill()
			fmt.Fprintln(os.Stderr, peakRSSName+": prlimit:", err)
			os.Exit(125)
		}
	}
	c.Wait()
	fmt.Fprintln(report, c.ProcessState.SysUsage().(*syscall.Rusage).Maxrss<<10)
	report.Close()
	ws := c.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		os.Exit(128 + int(ws.Signal()))
	}
	os.Exit(ws.ExitStatus())
}
