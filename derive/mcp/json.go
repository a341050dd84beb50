package mcp

import (
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"unicode/utf8"

	"github.com/idemkey/idemkey/canon"
)

// This file is a validating JSON scanner that reads a message's shape in
// one pass, without building it: where each member of an object starts
// and ends, in source order. The proxy forwards the bytes it was given,
// so it needs spans, not values; and it must read a message as the peer's
// JSON.parse will (RFC 8259 text, UTF-8, the last of repeated names), so
// that no tools/call passes it unseen. Nesting is tracked on a heap stack,
// so a hostile depth costs memory linear in the input, never the Go stack.

// errSyntax is the error of a text that is not JSON.
type errSyntax struct {
	off int
	msg string
}

func (e *errSyntax) Error() string { return fmt.Sprintf("offset %d: %s", e.off, e.msg) }

func synErr(off int, format string, args ...any) error {
	return &errSyntax{off: off, msg: fmt.Sprintf(format, args...)}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// validJSON reports whether b is one JSON text (RFC 8259: one value,
// white space around it, UTF-8), and the error if not.
func validJSON(b []byte) error {
	if !utf8.Valid(b) {
		return errors.New("not UTF-8")
	}
	i := skipSpace(b, 0)
	end, err := skipValue(b, i)
	if err != nil {
		return err
	}
	if j := skipSpace(b, end); j != len(b) {
		return synErr(j, "text after the value")
	}
	return nil
}

// skipValue checks the value that starts at b[i] and returns the offset
// just past it. UTF-8 is checked by the caller.
func skipValue(b []byte, i int) (int, error) {
	var stack []byte // '{' or '[' for each open container
	for {
		if i >= len(b) {
			return i, synErr(i, "unexpected end of text")
		}
		var err error
		switch c := b[i]; {
		case c == '{' || c == '[':
			end := byte('}')
			if c == '[' {
				end = ']'
			}
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == end {
				i++
				break
			}
			stack = append(stack, c)
			if c == '{' {
				if i, err = skipName(b, i); err != nil {
					return i, err
				}
			}
			continue
		case c == '"':
			if i, _, err = skipString(b, i); err != nil {
				return i, err
			}
		case c == '-' || c >= '0' && c <= '9':
			if i, err = skipNumber(b, i); err != nil {
				return i, err
			}
		case c == 't':
			i, err = literal(b, i, "true")
		case c == 'f':
			i, err = literal(b, i, "false")
		case c == 'n':
			i, err = literal(b, i, "null")
		default:
			return i, synErr(i, "unexpected %q", c)
		}
		if err != nil {
			return i, err
		}
		// After a value: close containers, or go on to the next member
		// or element.
		for {
			if len(stack) == 0 {
				return i, nil
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return i, synErr(i, "unexpected end of text")
			}
			top := stack[len(stack)-1]
			if b[i] == ',' {
				i = skipSpace(b, i+1)
				if top == '{' {
					if i, err = skipName(b, i); err != nil {
						return i, err
					}
				}
				break
			}
			if top == '{' && b[i] == '}' || top == '[' && b[i] == ']' {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			return i, synErr(i, "expected ',' or the end of the %s", map[byte]string{'{': "object", '[': "array"}[top])
		}
	}
}

// skipName reads `"name" :` and the space after it.
func skipName(b []byte, i int) (int, error) {
	if i >= len(b) || b[i] != '"' {
		return i, synErr(i, "expected a member name")
	}
	i, _, err := skipString(b, i)
	if err != nil {
		return i, err
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return i, synErr(i, "expected ':'")
	}
	return skipSpace(b, i+1), nil
}

// skipString checks the string that starts at b[i] (a quote) and returns
// the offset past its closing quote and whether it has escapes.
func skipString(b []byte, i int) (int, bool, error) {
	start := i
	i++
	esc := false
	for i < len(b) {
		switch c := b[i]; {
		case c == '"':
			return i + 1, esc, nil
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				return i, esc, synErr(i, "unterminated string")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex4(b[i+2:i+6]) {
					return i, esc, synErr(i, "invalid \\u escape")
				}
				i += 6
			default:
				return i, esc, synErr(i, "invalid escape \\%c", b[i+1])
			}
		case c < 0x20:
			return i, esc, synErr(i, "control character in a string")
		default:
			i++
		}
	}
	return start, esc, synErr(start, "unterminated string")
}

func isHex4(h []byte) bool {
	for _, c := range h {
		if !(c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'f') {
			return false
		}
	}
	return true
}

// skipNumber checks an RFC 8259 number at b[i].
func skipNumber(b []byte, i int) (int, error) {
	start := i
	if b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return i, synErr(start, "invalid number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return i, synErr(start, "invalid number")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return i, synErr(start, "invalid number")
		}
	}
	return i, nil
}

func literal(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, synErr(i, "invalid literal")
	}
	return i + len(lit), nil
}

// member is one member of an object, as spans of its source.
type member struct {
	start     int // the name's opening quote
	nameEnd   int // past the name's closing quote
	val, end  int // the value's first byte, and past its last
	nameEsc   bool
	nameBytes []byte  // the name's source, quotes included
	decoded   *string // an escaped name, once decoded
}

// name returns the member's decoded name. An escaped name is decoded
// once, however often it is asked for, so that reading a message with
// many escaped names stays linear in its size.
func (m *member) name() string {
	if !m.nameEsc {
		return string(m.nameBytes[1 : len(m.nameBytes)-1])
	}
	if m.decoded == nil {
		nameDecodes.Add(1)
		d := decodeString(m.nameBytes)
		m.decoded = &d
	}
	return *m.decoded
}

// nameDecodes counts the escaped member names decoded (the tests check
// that a message's are decoded once each).
var nameDecodes atomic.Int64

// is reports whether the member's decoded name is n.
func (m *member) is(n string) bool {
	if !m.nameEsc {
		return len(m.nameBytes) == len(n)+2 && string(m.nameBytes[1:len(m.nameBytes)-1]) == n
	}
	return m.name() == n
}

// repeated returns the first of names that ms has more than once ("" for
// none): a peer whose parser keeps the first of a repeated name and one
// that keeps the last read different messages.
func repeated(ms []member, names ...string) string {
	seen := make([]bool, len(names))
	for k := range ms {
		for j, n := range names {
			if ms[k].is(n) {
				if seen[j] {
					return n
				}
				seen[j] = true
			}
		}
	}
	return ""
}

// members returns the members of the valid object at b[i], in source
// order. b must have been validated.
func members(b []byte, i int) []member {
	var ms []member
	i = skipSpace(b, i+1)
	if b[i] == '}' {
		return nil
	}
	for {
		start := i
		nameEnd, esc, _ := skipString(b, i)
		j := skipSpace(b, nameEnd)
		val := skipSpace(b, j+1)
		end, _ := skipValue(b, val)
		ms = append(ms, member{start: start, nameEnd: nameEnd, val: val, end: end, nameEsc: esc, nameBytes: b[start:nameEnd]})
		i = skipSpace(b, end)
		if b[i] == '}' {
			return ms
		}
		i = skipSpace(b, i+1)
	}
}

// elements returns the spans of the elements of the valid array at b[i].
func elements(b []byte, i int) [][2]int {
	var es [][2]int
	i = skipSpace(b, i+1)
	if b[i] == ']' {
		return nil
	}
	for {
		end, _ := skipValue(b, i)
		es = append(es, [2]int{i, end})
		i = skipSpace(b, end)
		if b[i] == ']' {
			return es
		}
		i = skipSpace(b, i+1)
	}
}

// last returns the last member named n (JSON.parse keeps the last of
// repeated names), or nil.
func last(ms []member, n string) *member {
	for k := len(ms) - 1; k >= 0; k-- {
		if ms[k].is(n) {
			return &ms[k]
		}
	}
	return nil
}

// decodeString returns the text of the valid JSON string s.
func decodeString(s []byte) string {
	if len(s) < 2 {
		return ""
	}
	plain := true
	for _, c := range s[1 : len(s)-1] {
		if c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		return string(s[1 : len(s)-1])
	}
	// As JSON.parse decodes it (canon's JS scheme): a lone surrogate
	// escape is kept as its own three bytes (WTF-8), as idemkey key keeps
	// it in a task id or a tool name.
	doc, err := canon.Parse(s, canon.JS)
	if err != nil {
		return string(s)
	}
	return doc.Root().Text()
}

// idKey is the identity of a JSON-RPC id as a peer's JSON.parse compares
// it: a string by its text, a number by its value (1, 1.0 and 1e0 are one
// id), null as null. ok is false for another kind of value.
func idKey(raw []byte) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	switch c := raw[0]; {
	case c == '"':
		return "s" + decodeString(raw), true
	case c == '-' || c >= '0' && c <= '9':
		// Out of the double range, ParseFloat gives ±Inf, as JSON.parse
		// gives ±Infinity.
		f, _ := strconv.ParseFloat(string(raw), 64)
		if f == 0 {
			f = 0 // -0 is 0 (JSON.parse's -0 is written back as 0)
		}
		return "n" + strconv.FormatFloat(f, 'g', -1, 64), true
	case c == 'n':
		return "null", true
	}
	return "", false
}
