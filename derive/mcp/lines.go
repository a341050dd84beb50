package mcp

import (
	"bufio"
	"errors"
	"io"
)

// errCut: the stream ended in the middle of a line.
var errCut = errors.New("the stream ended in the middle of a message")

// lineReader reads newline-delimited messages (MCP basic/transports,
// stdio: "Messages are delimited by newlines, and MUST NOT contain
// embedded newlines"). A line may be of any length: memory grows with the
// longest line, and a buffer grown past bigLine is dropped after use.
type lineReader struct {
	r   *bufio.Reader
	buf []byte
}

const bigLine = 4 << 20

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10)}
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
