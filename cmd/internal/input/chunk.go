package input

import (
	"bytes"
	"errors"
	"io"
	"os"

	"github.com/idemkey/idemkey/cmd/internal/cli"
)

// The one reader of JSON Lines input in chunks of whole lines: key
// --batch, check and drift read their lines through it.

// LineLimit is the most bytes a line of a batch may hold, its line
// end not counted. A longer line stops the batch there: an input without
// line ends (/dev/zero) is not read on. Tests lower it.
var LineLimit = 64 << 20

// ChunkSize is about how many bytes of input a chunk of a batch
// holds: whole lines, read in one go and split into lines by the worker
// that derives their keys, so that reading copies nothing line by line.
// Small enough that the few chunks in flight stay warm and their buffers
// are faulted in once (256 KiB chunks took 6-12% longer on 100,000 calls,
// most of it in page faults: scripts/README.md), large enough that
// handing chunks between goroutines costs nothing measurable.
const ChunkSize = 128 << 10

// ChunkReader reads JSON Lines input in chunks of whole lines (each
// handed to a worker that splits it into lines, so that reading copies
// nothing line by line). In and Limit are set by its user; LineNo,
// TooLong, Err and Done report where reading is.
type ChunkReader struct {
	In      io.Reader
	Limit   int    // LineLimit
	carry   []byte // the start of the line the last chunk stopped before
	LineNo  int    // lines in the chunks returned
	TooLong int    // the line longer than limit, where reading stopped
	Err     error  // a read error, where reading stopped
	eof     bool
	Done    bool // nothing more to read
}

// Next appends to buf (empty, reused) the next chunk of whole lines: about
// ChunkSize bytes or more, to the end of its last line (line end
// included), or of the input. Lines longer than limit stop the reading:
// the chunk ends before the first, and tooLong is its line number; a read
// error stops it after the last whole line read. done is set with the
// last chunk, which may be empty.
func (r *ChunkReader) Next(buf []byte) []byte {
	buf = append(buf[:0], r.carry...) // buf may be the array carry is in: copy moves it down
	r.carry = nil
	want := ChunkSize
	for {
		for len(buf) < want && !r.eof && r.Err == nil {
			if cap(buf)-len(buf) < 64<<10 {
				// Grow by doubling, never past the limit: a long line then
				// costs about twice its length.
				nb := make([]byte, len(buf), max(min(2*cap(buf), r.Limit+3+64<<10), len(buf)+64<<10))
				copy(nb, buf)
				buf = nb
			}
			n, err := r.In.Read(buf[len(buf):min(cap(buf), len(buf)+max(want-len(buf), 64<<10))])
			buf = buf[:len(buf)+n]
			if err == io.EOF {
				r.eof = true
			} else if err != nil {
				r.Err = err
			}
		}
		end := len(buf)
		if !r.eof {
			end = bytes.LastIndexByte(buf, '\n') + 1
		}
		if r.Err != nil {
			// Reading stops after the last whole line: the one the error
			// cut short is dropped (once its length is checked).
			r.carry = buf[end:]
			buf = buf[:end]
			r.Done = true
			break
		}
		if end > 0 || r.eof {
			r.carry = buf[end:]
			buf = buf[:end]
			break
		}
		if len(buf) > r.Limit+2 {
			break // one line, longer than the limit: checked below
		}
		want = min(2*len(buf), r.Limit+3) // one line, still open: read on
	}
	if len(buf) > r.Limit || len(r.carry) > r.Limit+2 {
		// A line may be longer than the limit: look at each.
		for i := 0; i < len(buf); {
			j := bytes.IndexByte(buf[i:], '\n') + 1
			if j == 0 {
				j = len(buf) - i
			}
			if len(TrimEOL(buf[i:i+j])) > r.Limit {
				r.TooLong = r.LineNo + 1
				r.Done = true
				return buf[:i]
			}
			r.LineNo++
			i += j
		}
		if len(r.carry) > r.Limit+2 {
			r.TooLong = r.LineNo + 1
			r.Done = true
		}
	} else {
		r.LineNo += bytes.Count(buf, []byte{'\n'})
		if len(buf) > 0 && buf[len(buf)-1] != '\n' {
			r.LineNo++ // the last line has no line end
		}
	}
	if r.Err != nil {
		r.carry = nil
	}
	r.Done = r.Done || r.eof && len(r.carry) == 0
	return buf
}

// TrimEOL drops a line end: "\n" or "\r\n".
func TrimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}

// Failure is what stopped the reading, as an input error naming the input
// (and the line that was too long), or nil.
func (r *ChunkReader) Failure(name string) error {
	switch {
	case r.TooLong > 0:
		return &cli.InputError{Name: name, Line: r.TooLong, Err: &TooLargeError{what: "line", limit: int64(r.Limit)}}
	case r.Err != nil:
		return &cli.InputError{Name: name, Err: r.Err}
	}
	return nil
}

// NewChunkReader reads in from the start, with lines of at most LineLimit
// bytes.
func NewChunkReader(in io.Reader) *ChunkReader { return &ChunkReader{In: in, Limit: LineLimit} }

// OpenLines opens JSON Lines input for a ChunkReader: the file called
// name, or standard input for "" and "-" (with the note for a terminal),
// and the file's size (0 for standard input). closeIn closes what it
// opened.
func OpenLines(f *cli.Factory, name string) (in io.Reader, display string, size int64, closeIn func(), err error) {
	in, display, closeIn = f.IO.In, StdinName, func() {}
	if name == "" || name == "-" {
		if fh, ok := in.(*os.File); ok {
			NoteTerminalStdin(f, fh)
		}
		return in, display, 0, closeIn, nil
	}
	fh, err := os.Open(name)
	if err != nil {
		return nil, name, 0, nil, &cli.InputError{Name: name, Err: FileErr(err)}
	}
	if st, err := fh.Stat(); err == nil {
		if st.IsDir() {
			fh.Close()
			return nil, name, 0, nil, &cli.InputError{Name: name, Err: errors.New("is a directory, not a file")}
		}
		size = st.Size()
	}
	return fh, name, size, func() { fh.Close() }, nil
}
