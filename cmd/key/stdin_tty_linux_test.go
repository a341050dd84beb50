package key_test

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair: the controlling side, which a test
// writes what a user types to, and the terminal idemkey reads.
func openPTY(t *testing.T) (ptm, pts *os.File) {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		ptm.Close()
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetUint32(int(ptm.Fd()), unix.TIOCGPTN)
	if err != nil {
		ptm.Close()
		t.Skipf("ptsname: %v", err)
	}
	pts, err = os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		ptm.Close()
		t.Skipf("open the terminal: %v", err)
	}
	t.Cleanup(func() { pts.Close(); ptm.Close() })
	return ptm, pts
}

// TestKeyStdinTerminalSaysSo: with standard input a terminal, key, key
// --batch, canon, check and diff said nothing while they waited for the
// end of the input (a user who gave no file, or typed a document and
// Enter, saw a silent command). They now say on standard error that they
// read standard input and how to end it; the result on standard output is
// unchanged, and nothing is said when standard input is not a terminal.
func TestKeyStdinTerminalSaysSo(t *testing.T) {
	t.Parallel()
	const note = "idemkey: reading standard input (a terminal): end it with Ctrl-D, or give a file name\n"
	for _, tc := range []struct {
		args  []string
		want  string
		input string
	}{
		{[]string{"check"}, "", `{"task":"t1","tool":"pay","args":[1],"key":"7f908faef5e99fd2dd1e8ae26f7eab257a2d14cf67f3e424d5e58f886999314c"}`},
		{[]string{"key", "--task", "t", "--tool", "x"}, "282678e86c451559d21b6943da3c847abf4fb419c0bc2a2b289d8a30e3344845\n", ""},
		{[]string{"key", "--task", "t", "--tool", "x", "-"}, "282678e86c451559d21b6943da3c847abf4fb419c0bc2a2b289d8a30e3344845\n", ""},
		{[]string{"key", "--batch", "--task", "t", "--tool", "x"}, "282678e86c451559d21b6943da3c847abf4fb419c0bc2a2b289d8a30e3344845\n", ""},
		{[]string{"canon"}, "{\"a\":1}\n", ""},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			ptm, pts := openPTY(t)
			// What a user types: a document, Enter, then Ctrl-D at the
			// start of a line (the terminal's end of input).
			typed := tc.input
			if typed == "" {
				typed = `{"a":1}`
			}
			if _, err := ptm.Write([]byte(typed + "\n\x04")); err != nil {
				t.Fatal(err)
			}
			o := clitest.Streams{In: pts}.Run(t, tc.args...)
			if o.Code != 0 || o.Stdout != tc.want {
				t.Fatalf("exit %d, stdout %q (want %q), stderr %q", o.Code, o.Stdout, tc.want, o.Stderr)
			}
			if !strings.HasPrefix(o.Stderr, note) || strings.Count(o.Stderr, note) != 1 {
				t.Errorf("stderr %q, want it to start with %q, once", o.Stderr, note)
			}
		})
	}

	// Not a terminal (a pipe): no note.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("{\"a\":1}\n"))
	w.Close()
	defer r.Close()
	if o := (clitest.Streams{In: r}).Run(t, "key", "--task", "t", "--tool", "x"); o.Code != 0 || o.Stderr != "" {
		t.Errorf("from a pipe: exit %d, stderr %q, want 0 and nothing", o.Code, o.Stderr)
	}
}
