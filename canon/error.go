package canon

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects that Parse accepts
// by default. The reference harness (V8's JSON.parse and JSON.stringify)
// overflows its stack somewhere past ten thousand levels; deeper input is
// rejected with an error instead of exhausting memory or time.
const MaxDepth = 10000

// MaxSize is the largest input Parse accepts: the index stores offsets in
// 31 bits.
const MaxSize = 1<<31 - 1

// Error describes invalid input: a syntax error, or a document the chosen
// scheme does not accept (a duplicate name or lone surrogate under JCS, a
// number outside the double range under JCS, nesting past the limit).
type Error struct {
	Offset  int    // byte offset of the problem in the input
	Line    int    // 1-based line of Offset
	Column  int    // 1-based column of Offset, in characters
	Pointer string // RFC 6901 JSON Pointer to the value being parsed
	Msg     string // what is wrong, lower case, no trailing period
	Hint    string // an optional suggestion for the reader, or ""

	// RelatedLine and RelatedColumn locate a second place the message or
	// hint speaks of (where a duplicate name was first defined), or are 0.
	RelatedLine, RelatedColumn int
}

// Error returns "LINE:COL: MSG".
func (e *Error) Error() string {
	return fmt.Sprintf("%d:%d: %s", e.Line, e.Column, e.Msg)
}

// perr is the parser's internal error; the path is collected, innermost
// first, while the recursion unwinds, so that the happy path pays nothing.
type perr struct {
	off  int
	msg  string
	hint string
	path []string // reversed reference tokens, already escaped

	relLine, relCol int
}

func (e *perr) Error() string { return e.msg }

func errAt(off int, format string, args ...any) *perr {
	return &perr{off: off, msg: fmt.Sprintf(format, args...)}
}

// finish turns a perr into an *Error with line, column and pointer.
func finish(src []byte, e *perr) *Error {
	off := e.off
	if off > len(src) {
		off = len(src)
	}
	line, lineStart := 1, 0
	for i := 0; i < off; i++ {
		if src[i] == '\n' {
			line++
			lineStart = i + 1
		}
	}
	var ptr strings.Builder
	for i := len(e.path) - 1; i >= 0; i-- {
		ptr.WriteByte('/')
		ptr.WriteString(e.path[i])
	}
	return &Error{
		Offset:      e.off,
		Line:        line,
		Column:      utf8.RuneCount(src[lineStart:off]) + 1,
		Pointer:     ptr.String(),
		Msg:         e.msg,
		Hint:        e.hint,
		RelatedLine: e.relLine, RelatedColumn: e.relCol,
	}
}

// PointerToken escapes a member name as an RFC 6901 reference token
// ("~" → "~0", "/" → "~1").
func PointerToken(name string) string {
	if !strings.ContainsAny(name, "~/") {
		return name
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(name)
}

// describe names the byte at src[i] for an error message.
func describe(src []byte, i int) string {
	if i >= len(src) {
		return "end of input"
	}
	c := src[i]
	switch {
	case c == '\'':
		return "character '\\''"
	case c >= 0x20 && c < 0x7f:
		return fmt.Sprintf("character '%c'", c)
	case c < 0x80:
		return fmt.Sprintf("byte 0x%02x", c)
	}
	r, size := utf8.DecodeRune(src[i:])
	if r == utf8.RuneError && size <= 1 {
		return fmt.Sprintf("invalid UTF-8 byte 0x%02x", c)
	}
	return fmt.Sprintf("character %U", r)
}
