package post

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// SpoolMem is how much of a response body is kept in memory; the rest of
// a larger body goes to a temporary file, so that memory stays bounded for
// any response size and the body is still written once, from the final
// attempt, after the transfer is known to be complete.
const SpoolMem = 4 << 20

// Spool holds one response body: in memory up to SpoolMem bytes, then in
// an unlinked temporary file.
type Spool struct {
	mem  []byte
	file *os.File
	n    int64
}

// NewSpool returns a spool holding data in memory (a body replayed from
// a ledger).
func NewSpool(data []byte) *Spool { return &Spool{mem: data, n: int64(len(data))} }

// errSpool marks a failure to store the body (the temporary file), which
// is curl's write error, not a transfer failure.
var errSpool = errors.New("Spool")

// Fill reads r to its end into the Spool.
func (s *Spool) Fill(r io.Reader) error {
	buf := make([]byte, 32<<10)
	for {
		k, err := r.Read(buf)
		if k > 0 {
			if werr := s.write(buf[:k]); werr != nil {
				return fmt.Errorf("%w: cannot store the response body: %v", errSpool, werr)
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// write appends p: to memory while it fits in SpoolMem, else to the file.
func (s *Spool) write(p []byte) error {
	s.n += int64(len(p))
	if s.file == nil && len(s.mem)+len(p) <= SpoolMem {
		if need := len(s.mem) + len(p); need > cap(s.mem) {
			// Doubling: append grows large slices by a quarter, which
			// would allocate five times the final size.
			grown := make([]byte, len(s.mem), min(max(2*cap(s.mem), need, 64<<10), SpoolMem))
			copy(grown, s.mem)
			s.mem = grown
		}
		s.mem = append(s.mem, p...)
		return nil
	}
	if s.file == nil {
		f, err := os.CreateTemp("", "idemkey-body-*")
		if err != nil {
			return pathReason(err)
		}
		// Unlinked at once where the system allows it, so that nothing is
		// left behind even if idemkey is killed; close removes it otherwise.
		_ = os.Remove(f.Name())
		s.file = f
		if _, err := f.Write(s.mem); err != nil {
			return err
		}
		s.mem = nil
	}
	_, err := s.file.Write(p)
	return err
}

// Spilled reports whether the body went to a temporary file.
func (s *Spool) Spilled() bool { return s != nil && s.file != nil }

// Size returns the number of body bytes.
func (s *Spool) Size() int64 {
	if s == nil {
		return 0
	}
	return s.n
}

// CopyTo writes the whole body to w.
func (s *Spool) CopyTo(w io.Writer) error {
	if s == nil {
		return nil
	}
	if s.file == nil {
		_, err := w.Write(s.mem)
		return err
	}
	_, err := io.Copy(w, s.Reader())
	return err
}

// Reader returns a reader of the whole body, independent of any other.
func (s *Spool) Reader() io.Reader {
	if s == nil {
		return bytes.NewReader(nil)
	}
	if s.file == nil {
		return bytes.NewReader(s.mem)
	}
	return io.NewSectionReader(s.file, 0, s.n)
}

// Bytes returns the body if it is small enough to be held in memory.
func (s *Spool) Bytes() ([]byte, bool) {
	if s == nil {
		return nil, true
	}
	return s.mem, s.file == nil
}

// Close releases the temporary file.
func (s *Spool) Close() {
	if s == nil || s.file == nil {
		return
	}
	name := s.file.Name()
	s.file.Close()
	os.Remove(name)
	s.file = nil
}

// pathReason shortens an os error to what is wrong ("no such file or
// directory", "is a directory, not a file"): the file name is already in
// the message.
func pathReason(err error) error {
	pe := (*fs.PathError)(nil)
	switch {
	case !errors.As(err, &pe):
		return err
	case errors.Is(pe.Err, syscall.EISDIR):
		return errors.New("is a directory, not a file")
	}
	return pe.Err
}
