// Package input reads what idemkey's commands are given: documents (a
// file, standard input, a large file mapped), up to a limit whatever the
// input's shape, and JSON Lines in chunks of whole lines (chunk.go).
package input

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"syscall"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/cmd/internal/cli"
)

const StdinName = "<stdin>"

// Limit is the most bytes idemkey reads from one input (a file, or
// standard input): canon.MaxSize, the largest document the parser indexes.
// Reading stops there, so that an input without an end (/dev/zero, an
// endless pipe) costs at most that much memory. Tests lower it.
var Limit int64 = canon.MaxSize

// TooLargeError is an input past a reading limit.
type TooLargeError struct {
	what  string // "input" or "line"
	limit int64
}

func (e *TooLargeError) Error() string {
	n := e.limit
	if n%1024 != 0 {
		n++ // canon.MaxSize, 2 GiB less a byte
	}
	return fmt.Sprintf("%s larger than %d bytes (%s), the limit: reading stopped there", e.what, e.limit, cli.SizeName(n))
}

func (e *TooLargeError) Hint() string {
	if e.what == "line" {
		return "a --batch line holds one call; give a larger document as a file to 'idemkey key'"
	}
	return "idemkey reads JSON of up to 2 GiB (its index holds 31-bit offsets); split the input"
}

// Read reads the file called name, or standard input for "" and "-",
// up to Limit bytes (more is an error, found without reading past the
// limit). It returns the bytes and the name to use in diagnostics.
func Read(f *cli.Factory, name string) ([]byte, string, error) {
	return read(f, name, false)
}

// ReadJSON is Read for an input that must hold one JSON text: a
// stream whose first value cannot start JSON (/dev/zero, "yes |") is read
// no further than its first bytes, which the parser then reports on.
func ReadJSON(f *cli.Factory, name string) ([]byte, string, error) {
	return read(f, name, true)
}

func read(f *cli.Factory, name string, sniff bool) ([]byte, string, error) {
	display, in := name, f.IO.In
	if name == "" || name == "-" {
		display = StdinName
	}
	var data []byte
	var err error
	if fh, ok := in.(*os.File); ok && display == StdinName {
		NoteTerminalStdin(f, fh)
		data, err = readOpen(fh, sniff)
	} else if display == StdinName {
		data, err = ReadAllLimit(in, Limit, sniff)
	} else {
		data, err = readFile(name, sniff)
	}
	if err != nil {
		return nil, display, &cli.InputError{Name: display, Err: FileErr(err)}
	}
	TuneGC(len(data))
	return data, display, nil
}

// NoteTerminalStdin says on standard error that idemkey reads standard
// input when that is a terminal: it reads to the end of the input, so a
// user who typed no file name (or typed a document and Enter) would
// otherwise wait on a silent command.
func NoteTerminalStdin(f *cli.Factory, fh *os.File) {
	if !cli.IsTerminal(fh) {
		return
	}
	eof := "Ctrl-D"
	if runtime.GOOS == "windows" {
		eof = "Ctrl-Z, Enter"
	}
	fmt.Fprintf(f.IO.Err, "idemkey: reading standard input (a terminal): end it with %s, or give a file name\n", eof)
}

// ReadAllLimit reads r to its end, or up to limit bytes: past that it
// stops and returns a *TooLargeError, having held at most limit bytes and
// one buffer. With sniff, it stops as soon as the first value byte shows
// that the data is not JSON text and returns what it read. The data is
// read into buffers that grow to 16 MiB, then joined: at most twice the
// data is held at once, never the doublings of a growing slice.
func ReadAllLimit(r io.Reader, limit int64, sniff bool) ([]byte, error) {
	var parts [][]byte
	var total int64
	sn := sniffer{done: !sniff}
	size := 64 << 10
	for {
		buf := make([]byte, 0, size)
		for len(buf) < cap(buf) {
			n, err := r.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+n]
			if total+int64(len(buf)) > limit {
				return nil, &TooLargeError{what: "input", limit: limit}
			}
			eof := err == io.EOF
			if err != nil && !eof {
				return nil, err
			}
			if len(parts) == 0 && sn.notJSON(buf, eof) {
				eof = true
			}
			if eof {
				if len(parts) == 0 {
					return buf, nil
				}
				return join(append(parts, buf), total+int64(len(buf))), nil
			}
		}
		parts = append(parts, buf)
		total += int64(len(buf))
		size = min(2*size, 16<<20)
	}
}

func join(parts [][]byte, n int64) []byte {
	out := make([]byte, 0, n)
	for i, p := range parts {
		out = append(out, p...)
		parts[i] = nil // the collector may take it while the rest is copied
	}
	return out
}

// sniffer looks at the first bytes of a stream to see whether they
// already show it is not JSON text: its first byte that is not white space
// cannot start a JSON value. It waits for a few bytes past that one, so
// that the parser's diagnosis (UTF-16, a byte order mark) is the one the
// whole input would get.
type sniffer struct {
	ws   int  // white space seen so far
	done bool // decided
}

// notJSON is called with the stream's head as it grows (eof: that is all
// of it) and reports true once the head shows the stream is not JSON.
func (s *sniffer) notJSON(head []byte, eof bool) bool {
	if s.done {
		return false
	}
	for s.ws < len(head) && (head[s.ws] == ' ' || head[s.ws] == '\t' || head[s.ws] == '\n' || head[s.ws] == '\r') {
		s.ws++
	}
	if s.ws == len(head) || (len(head) < s.ws+4 && !eof) {
		return false
	}
	s.done = true
	switch c := head[s.ws]; {
	case c == '{', c == '[', c == '"', c == 't', c == 'f', c == 'n', c == '-', c >= '0' && c <= '9':
		return false
	}
	return true
}

// MapMin is the size from which ReadMapped maps a file rather than reading
// it: below it, copying the file costs less than mapping and unmapping it.
const MapMin = 1 << 20

// ReadMapped is Read for a caller that reads the input only inside
// GuardFaults and only through canon.WriteCanonical, which tolerates input
// that changes under it: a large regular file (standard input included)
// is mapped into memory instead of copied, which saves copying it and
// faulting in fresh memory for it, unless onePassFits says no. If the
// data is mapped, release unmaps it, and the data must not be used after;
// otherwise release is nil.
func ReadMapped(f *cli.Factory, name string) (data []byte, display string, release func(), err error) {
	file, display := f.IO.In, StdinName
	if name != "" && name != "-" {
		fh, err := os.Open(name)
		if err != nil {
			return nil, name, nil, &cli.InputError{Name: name, Err: FileErr(err)}
		}
		defer fh.Close() // a mapping outlives its descriptor
		file, display = fh, name
	}
	if fh, ok := file.(*os.File); ok {
		if st, err := fh.Stat(); err == nil && st.Mode().IsRegular() && st.Size() >= MapMin && st.Size() <= min(canon.MaxSize, Limit) {
			if off, err := fh.Seek(0, io.SeekCurrent); err == nil && off == 0 && onePassFits(fh, st.Size()) {
				if data, unmap, ok := mapFile(fh, st.Size()); ok {
					// The heap stays small: the collector's default target
					// is right (see TuneGC).
					return data, display, unmap, nil
				}
			}
		}
	}
	data, display, err = ReadJSON(f, name)
	return data, display, nil, err
}

// onePassFits says whether the one pass may suit a file of size bytes
// (canon.OnePassMayFit, from its first bytes).
func onePassFits(f *os.File, size int64) bool {
	var head [4096]byte
	n, _ := f.ReadAt(head[:], 0)
	return canon.OnePassMayFit(size, head[:n])
}

// RootIsArray reports whether a JSON text starts with '[' after white
// space.
func RootIsArray(data []byte) bool { return FirstByte(data) == '[' }

// FirstByte returns the first byte of data that is not JSON white space,
// or 0.
func FirstByte(data []byte) byte {
	for _, c := range data {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c
	}
	return 0
}

// GuardFaults runs fn with memory faults turned into an input error: the
// input may be a mapped file that is truncated meanwhile, which makes
// reading it fault, on this goroutine or on one of canon's (see
// canon.IsFault).
func GuardFaults(name string, fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if !canon.IsFault(r) {
				panic(r)
			}
			err = &cli.InputError{Name: name, Err: errors.New("the file changed while it was read: it was truncated")}
		}
	}()
	return fn()
}

// readFile reads a file, up to Limit bytes.
func readFile(name string, sniff bool) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readOpen(f, sniff)
}

// readOpen reads an open file from its current offset, up to Limit
// bytes: a regular file larger than that is refused without reading it,
// other files (pipes, devices) are read up to the limit. A large regular
// file is read in parts on every core at once, which copies it out of the
// page cache about twice as fast.
func readOpen(f *os.File, sniff bool) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		if st.IsDir() {
			return nil, &fs.PathError{Op: "read", Path: f.Name(), Err: syscall.EISDIR}
		}
		return ReadAllLimit(f, Limit, sniff)
	}
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return ReadAllLimit(f, Limit, false)
	}
	size := st.Size() - off
	if size > Limit {
		return nil, &TooLargeError{what: "input", limit: Limit}
	}
	parts := int64(runtime.GOMAXPROCS(0))
	if size < 8<<20 || parts < 2 {
		return ReadAllLimit(f, Limit, false)
	}
	parts = min(parts, 4)
	buf := make([]byte, size)
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for i := int64(0); i < parts; i++ {
		lo, hi := size*i/parts, size*(i+1)/parts
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = f.ReadAt(buf[lo:hi], off+lo)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err == io.EOF {
			return nil, errors.New("file shrank while it was read")
		}
		if err != nil {
			return nil, err
		}
	}
	// A file that grew while it was read is read to its new end, or to
	// the limit.
	rest, err := ReadAllLimit(io.NewSectionReader(f, off+size, 1<<62), Limit-size, false)
	if err != nil {
		return nil, err
	}
	return append(buf, rest...), nil
}

// TuneGC lowers the collector's growth target for large inputs. The live
// heap is then mostly the input and its index, which hold no pointers and
// cost nothing to mark, while the default target (twice the live heap)
// would let the process's memory grow to twice what it needs.
func TuneGC(size int) {
	if size >= 8<<20 {
		debug.SetGCPercent(20)
	}
}

// FileErr shortens an os error to what is wrong ("no such file or
// directory", "is a directory"): the file name is already in front.
func FileErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		if errors.Is(pe.Err, syscall.EISDIR) {
			return errors.New("is a directory, not a file")
		}
		return pe.Err
	}
	return err
}

// ParseDoc parses input under a scheme, as an input error on failure.
func ParseDoc(data []byte, name string, s canon.Scheme) (*canon.Document, error) {
	d, err := canon.Parse(data, s)
	if err != nil {
		return nil, &cli.InputError{Name: name, Err: err}
	}
	return d, nil
}

// BlankLine reports whether a line of JSON Lines input is blank: empty or
// only JSON white space (space, tab, CR). key --batch gives a blank line an
// empty output line and check skips it; neither counts it as an error.
// Other white space (form feed, U+00A0, U+2028) is not JSON's, and a line
// of it is invalid.
func BlankLine(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}
