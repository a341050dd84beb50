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
	ErrEmptyTask   = errors.New("task id is empty")
	ErrEmptyTool   = errors.New("tool name is empty")
	ErrInvalidUTF8 = errors.New("task id or tool name is not valid UTF-8")
)

// Validate checks that the task and tool are non-empty UTF-8 strings.
func (c Call) Validate() error {
	switch {
	case c.Task == "":
		return ErrEmptyTask
	case c.Tool == "":
		return ErrEmptyTool
	case !utf8.ValidString(c.Task) || !utf8.ValidString(c.Tool):
		return ErrInvalidUTF8
	}
	return nil
}

// AppendText appends the exact text that is hashed:
// the canonical form of ["task","tool",args].
func (c Call) AppendText(dst []byte) []byte {
	dst = c.appendPrefix(dst)
	dst = c.Args.Append(dst)
	return append(dst, ']')
}

func (c Call) appendPrefix(dst []byte) []byte {
	dst = append(dst, '[')
	dst = canon.AppendQuoted(dst, c.Task)
	dst = append(dst, ',')
	dst = canon.AppendQuoted(dst, c.Tool)
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
	c.Args.WriteTo(h) // a hash.Hash never returns an error
	h.Write([]byte{']'})
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
