package cli

import (
	"errors"
	"io"
	"os"

	"github.com/fatih/color"
	"github.com/mattn/go-isatty"
)

// IOStreams are the streams a command reads and writes; tests inject
// buffers, Run uses the process's own.
type IOStreams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer

	// Getenv reads the environment (os.Getenv unless a test replaces it).
	Getenv func(string) string
}

// System returns the process's streams. A standard output that was
// closed when idemkey started (`>&-`) refuses every write, so that a
// result written there is reported instead of lost (the Go runtime would
// have put /dev/null in its place).
func System() *IOStreams {
	var out io.Writer = os.Stdout
	if stdoutClosed() {
		out = ClosedWriter{}
	}
	return &IOStreams{In: os.Stdin, Out: out, Err: os.Stderr, Getenv: os.Getenv}
}

// errClosedStdout is the error of every write on a closed standard output.
var errClosedStdout = errors.New("standard output is closed")

// ClosedWriter is a standard output closed when idemkey started: every
// write fails.
type ClosedWriter struct{}

func (ClosedWriter) Write([]byte) (int, error) { return 0, errClosedStdout }

// watchedWriter remembers the first write error on standard output, so
// that Main reports it whichever command (or cobra's help) wrote.
type watchedWriter struct {
	w   io.Writer
	err error
}

// WatchWrites wraps w (once) to remember its first write error.
func WatchWrites(w io.Writer) *watchedWriter {
	if ww, ok := w.(*watchedWriter); ok {
		return ww
	}
	return &watchedWriter{w: w}
}

func (ww *watchedWriter) Write(p []byte) (int, error) {
	n, err := ww.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if err != nil && ww.err == nil {
		ww.err = err
	}
	return n, err
}

// Err is the first write error, or nil.
func (ww *watchedWriter) Err() error { return ww.err }

// Unwrap gives the stream underneath (a terminal test looks at it).
func (ww *watchedWriter) Unwrap() io.Writer { return ww.w }

// OutErr returns the first error writing standard output so far, or nil:
// a command that maps it to its own exit code (post: curl's 23) checks it
// before returning.
func (ios *IOStreams) OutErr() error {
	if ww, ok := ios.Out.(*watchedWriter); ok {
		return ww.err
	}
	return nil
}

// OutClosed reports whether standard output was closed when idemkey
// started (see System): a command that must not act without a place for
// its result (post) checks it before it sends anything.
func (ios *IOStreams) OutClosed() bool {
	w := ios.Out
	for {
		if _, ok := w.(ClosedWriter); ok {
			return true
		}
		u, ok := w.(interface{ Unwrap() io.Writer })
		if !ok {
			return false
		}
		w = u.Unwrap()
	}
}

// Underlying returns the stream beneath the wrappers of w (watchedWriter).
func Underlying(w io.Writer) io.Writer {
	for {
		u, ok := w.(interface{ Unwrap() io.Writer })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}

// IsTerminal reports whether w, beneath its wrappers, is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := Underlying(w).(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// UseColor says whether to paint w under --color mode (auto, always or
// never): auto paints a terminal unless NO_COLOR or TERM=dumb says not to.
func (ios *IOStreams) UseColor(mode string, w io.Writer) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	if ios.Getenv("NO_COLOR") != "" || ios.Getenv("TERM") == "dumb" {
		return false
	}
	return IsTerminal(w)
}

// Paint returns a colour for w under the --color mode: enabled or disabled
// explicitly, never by fatih/color's global guess.
func (ios *IOStreams) Paint(mode string, w io.Writer, attrs ...color.Attribute) *color.Color {
	c := color.New(attrs...)
	if ios.UseColor(mode, w) {
		c.EnableColor()
	} else {
		c.DisableColor()
	}
	return c
}
