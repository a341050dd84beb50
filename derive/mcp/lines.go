package mcp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// errCut: the stream ended in the middle of a line.
var errCut = errors.New("the stream ended in the middle of a message")

// TooLongError is a message past the cap on one message's size: the
// stream it came on is dropped (read no further).
type TooLongError struct{ Max int64 }

func (e *TooLongError) Error() string {
	return fmt.Sprintf("a message longer than the cap of %d bytes (--max-message): the stream was dropped", e.Max)
}

// DefaultMaxMessage caps one message from either side when
// Options.MaxMessage is 0: well above the largest result a record keeps
// (maxResult), so that a result too large to keep still passes.
const DefaultMaxMessage = 256 << 20

// lineReader reads newline-delimited messages (MCP basic/transports,
// stdio: "Messages are delimited by newlines, and MUST NOT contain
// embedded newlines"). A line may be up to max bytes: memory grows with
// the longest line, and a buffer grown past bigLine is dropped after use;
// a longer line is a *TooLongError, and nothing more is read.
type lineReader struct {
	r   *bufio.Reader
	buf []byte
	max int64
}

const bigLine = 4 << 20

func newLineReader(r io.Reader) *lineReader { return newLineReaderMax(r, 0) }

// newLineReaderMax is a lineReader whose lines are capped at max bytes
// (0: DefaultMaxMessage).
func newLineReaderMax(r io.Reader, max int64) *lineReader {
	if max <= 0 {
		max = DefaultMaxMessage
	}
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its newline; it is valid until the
// next call. At the end it returns io.EOF, or, when the stream ended in
// the middle of a line, that line and errCut.
func (l *lineReader) next() ([]byte, error) {
	if cap(l.buf) > bigLine {
		l.buf = nil
	}
	l.buf = l.buf[:0]
	for {
		chunk, err := l.r.ReadSlice('\n')
		switch {
		case err == nil && len(l.buf) == 0:
			return chunk[:len(chunk)-1], nil
		case err == nil:
			l.buf = append(l.buf, chunk[:len(chunk)-1]...)
			return l.buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			if int64(len(l.buf)+len(chunk)) > l.max {
				l.buf = nil
				return nil, &TooLongError{Max: l.max}
			}
			l.buf = append(l.buf, chunk...)
			continue
		}
		l.buf = append(l.buf, chunk...)
		if len(l.buf) > 0 && errors.Is(err, io.EOF) {
			return l.buf, errCut
		}
		return nil, err
	}
}

// blank reports whether b is only white space.
func blank(b []byte) bool { return skipSpace(b, 0) == len(b) }
