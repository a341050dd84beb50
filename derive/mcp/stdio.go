package mcp

import (
	"context"
	"errors"
	"io"
	"sync"
)

// Upstream is the server side of the proxy: a stdio child (Stdio) or a
// Streamable HTTP endpoint (HTTP).
type Upstream interface {
	// Run reads the server's messages and hands each to s, in the order
	// of the stream it came on, until the server has gone (its stdout
	// ended) or ctx ends; it returns why the server went (nil: it closed
	// its output). An error that is ErrServerGone says that the server
	// ended the session before Close, even when Run returns after it.
	Run(ctx context.Context, s Sink) error
	// Send sends one message of the client's (a complete JSON text) to
	// the server, in order: a message is on its way before the next is
	// sent. ids are the request ids in it, whose answers the upstream
	// watches (HTTP: a stream that ends without one says so to the Sink).
	// An error is a *SendError.
	Send(ctx context.Context, msg []byte, ids [][]byte) error
	// SetVersion tells the upstream the protocol revision the client and
	// the server agreed on (HTTP: the MCP-Protocol-Version header).
	SetVersion(v string)
	// Close says that the client has gone: stdio closes the server's
	// standard input (MCP's shutdown), HTTP ends the session.
	Close() error
}

// Sink is where an Upstream hands what the server said.
type Sink interface {
	// MaxMessage is the cap on one message of the server's: past it,
	// the upstream drops the stream (or connection) it came on, and says
	// so for the requests waiting for an answer there (Unanswered, maybe).
	MaxMessage() int64
	// Message is one message of the server's (a complete line, no
	// newline). With wantIDs it returns the identities of the ids of the
	// responses in it (see idKey).
	Message(msg []byte, wantIDs bool) []string
	// Unanswered says that the request with this id will get no answer
	// from the server: maybe is true when the server may have received
	// and acted on it (a stream that broke), false when it surely did
	// not.
	Unanswered(id []byte, maybe bool, why string)
}

// SendError is a message that could not be sent.
type SendError struct {
	// Maybe: the server may have received it (a connection that broke
	// after the request was written, a 5xx status); false: it surely
	// did not (the connection was refused, a 4xx status).
	Maybe bool
	Msg   string
}

func (e *SendError) Error() string { return e.Msg }

// Stdio is an MCP server over standard input and output (MCP
// basic/transports, stdio): one message a line each way.
type Stdio struct {
	w       io.WriteCloser
	r       io.Reader
	onClose func()

	mu  sync.Mutex
	buf []byte
}

// NewStdio returns the upstream of a server that reads w and writes r
// (its standard input and output). onClose, if set, is called after
// Close has closed w (the caller then waits for the server to exit, and
// ends it if it does not).
func NewStdio(w io.WriteCloser, r io.Reader, onClose func()) *Stdio {
	return &Stdio{w: w, r: r, onClose: onClose}
}

// Run implements Upstream. A last line without its newline is a message
// if it is whole (valid JSON); a cut one is not passed on (errCut).
func (s *Stdio) Run(ctx context.Context, sink Sink) error {
	lr := newLineReaderMax(s.r, sink.MaxMessage())
	for {
		line, err := lr.next()
		var tooLong *TooLongError
		switch {
		case err == errCut && validJSON(line) != nil:
			return errCut
		case errors.As(err, &tooLong):
			// Dropped: the server's further writes fail at once, rather
			// than wait for a reader.
			if c, ok := s.r.(io.Closer); ok {
				c.Close()
			}
			return err
		case err != nil && err != errCut:
			if err == io.EOF {
				return nil
			}
			return err
		}
		if !blank(line) {
			sink.Message(line, false)
		}
		if err == errCut {
			return nil
		}
	}
}

// Send implements Upstream: the message and its newline in one write.
func (s *Stdio) Send(_ context.Context, msg []byte, _ [][]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(append(s.buf[:0], msg...), '\n')
	_, err := s.w.Write(s.buf)
	if cap(s.buf) > bigLine {
		s.buf = nil
	}
	if err != nil {
		return &SendError{Msg: "the server's standard input is closed: " + err.Error()}
	}
	return nil
}

// SetVersion implements Upstream (nothing to do over stdio).
func (s *Stdio) SetVersion(string) {}

// Close implements Upstream: it closes the server's standard input.
func (s *Stdio) Close() error {
	s.mu.Lock()
	err := s.w.Close()
	s.mu.Unlock()
	if s.onClose != nil {
		s.onClose()
	}
	return err
}
