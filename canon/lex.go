package canon

// The byte layer: whitespace, string and number tokens, escapes and UTF-8
// (RFC 8259 §2, §6, §7, §8.1).

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// quoteOrBackslash flags, in the high bit of each byte, the bytes of x
// that are '"' or '\\' (exact up to the lowest flagged byte).
func quoteOrBackslash(x uint64) uint64 {
	q := x ^ (lsb * '"')
	b := x ^ (lsb * '\\')
	return ((q-lsb)&^q | (b-lsb)&^b) & msb
}

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipWS(src []byte, i int) int {
	for i < len(src) && isWS(src[i]) {
		i++
	}
	return i
}

// strInfo says what scanString found in a string token.
type strInfo uint8

const (
	strEscaped strInfo = 1 << iota // contains at least one backslash escape
	strLone                        // contains an escaped lone surrogate
)

// scanString validates the string token that starts with the quote at
// src[i] and returns the offset just past its closing quote. It looks at
// eight bytes at a time for the bytes that end a run of plain ASCII ('"',
// '\\', control characters, non-ASCII bytes) and validates each UTF-8
// sequence where it stands, so that a string is read once.
func scanString(src []byte, i int) (int, strInfo, *perr) {
	start := i
	i++
	var info strInfo
	for {
		for i+8 <= len(src) {
			x := binary.LittleEndian.Uint64(src[i:])
			if m := runEnds(x) | x&msb; m != 0 {
				// The lowest flagged byte is exact (a false positive can
				// only follow a true one): jump to it.
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(src) {
			return 0, 0, &perr{off: start, msg: "unterminated string", hint: "a string must end with '\"' before the end of input"}
		}
		c := src[i]
		switch {
		case c == '"':
			return i + 1, info, nil
		case c >= utf8.RuneSelf:
			n := utf8Seq(src, i)
			if n == 0 {
				return 0, 0, utf8Err(i, c)
			}
			i += n
		case c == '\\':
			info |= strEscaped
			n, lone, err := scanEscape(src, i)
			if err != nil {
				return 0, 0, err
			}
			if lone {
				info |= strLone
			}
			i = n
		case c < 0x20:
			return 0, 0, controlErr(i, c)
		default:
			i++
		}
	}
}

// controlErr is the error for the control character c at src[i] in a
// string.
func controlErr(i int, c byte) *perr {
	e := errAt(i, "invalid control character U+%04X in string", c)
	e.hint = "control characters must be escaped, e.g. \\n or \\u0001"
	if c == '\n' {
		e.hint = "a string cannot span lines; write \\n for a line break"
	}
	return e
}

// utf8Err is the error for the invalid UTF-8 byte c at src[i] in a string.
func utf8Err(i int, c byte) *perr {
	e := errAt(i, "invalid UTF-8 byte 0x%02x in string", c)
	e.hint = utf8Hint
	return e
}

// utf8Seq returns the length of the valid UTF-8 sequence of two to four
// bytes (RFC 3629 §4: no overlong forms, no surrogates, nothing above
// U+10FFFF) that starts at src[i], a byte of 0x80 or above, or 0 if there
// is none.
func utf8Seq(src []byte, i int) int {
	c := src[i]
	var n int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c >= 0xC2 && c <= 0xDF:
		n = 2
	case c >= 0xE0 && c <= 0xEF:
		n = 3
		if c == 0xE0 {
			lo = 0xA0
		} else if c == 0xED {
			hi = 0x9F
		}
	case c >= 0xF0 && c <= 0xF4:
		n = 4
		if c == 0xF0 {
			lo = 0x90
		} else if c == 0xF4 {
			hi = 0x8F
		}
	default:
		return 0
	}
	if i+n > len(src) || src[i+1] < lo || src[i+1] > hi {
		return 0
	}
	for k := 2; k < n; k++ {
		if src[i+k]&0xC0 != 0x80 {
			return 0
		}
	}
	return n
}

// runEnds flags, in the high bit of each byte, the bytes of x that are
// '"', '\\' or a control character; bytes of 0x80 and above are not
// flagged. Above the lowest flagged byte there may be false positives.
func runEnds(x uint64) uint64 {
	q := x ^ (lsb * '"')
	b := x ^ (lsb * '\\')
	return ((x-lsb*0x20)&^x | (q-lsb)&^q | (b-lsb)&^b) & msb
}

// utf8Hint accompanies every invalid UTF-8 error.
const utf8Hint = "JSON text must be UTF-8 (RFC 8259 §8.1); convert it first, e.g. iconv -f LATIN1 -t UTF-8"

// invalidUTF8At reports whether src[i:] starts with an invalid UTF-8
// sequence.
func invalidUTF8At(src []byte, i int) bool {
	r, size := utf8.DecodeRune(src[i:])
	return r == utf8.RuneError && size <= 1
}

func hexval(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// hex4 decodes the four hex digits at src[i:], or returns -1.
func hex4(src []byte, i int) int {
	if i+4 > len(src) {
		return -1
	}
	v := 0
	for _, c := range src[i : i+4] {
		h := hexval(c)
		if h < 0 {
			return -1
		}
		v = v<<4 | h
	}
	return v
}

// scanEscape validates the escape whose backslash is at src[i]. A high
// surrogate escape followed by a low surrogate escape is consumed as one
// pair; anything else in the surrogate range is a lone surrogate.
func scanEscape(src []byte, i int) (next int, lone bool, err *perr) {
	if i+1 >= len(src) {
		return 0, false, &perr{off: i, msg: "unterminated string", hint: "a string must end with '\"' before the end of input"}
	}
	switch src[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return i + 2, false, nil
	case 'u':
		v := hex4(src, i+2)
		if v < 0 {
			return 0, false, &perr{off: i, msg: "invalid \\u escape: want four hex digits", hint: "write \\u followed by exactly four hex digits, e.g. \\u00e9"}
		}
		if v >= 0xD800 && v < 0xDC00 {
			if i+7 < len(src) && src[i+6] == '\\' && src[i+7] == 'u' {
				w := hex4(src, i+8)
				if w >= 0xDC00 && w < 0xE000 {
					return i + 12, false, nil
				}
			}
			return i + 6, true, nil
		}
		return i + 6, v >= 0xDC00 && v < 0xE000, nil
	}
	e := errAt(i, "invalid escape '\\%s' in string", string(rune(src[i+1])))
	if src[i+1] < 0x20 || src[i+1] >= 0x7f {
		e = errAt(i, "invalid escape in string: '\\' followed by %s", describe(src, i+1))
	}
	e.hint = "JSON escapes are \\\" \\\\ \\/ \\b \\f \\n \\r \\t and \\uXXXX"
	return 0, false, e
}

// appendDecoded appends the decoded contents of a valid string token body
// (without its quotes) as WTF-8: UTF-8, except that a lone surrogate is
// encoded as its own three bytes (0xED 0xA0–0xBF …), which keeps the order
// of UTF-16 code units comparable byte by byte.
func appendDecoded(dst, body []byte) []byte {
	for i := 0; i < len(body); {
		c := body[i]
		if c != '\\' {
			j := i + 1
			for j < len(body) && body[j] != '\\' {
				j++
			}
			dst = append(dst, body[i:j]...)
			i = j
			continue
		}
		switch body[i+1] {
		case '"', '\\', '/':
			dst = append(dst, body[i+1])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			v := rune(hex4(body, i+2))
			if v >= 0xD800 && v < 0xDC00 && i+11 < len(body) && body[i+6] == '\\' && body[i+7] == 'u' {
				if w := rune(hex4(body, i+8)); w >= 0xDC00 && w < 0xE000 {
					dst = utf8.AppendRune(dst, 0x10000+(v-0xD800)<<10+(w-0xDC00))
					i += 12
					continue
				}
			}
			if v >= 0xD800 && v < 0xE000 {
				dst = append(dst, 0xED, byte(0x80|(v>>6)&0x3F), byte(0x80|v&0x3F))
			} else {
				dst = utf8.AppendRune(dst, v)
			}
			i += 6
			continue
		}
		i += 2
	}
	return dst
}

// appendRequoted appends the canonical form of a valid string token whose
// body (without its quotes) has escapes: what appendQuoted writes for the
// decoded body, in one pass. Text between escapes needs no escape (raw
// '"', '\\' and control characters are invalid in a token) and is copied
// as it is; each escape is written as RFC 8785 §3.2.2.2 writes its
// character.
func appendRequoted(dst, body []byte) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(body); {
		j := i + bytes.IndexByte(body[i:], '\\')
		if j < i {
			j = len(body)
		}
		dst = append(dst, body[i:j]...)
		if j == len(body) {
			break
		}
		i = j + 2
		switch c := body[j+1]; c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '/':
			dst = append(dst, '/')
		case 'b', 'f', 'n', 'r', 't':
			dst = append(dst, '\\', c)
		case 'u':
			v := rune(hex4(body, j+2))
			i = j + 6
			switch {
			case v < 0x20 || v == '"' || v == '\\':
				dst = appendQuotedByte(dst, byte(v))
			case v < 0x80:
				dst = append(dst, byte(v))
			case v >= 0xD800 && v < 0xDC00 && i+5 < len(body) && body[i] == '\\' && body[i+1] == 'u':
				if w := rune(hex4(body, i+2)); w >= 0xDC00 && w < 0xE000 {
					dst = utf8.AppendRune(dst, 0x10000+(v-0xD800)<<10+(w-0xDC00))
					i += 6
					break
				}
				fallthrough
			case v >= 0xD800 && v < 0xE000:
				// A lone surrogate, kept as JSON.stringify keeps it.
				dst = append(dst, '\\', 'u', hexdigits[v>>12], hexdigits[v>>8&0xF], hexdigits[v>>4&0xF], hexdigits[v&0xF])
			default:
				dst = utf8.AppendRune(dst, v)
			}
		}
	}
	return append(dst, '"')
}

// appendQuotedByte appends the escape of an ASCII byte that needs one.
func appendQuotedByte(dst []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(dst, '\\', c)
	case '\b':
		return append(dst, '\\', 'b')
	case '\t':
		return append(dst, '\\', 't')
	case '\n':
		return append(dst, '\\', 'n')
	case '\f':
		return append(dst, '\\', 'f')
	case '\r':
		return append(dst, '\\', 'r')
	}
	return append(dst, '\\', 'u', '0', '0', hexdigits[c>>4], hexdigits[c&0xF])
}

// needsEscape marks the ASCII bytes that RFC 8785 §3.2.2.2 (and
// JSON.stringify) escape: '"', '\\' and U+0000–U+001F.
var needsEscape = func() (t [256]bool) {
	for i := 0; i < 0x20; i++ {
		t[i] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

const hexdigits = "0123456789abcdef"

// AppendQuoted appends s, a UTF-8 (or WTF-8) string, as a JSON string
// token escaped as RFC 8785 §3.2.2.2 and JSON.stringify prescribe: '"' and
// '\\' with a backslash; \b \t \n \f \r in their short forms; the other
// characters below U+0020 as \u00xx in lower case; a lone surrogate as
// \udxxx; everything else, including '/', U+007F and U+2028, as it is.
func AppendQuoted(dst []byte, s string) []byte {
	return appendQuoted(dst, s)
}

func appendQuoted[T string | []byte](dst []byte, s T) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x80 {
			if !needsEscape[c] {
				continue
			}
			dst = append(dst, s[start:i]...)
			dst = appendQuotedByte(dst, c)
			start = i + 1
			continue
		}
		if c == 0xED && i+2 < len(s) && s[i+1] >= 0xA0 {
			v := rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F) | 0xD000
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', hexdigits[v>>12], hexdigits[v>>8&0xF], hexdigits[v>>4&0xF], hexdigits[v&0xF])
			i += 2
			start = i + 1
		}
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// scanNumber validates the number token at src[i] (RFC 8259 §6) and
// returns the offset just past it, and whether it is a plain integer.
func scanNumber(src []byte, i int) (int, bool, *perr) {
	start := i
	if src[i] == '-' {
		i++
	}
	if i >= len(src) || src[i] < '0' || src[i] > '9' {
		e := &perr{off: i, msg: "invalid number: expected digit after '-'"}
		if i < len(src) && isLetter(src[i]) {
			e.hint = wordHint(word(src, i))
		}
		return 0, false, e
	}
	if src[i] == '0' {
		i++
		if i < len(src) && src[i] >= '0' && src[i] <= '9' {
			return 0, false, &perr{off: start, msg: "invalid number: leading zero", hint: "JSON numbers cannot start with 0 unless the integer part is 0 itself"}
		}
	} else {
		for i < len(src) && src[i] >= '0' && src[i] <= '9' {
			i++
		}
	}
	integer := true
	if i < len(src) && src[i] == '.' {
		integer = false
		i++
		if i >= len(src) || src[i] < '0' || src[i] > '9' {
			return 0, false, &perr{off: i, msg: "invalid number: expected digit after decimal point", hint: "a decimal point must be followed by digits: write 1.0 or 1"}
		}
		for i < len(src) && src[i] >= '0' && src[i] <= '9' {
			i++
		}
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		integer = false
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		if i >= len(src) || src[i] < '0' || src[i] > '9' {
			return 0, false, &perr{off: i, msg: "invalid number: expected digit in exponent"}
		}
		for i < len(src) && src[i] >= '0' && src[i] <= '9' {
			i++
		}
	}
	return i, integer, nil
}

// numberEnd returns the end of the (already validated) number at src[i].
func numberEnd(src []byte, i int) int {
	for i < len(src) {
		c := src[i]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			i++
			continue
		}
		break
	}
	return i
}

// stringEnd returns the end of the (already validated) string token at
// src[i], and whether it contains escapes.
func stringEnd(src []byte, i int) (int, bool) {
	i++
	esc := false
	for {
		for i+8 <= len(src) {
			if m := quoteOrBackslash(binary.LittleEndian.Uint64(src[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		switch src[i] {
		case '"':
			return i + 1, esc
		case '\\':
			esc = true
			i += 2
		default:
			i++
		}
	}
}
