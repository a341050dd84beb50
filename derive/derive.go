// Package derive computes idempotency keys: SHA-256 over the canonical JSON
// of [taskId, toolName, args], exactly as the reference harness does.
package derive

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"hash"
	"io"
	"unicode/utf8"

	"github.com/idemkey/idemkey/canon"
)

// Call is one tool call: the task that scopes it, the tool, and the
// arguments, parsed under the scheme the key is derived with.
type Call struct {
	Task string
	Tool string
	Args canon.Node
}

// ErrEmptyTask and ErrEmptyTool reject calls whose key would not be scoped:
// an empty task id lets keys collide across tasks.
var (
	ErrEmptyTask     = errors.New("task id is empty")
	ErrEmptyTool     = errors.New("tool name is empty")
	ErrInvalidUTF8   = errors.New("task id or tool name is not valid UTF-8")
	ErrLoneSurrogate = errors.New("task id or tool name has a lone surrogate, which the jcs scheme does not allow")
)

// Validate checks that the task and tool are non-empty UTF-8 strings. A
// lone surrogate (WTF-8, as canon decodes a \udxxx escape) is accepted
// under the JS scheme, whose harness hashes such strings, and rejected
// under JCS, which requires I-JSON (RFC 7493 §2.1).
func (c Call) Validate() error {
	jcs := c.Args.Document() != nil && c.Args.Document().Scheme() == canon.JCS
	return validate(c.Task, c.Tool, jcs)
}

func validate(task, tool string, jcs bool) error {
	switch {
	case task == "":
		return ErrEmptyTask
	case tool == "":
		return ErrEmptyTool
	}
	for _, s := range []string{task, tool} {
		switch checkWTF8(s) {
		case wtf8Invalid:
			return ErrInvalidUTF8
		case wtf8Surrogate:
			if jcs {
				return ErrLoneSurrogate
			}
		}
	}
	return nil
}

const (
	wtf8OK = iota
	wtf8Surrogate
	wtf8Invalid
)

// checkWTF8 says whether s is UTF-8, UTF-8 with lone surrogates encoded as
// their own three bytes, or neither.
func checkWTF8(s string) int {
	res := wtf8OK
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		if s[i] == 0xED && i+2 < len(s) && s[i+1] >= 0xA0 && s[i+1] <= 0xBF && s[i+2] >= 0x80 && s[i+2] <= 0xBF {
			res = wtf8Surrogate
			i += 3
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			return wtf8Invalid
		}
		i += size
	}
	return res
}

// AppendText appends the exact text that is hashed:
// the canonical form of ["task","tool",args].
func (c Call) AppendText(dst []byte) []byte {
	dst = c.appendPrefix(dst)
	dst = c.Args.Append(dst)
	return append(dst, ']')
}

func (c Call) appendPrefix(dst []byte) []byte {
	return appendPrefix(dst, c.Task, c.Tool)
}

func appendPrefix(dst []byte, task, tool string) []byte {
	dst = append(dst, '[')
	dst = canon.AppendQuoted(dst, task)
	dst = append(dst, ',')
	dst = canon.AppendQuoted(dst, tool)
	return append(dst, ',')
}

// Key returns SHA-256 of the call's canonical text, the reference
// harness's idempotencyKey(taskId, tool, args). The canonical text is
// streamed into the hash, never held whole.
func (c Call) Key() [32]byte {
	h := sha256.New()
	c.write(h)
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// HMAC returns HMAC-SHA-256 of the call's canonical text under secret, for
// keys sent to third parties when the arguments are guessable.
func (c Call) HMAC(secret []byte) [32]byte {
	h := hmac.New(sha256.New, secret)
	c.write(h)
	var k [32]byte
	h.Sum(k[:0])
	return k
}

func (c Call) write(h hash.Hash) {
	var pre [256]byte
	h.Write(c.appendPrefix(pre[:0]))
	// The arguments' source is as large as the arguments, or a little
	// larger (an envelope): a cheap bound that needs no scan.
	if n := len(c.Args.Document().Source()) - c.Args.Offset(); pipelined(n) {
		// A large document serialized on one core: hash on another
		// meanwhile. Larger ones are serialized on every core in pieces,
		// and the writer of the pieces hashes them itself.
		p := newPipe(h)
		c.Args.WriteTo(p)
		p.close()
	} else {
		c.Args.WriteTo(h) // a hash.Hash never returns an error
	}
	h.Write([]byte{']'})
}

// pipelined says whether arguments of n bytes are hashed on a goroutine of
// their own while they are serialized.
func pipelined(n int) bool { return n >= pipelineMin && n < pipelineMax }

// pipelineMin is the argument size from which hashing runs in its own
// goroutine, overlapping serialization.
const (
	pipelineMin = 1 << 20
	pipelineMax = canon.ParallelMin // canon serializes larger values on every core
)

// pipe is an io.Writer that hands what is written to a hash running in
// another goroutine, through a few reused buffers.
type pipe struct {
	h      hash.Hash
	full   chan []byte
	free   chan []byte
	done   chan struct{}
	prefix []byte // what h was given before the pipe: Rewind gives it again
}

// pipeBufs is the number of buffers a pipe copies small writes into.
const pipeBufs = 4

func newPipe(h hash.Hash) *pipe {
	p := &pipe{h: h, full: make(chan []byte, pipeBufs), free: make(chan []byte, pipeBufs), done: make(chan struct{})}
	for i := 0; i < pipeBufs; i++ {
		p.free <- make([]byte, 0, 64<<10)
	}
	go func() {
		for b := range p.full {
			p.h.Write(b)
			p.free <- b
		}
		close(p.done)
	}()
	return p
}

// Write hands a copy of b to the hashing goroutine. A large b, which the
// parallel writers hand over (a run of about a megabyte, written while
// other goroutines produce the next), is hashed here instead, once the
// copies before it are: copying it would cost more than it saves.
func (p *pipe) Write(b []byte) (int, error) {
	if len(b) >= 256<<10 {
		var bufs [pipeBufs][]byte
		for i := range bufs {
			bufs[i] = <-p.free // all back: the hashing goroutine is idle
		}
		p.h.Write(b)
		for _, buf := range bufs {
			p.free <- buf
		}
		return len(b), nil
	}
	buf := <-p.free
	p.full <- append(buf[:0], b...)
	return len(b), nil
}

// Rewind makes the pipe a canon.Rewinder: once the hashing goroutine is
// idle, the hash is reset and given the prefix again.
func (p *pipe) Rewind() error {
	var bufs [pipeBufs][]byte
	for i := range bufs {
		bufs[i] = <-p.free
	}
	p.h.Reset()
	p.h.Write(p.prefix)
	for _, buf := range bufs {
		p.free <- buf
	}
	return nil
}

func (p *pipe) close() {
	close(p.full)
	<-p.done
}

// WriteText writes the call's canonical text to w, streaming.
func (c Call) WriteText(w io.Writer) error {
	var pre [256]byte
	if _, err := w.Write(c.appendPrefix(pre[:0])); err != nil {
		return err
	}
	if _, err := c.Args.WriteTo(w); err != nil {
		return err
	}
	_, err := w.Write([]byte{']'})
	return err
}

// Text is a call whose arguments are still JSON text. Its Key and HMAC
// validate and canonicalize the arguments in one pass
// (canon.WriteCanonical), without building a canon.Document: the quickest
// way to a key when nothing else needs the parsed arguments.
type Text struct {
	Task   string
	Tool   string
	Args   []byte       // a complete JSON text
	Scheme canon.Scheme // the scheme the arguments are read under
}

// Validate is Call.Validate for a Text; the arguments are validated by Key.
func (c Text) Validate() error { return validate(c.Task, c.Tool, c.Scheme == canon.JCS) }

// Key returns the key Call.Key returns for the same call. Invalid
// arguments yield canon's *canon.Error, and an invalid task or tool one of
// Validate's errors.
func (c Text) Key() ([32]byte, error) {
	var k [32]byte
	h := sha256.New()
	if err := c.write(h); err != nil {
		return k, err
	}
	h.Sum(k[:0])
	return k, nil
}

// HMAC returns the HMAC Call.HMAC returns for the same call.
func (c Text) HMAC(secret []byte) ([32]byte, error) {
	var k [32]byte
	h := hmac.New(sha256.New, secret)
	if err := c.write(h); err != nil {
		return k, err
	}
	h.Sum(k[:0])
	return k, nil
}

func (c Text) write(h hash.Hash) error {
	if err := c.Validate(); err != nil {
		return err
	}
	var pre [256]byte
	prefix := appendPrefix(pre[:0], c.Task, c.Tool)
	h.Write(prefix)
	var err error
	if len(c.Args) >= pipelineMin {
		err = func() error {
			p := newPipe(h)
			p.prefix = prefix // for Rewind
			defer p.close()   // also if reading a mapped file faults (see canon.IsFault)
			_, err := canon.WriteCanonical(p, c.Args, c.Scheme)
			return err
		}()
	} else {
		_, err = canon.WriteCanonical(h, c.Args, c.Scheme)
	}
	h.Write([]byte{']'})
	return err
}

// A Keyer derives the keys of many calls one after another from their
// parts already in canonical form (as canon.Pass gives them), reusing its
// memory: the quick way through a batch. A Keyer is not safe for
// concurrent use.
type Keyer struct {
	mac hash.Hash // HMAC-SHA-256 under the secret, or nil for SHA-256
	buf []byte
}

// NewKeyer returns a Keyer whose keys are Call.Key's, or with a secret
// Call.HMAC's under it.
func NewKeyer(secret []byte) *Keyer {
	k := &Keyer{}
	if secret != nil {
		k.mac = hmac.New(sha256.New, secret)
	}
	return k
}

// Key returns the key of the call whose task and tool are the JSON strings
// task and tool in canonical form (quoted, as canon.AppendQuoted writes
// them) and whose arguments have the canonical text args: the key
// Call.Key (or Call.HMAC) returns for that call. The caller checks the
// task and tool as Validate does.
func (k *Keyer) Key(task, tool, args []byte) [32]byte {
	b := append(k.buf[:0], '[')
	b = append(b, task...)
	b = append(b, ',')
	b = append(b, tool...)
	b = append(b, ',')
	b = append(b, args...)
	b = append(b, ']')
	k.buf = b
	return k.sum(b)
}

// KeyText is Key for a call whose arguments are still the JSON text src:
// it validates and canonicalizes them with p under scheme s, straight
// into the text it hashes. ok is false when src is invalid (canon.Parse
// gives the error).
func (k *Keyer) KeyText(task, tool []byte, p *canon.Pass, src []byte, s canon.Scheme) (key [32]byte, ok bool) {
	b := append(k.buf[:0], '[')
	b = append(b, task...)
	b = append(b, ',')
	b = append(b, tool...)
	b = append(b, ',')
	if b, ok = p.Append(b, src, s); !ok {
		return key, false
	}
	b = append(b, ']')
	k.buf = b
	return k.sum(b), true
}

// sum hashes the canonical text of a call.
func (k *Keyer) sum(text []byte) [32]byte {
	if k.mac == nil {
		return sha256.Sum256(text)
	}
	var sum [32]byte
	k.mac.Reset()
	k.mac.Write(text)
	k.mac.Sum(sum[:0])
	return sum
}
