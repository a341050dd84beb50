package canon_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/canon"
)

// errorCases is every kind of bad input, with the exact
// position the error must report: 1-based line and column (in characters),
// byte offset, the JSON Pointer of the value being parsed, a substring of
// the message and, where the reader needs one, of the hint.
var errorCases = []struct {
	name      string
	src       string
	line, col int
	off       int
	ptr       string
	msg, hint string
	only      *canon.Scheme // nil: both schemes
}{
	// Empty input.
	{name: "empty", src: "", line: 1, col: 1, off: 0, msg: "empty input: expected a JSON value", hint: "e.g. {} or null"},
	{name: "whitespace only", src: "   \n\t", line: 2, col: 2, off: 5, msg: "input holds only white space: expected a JSON value"},

	// Trailing commas.
	{name: "trailing comma in array", src: "[1,2,]", line: 1, col: 6, off: 5, msg: "trailing comma before ']'", hint: "comma after the last element"},
	{name: "trailing comma in object", src: `{"a":1,}`, line: 1, col: 8, off: 7, msg: "trailing comma before '}'", hint: "comma after the last member"},
	{name: "trailing comma on next line", src: "[1,\n]", line: 2, col: 1, off: 4, msg: "trailing comma before ']'"},
	{name: "trailing comma nested", src: `{"a":[{"b":[1,]}]}`, line: 1, col: 15, off: 14, ptr: "/a/0/b", msg: "trailing comma before ']'"},

	// Comments.
	{name: "line comment", src: "{\"a\":1 // c\n}", line: 1, col: 8, off: 7, msg: "unexpected character '/' after an object member", hint: "JSON has no comments"},
	{name: "block comment", src: "/* c */ 1", line: 1, col: 1, off: 0, msg: "unexpected character '/' looking for a value", hint: "JSON has no comments"},
	{name: "comment after value", src: "[1] // x", line: 1, col: 5, off: 4, msg: "unexpected character '/' after the JSON value"},

	// Single quotes.
	{name: "single-quoted name", src: `{'a':1}`, line: 1, col: 2, off: 1, msg: `unexpected character '\'' looking for a member name`, hint: "double quotes"},
	{name: "single-quoted value", src: `['x']`, line: 1, col: 2, off: 1, ptr: "/0", msg: `unexpected character '\'' looking for a value`, hint: "double quotes"},

	// NaN and Infinity.
	{name: "NaN", src: "NaN", line: 1, col: 1, off: 0, msg: "unexpected character 'N' looking for a value", hint: "NaN and Infinity are not JSON values"},
	{name: "NaN in array", src: "[NaN]", line: 1, col: 2, off: 1, ptr: "/0", msg: "unexpected character 'N'", hint: "NaN and Infinity"},
	{name: "Infinity", src: `{"x":Infinity}`, line: 1, col: 6, off: 5, ptr: "/x", msg: "unexpected character 'I' looking for a value", hint: "NaN and Infinity"},
	{name: "-Infinity", src: "-Infinity", line: 1, col: 2, off: 1, msg: "invalid number: expected digit after '-'", hint: "NaN and Infinity"},
	{name: "nan", src: "nan", line: 1, col: 1, off: 0, msg: "invalid literal 'nan'", hint: "NaN and Infinity are not JSON values"},
	{name: "not json", src: "not json", line: 1, col: 1, off: 0, msg: "invalid literal 'not'", hint: "a string needs double quotes"},

	// Numbers.
	{name: "leading zero", src: "01", line: 1, col: 1, off: 0, msg: "invalid number: leading zero", hint: "cannot start with 0"},
	{name: "negative leading zero", src: "-01", line: 1, col: 1, off: 0, msg: "invalid number: leading zero"},
	{name: "double zero", src: "[00]", line: 1, col: 2, off: 1, ptr: "/0", msg: "invalid number: leading zero"},
	{name: "plus sign", src: "+1", line: 1, col: 1, off: 0, msg: "unexpected character '+' looking for a value", hint: "no leading '+'"},
	{name: "leading point", src: ".5", line: 1, col: 1, off: 0, msg: "unexpected character '.' looking for a value", hint: "write 0.5"},
	{name: "trailing point", src: "1.", line: 1, col: 3, off: 2, msg: "invalid number: expected digit after decimal point", hint: "write 1.0 or 1"},
	{name: "point before exponent", src: "[1.e5]", line: 1, col: 4, off: 3, ptr: "/0", msg: "expected digit after decimal point"},
	{name: "minus alone", src: "-", line: 1, col: 2, off: 1, msg: "invalid number: expected digit after '-'"},
	{name: "minus in array", src: "[1,-]", line: 1, col: 5, off: 4, ptr: "/1", msg: "expected digit after '-'"},
	{name: "minus space", src: "- 1", line: 1, col: 2, off: 1, msg: "expected digit after '-'"},
	{name: "double minus", src: "--1", line: 1, col: 2, off: 1, msg: "expected digit after '-'"},
	{name: "bare exponent", src: "1e", line: 1, col: 3, off: 2, msg: "invalid number: expected digit in exponent"},
	{name: "signed bare exponent", src: "1E+", line: 1, col: 4, off: 3, msg: "expected digit in exponent"},
	{name: "hex number", src: "0x10", line: 1, col: 2, off: 1, msg: "unexpected character 'x' after the JSON value"},
	{name: "fractional exponent", src: "1e5.5", line: 1, col: 4, off: 3, msg: "unexpected character '.' after the JSON value"},

	// Escapes.
	{name: "bad escape", src: `"\x"`, line: 1, col: 2, off: 1, msg: `invalid escape '\x' in string`, hint: `\uXXXX`},
	{name: "escaped single quote", src: `"\'"`, line: 1, col: 2, off: 1, msg: `invalid escape '\'' in string`},
	{name: "upper-case U escape", src: `"\U0041"`, line: 1, col: 2, off: 1, msg: `invalid escape '\U' in string`},
	{name: "escaped control byte", src: "\"\\\x01\"", line: 1, col: 2, off: 1, msg: `invalid escape in string: '\' followed by byte 0x01`},
	{name: "escaped non-ASCII", src: "\"\\é\"", line: 1, col: 2, off: 1, msg: `invalid escape in string: '\' followed by character U+00E9`},
	{name: "bad escape in name", src: `{"ok":1,"\x":1}`, line: 1, col: 10, off: 9, msg: `invalid escape '\x'`},
	{name: "short \\u", src: `"\u12"`, line: 1, col: 2, off: 1, msg: `invalid \u escape: want four hex digits`, hint: `e.g. \u00e9`},
	{name: "non-hex \\u", src: `"\u12G4"`, line: 1, col: 2, off: 1, msg: `invalid \u escape`},
	{name: "empty \\u", src: `"\u"`, line: 1, col: 2, off: 1, msg: `invalid \u escape`},
	{name: "\\u at end", src: `["\u00`, line: 1, col: 3, off: 2, ptr: "/0", msg: `invalid \u escape`},

	// Raw control characters in strings.
	{name: "raw control", src: "\"a\x01b\"", line: 1, col: 3, off: 2, msg: "invalid control character U+0001 in string", hint: `\u0001`},
	{name: "raw tab", src: "\"a\tb\"", line: 1, col: 3, off: 2, msg: "invalid control character U+0009 in string"},
	{name: "raw NUL", src: "[\"\x00\"]", line: 1, col: 3, off: 2, ptr: "/0", msg: "invalid control character U+0000 in string"},
	{name: "raw newline", src: "{\"k\":\n\"a\nb\"}", line: 2, col: 3, off: 8, ptr: "/k", msg: "invalid control character U+000A in string", hint: "cannot span lines"},
	{name: "raw CR", src: "\"a\rb\"", line: 1, col: 3, off: 2, msg: "invalid control character U+000D"},

	// Trailing data.
	{name: "two numbers", src: "1 2", line: 1, col: 3, off: 2, msg: "unexpected character '2' after the JSON value", hint: "exactly one JSON value"},
	{name: "two objects", src: "{}\n{}", line: 2, col: 1, off: 3, msg: "unexpected character '{' after the JSON value"},
	{name: "extra bracket", src: "[]]", line: 1, col: 3, off: 2, msg: "unexpected character ']' after the JSON value"},
	{name: "literal suffix", src: "nullx", line: 1, col: 5, off: 4, msg: "unexpected character 'x' after the JSON value"},
	{name: "two strings", src: `"a""b"`, line: 1, col: 4, off: 3, msg: `unexpected character '"' after the JSON value`},
	{name: "NUL after value", src: "[1]\x00", line: 1, col: 4, off: 3, msg: "unexpected byte 0x00 after the JSON value"},

	// Invalid UTF-8.
	{name: "bad byte in string", src: "\"\xff\"", line: 1, col: 2, off: 1, msg: "invalid UTF-8 byte 0xff in string", hint: "must be UTF-8"},
	{name: "truncated sequence in string", src: "[\"ab\xc3\"]", line: 1, col: 5, off: 4, ptr: "/0", msg: "invalid UTF-8 byte 0xc3 in string"},
	{name: "overlong in string", src: "\"\xc0\xaf\"", line: 1, col: 2, off: 1, msg: "invalid UTF-8 byte 0xc0 in string"},
	{name: "UTF-8 encoded surrogate", src: "\"\xed\xa0\x80\"", line: 1, col: 2, off: 1, msg: "invalid UTF-8 byte 0xed in string"},
	{name: "Latin-1 name", src: "{\"caf\xe9\":1}", line: 1, col: 6, off: 5, msg: "invalid UTF-8 byte 0xe9 in string"},
	{name: "bad byte outside strings", src: "\xff", line: 1, col: 1, off: 0, msg: "unexpected invalid UTF-8 byte 0xff looking for a value", hint: "must be UTF-8"},
	{name: "bad byte in array", src: "[1,\xff]", line: 1, col: 4, off: 3, ptr: "/1", msg: "invalid UTF-8 byte 0xff", hint: "must be UTF-8"},
	{name: "unquoted non-ASCII name", src: "{é:1}", line: 1, col: 2, off: 1, msg: "unexpected character U+00E9 looking for a member name"},
	{name: "column counts characters", src: "{\n  \"é\": [1,,2]}", line: 2, col: 11, off: 13, ptr: "/é/1", msg: "unexpected character ',' looking for a value"},

	// UTF-16 and byte order marks.
	{name: "UTF-16LE with BOM", src: "\xff\xfe[\x00]\x00", line: 1, col: 1, off: 0, msg: "input looks like UTF-16; JSON must be UTF-8", hint: "iconv"},
	{name: "UTF-16BE with BOM", src: "\xfe\xff\x00[\x00]", line: 1, col: 1, off: 0, msg: "looks like UTF-16"},
	{name: "UTF-16LE without BOM", src: "{\x00}\x00", line: 1, col: 1, off: 0, msg: "looks like UTF-16"},
	{name: "UTF-16BE without BOM", src: "\x00[\x001\x00]", line: 1, col: 1, off: 0, msg: "looks like UTF-16"},
	{name: "NUL bytes", src: "\x00\x00\x00\x00\x00", line: 1, col: 1, off: 0, msg: "input starts with NUL bytes: it is not JSON text", hint: "never holds a NUL byte"},
	{name: "UTF-16BE NUL", src: "\x00\x00", line: 1, col: 1, off: 0, msg: "looks like UTF-16"},
	{name: "UTF-8 BOM", src: "\xef\xbb\xbf{}", line: 1, col: 1, off: 0, msg: "input starts with a UTF-8 byte order mark", hint: "remove the first three bytes"},

	// Unterminated values.
	{name: "unterminated string", src: `"abc`, line: 1, col: 1, off: 0, msg: "unterminated string", hint: `end with '"'`},
	{name: "unterminated member value", src: "{\"a\":\n \"b", line: 2, col: 2, off: 7, ptr: "/a", msg: "unterminated string"},
	{name: "unterminated escape", src: `"abc\`, line: 1, col: 5, off: 4, msg: "unterminated string", hint: `end with '"'`},
	{name: "unterminated array", src: "[1,2", line: 1, col: 5, off: 4, msg: "unexpected end of input after an array element (want ',' or ']')", hint: "the array opened at line 1, column 1 is not closed"},
	{name: "open bracket", src: "[", line: 1, col: 2, off: 1, msg: "unexpected end of input looking for a value", hint: "the array opened at line 1, column 1"},
	{name: "array after comma", src: "{\"a\":\n  [1,", line: 2, col: 6, off: 11, ptr: "/a", msg: "unexpected end of input looking for a value", hint: "the array opened at line 2, column 3 is not closed"},
	{name: "unterminated object", src: `{"a":1`, line: 1, col: 7, off: 6, msg: "unexpected end of input after an object member (want ',' or '}')", hint: "the object opened at line 1, column 1 is not closed"},
	{name: "open brace", src: "[{", line: 1, col: 3, off: 2, ptr: "/0", msg: "unexpected end of input looking for a member name", hint: "the object opened at line 1, column 2 is not closed"},
	{name: "object after name", src: `{"a"`, line: 1, col: 5, off: 4, msg: "unexpected end of input after a member name (want ':')", hint: "the object opened at line 1, column 1"},
	{name: "object after colon", src: `{"a":`, line: 1, col: 6, off: 5, msg: "unexpected end of input looking for a value", hint: "the object opened at line 1, column 1"},
	{name: "unterminated literal", src: "[tru", line: 1, col: 2, off: 1, ptr: "/0", msg: "invalid literal: expected true"},

	// Missing colon or comma, and other misplaced tokens.
	{name: "missing colon", src: `{"a" 1}`, line: 1, col: 6, off: 5, msg: "unexpected character '1' after a member name (want ':')"},
	{name: "missing comma in array", src: "[1 2]", line: 1, col: 4, off: 3, msg: "unexpected character '2' after an array element (want ',' or ']')"},
	{name: "missing comma in object", src: `{"a":1 "b":2}`, line: 1, col: 8, off: 7, msg: `unexpected character '"' after an object member (want ',' or '}')`},
	{name: "number as name", src: "{1:2}", line: 1, col: 2, off: 1, msg: "unexpected character '1' looking for a member name"},
	{name: "colon in array", src: "[1:2]", line: 1, col: 3, off: 2, msg: "unexpected character ':' after an array element"},
	{name: "mismatched close", src: `{"a":1]`, line: 1, col: 7, off: 6, msg: "unexpected character ']' after an object member"},
	{name: "mismatched close array", src: "[1}", line: 1, col: 3, off: 2, msg: "unexpected character '}' after an array element"},
	{name: "leading comma", src: "[,1]", line: 1, col: 2, off: 1, ptr: "/0", msg: "unexpected character ',' looking for a value"},
	{name: "double comma", src: "[1,,2]", line: 1, col: 4, off: 3, ptr: "/1", msg: "unexpected character ',' looking for a value"},
	{name: "empty member", src: "{,}", line: 1, col: 2, off: 1, msg: "unexpected character ',' looking for a member name"},
	{name: "close alone", src: "]", line: 1, col: 1, off: 0, msg: "unexpected character ']' looking for a value"},
	{name: "capitalised literal", src: "True", line: 1, col: 1, off: 0, msg: "unexpected character 'T' looking for a value"},
	{name: "undefined", src: "undefined", line: 1, col: 1, off: 0, msg: "unexpected character 'u' looking for a value"},
	{name: "form feed is not white space", src: "\f1", line: 1, col: 1, off: 0, msg: "unexpected byte 0x0c looking for a value"},
	{name: "NBSP is not white space", src: "\u00a01", line: 1, col: 1, off: 0, msg: "unexpected character U+00A0 looking for a value"},
	{name: "pointer escapes", src: `{"a/b":{"c~d":[1,2,x]}}`, line: 1, col: 20, off: 19, ptr: "/a~1b/c~0d/2", msg: "unexpected character 'x' looking for a value"},
	{name: "pointer through objects and arrays", src: "{\"a\":[{\"b\":\"\x01\"}]}", line: 1, col: 13, off: 12, ptr: "/a/0/b", msg: "invalid control character U+0001"},

	// Accepted by js, errors under jcs.
	{name: "duplicate name", src: "{\"a\":1,\n\"b\":{\"c\":1,\"c\":2}}", line: 2, col: 12, off: 19, ptr: "/b", msg: `duplicate member name "c"`, hint: "first defined at line 2, column 6", only: ptrTo(canon.JCS)},
	{name: "lone surrogate", src: `["ok","\ud800"]`, line: 1, col: 8, off: 7, ptr: "/1", msg: `lone surrogate \ud800 in string`, hint: "RFC 7493", only: ptrTo(canon.JCS)},
	{name: "lone surrogate in name", src: `{"\udfff":1}`, line: 1, col: 3, off: 2, msg: `lone surrogate \udfff in string`, only: ptrTo(canon.JCS)},
	{name: "number out of range", src: `{"n":[1e400]}`, line: 1, col: 7, off: 6, ptr: "/n/0", msg: "number 1e400 is outside the IEEE-754 double range", hint: "§3.2.2.3", only: ptrTo(canon.JCS)},
	{name: "negative number out of range", src: "-2e308", line: 1, col: 1, off: 0, msg: "number -2e308 is outside the IEEE-754 double range", only: ptrTo(canon.JCS)},
}

func ptrTo(s canon.Scheme) *canon.Scheme { return &s }

func TestErrors(t *testing.T) {
	for _, c := range errorCases {
		t.Run(c.name, func(t *testing.T) {
			for _, s := range schemes {
				if c.only != nil && *c.only != s {
					if _, err := canon.Parse([]byte(c.src), s); err != nil {
						t.Errorf("%s: %v; want no error", s, err)
					}
					continue
				}
				d, err := canon.Parse([]byte(c.src), s)
				if d != nil {
					t.Errorf("%s: Parse returned a document with the error", s)
				}
				e := parseErr(t, c.src, s)
				if e.Line != c.line || e.Column != c.col || e.Offset != c.off || e.Pointer != c.ptr ||
					!strings.Contains(e.Msg, c.msg) || !strings.Contains(e.Hint, c.hint) {
					t.Errorf("%s: %q:\n got %d:%d off %d ptr %q msg %q hint %q\nwant %d:%d off %d ptr %q msg ~%q hint ~%q",
						s, c.src, e.Line, e.Column, e.Offset, e.Pointer, e.Msg, e.Hint,
						c.line, c.col, c.off, c.ptr, c.msg, c.hint)
				}
				if want := fmt.Sprintf("%d:%d: %s", e.Line, e.Column, e.Msg); err.Error() != want {
					t.Errorf("%s: Error() = %q, want %q", s, err.Error(), want)
				}
				// The project's style for diagnostics: lower case, one
				// line, no trailing period.
				if m := e.Msg; m == "" || strings.ContainsAny(m, "\n\r") || strings.HasSuffix(m, ".") || m[0] >= 'A' && m[0] <= 'Z' {
					t.Errorf("%s: message style: %q", s, m)
				}
				if strings.ContainsAny(e.Hint, "\n\r") || strings.HasSuffix(e.Hint, ".") {
					t.Errorf("%s: hint style: %q", s, e.Hint)
				}
				// Position agrees with the error's line and column.
				if l, col := canon.Position([]byte(c.src), e.Offset); l != e.Line || col != e.Column {
					t.Errorf("%s: Position(%d) = %d:%d, error says %d:%d", s, e.Offset, l, col, e.Line, e.Column)
				}
			}
		})
	}
}

// TestErrorAppend: the package-level Append reports the same error and
// leaves dst as it was.
func TestErrorAppend(t *testing.T) {
	dst := []byte("keep")
	out, err := canon.Append(dst, []byte("[1,]"), canon.JS)
	if err == nil || string(out) != "keep" || !strings.Contains(err.Error(), "1:4: trailing comma") {
		t.Errorf("Append = %q, %v", out, err)
	}
}

func TestPosition(t *testing.T) {
	src := []byte("ab\nçd\n\n😀x")
	for _, c := range []struct{ off, line, col int }{
		{0, 1, 1}, {2, 1, 3}, {3, 2, 1}, {5, 2, 2}, {7, 3, 1}, {8, 4, 1}, {12, 4, 2}, {13, 4, 3},
	} {
		if l, col := canon.Position(src, c.off); l != c.line || col != c.col {
			t.Errorf("Position(%d) = %d:%d, want %d:%d", c.off, l, col, c.line, c.col)
		}
	}
}

// TestWordErrors: a word where a value belongs is named whole, and the
// NaN/Infinity hint is given for those spellings only, not for any word
// that starts with N or I.
func TestWordErrors(t *testing.T) {
	for _, c := range []struct{ src, msg, hint string }{
		{"not json", "1:1: invalid literal 'not'", "JSON's literals are true, false and null; a string needs double quotes"},
		{`{"a": nope}`, "1:7: invalid literal 'nope'", "JSON's literals are true, false and null; a string needs double quotes"},
		{"[nul]", "1:2: invalid literal 'nul': expected null", ""},
		{"[tru", "1:2: invalid literal: expected true", ""},
		{"falsey", "1:6: unexpected character 'y' after the JSON value", "the input must hold exactly one JSON value"},
		{"nan", "1:1: invalid literal 'nan'", "NaN and Infinity are not JSON values"},
		{"Nope", "1:1: unexpected character 'N' looking for a value", ""},
		{"Infinite", "1:1: unexpected character 'I' looking for a value", ""},
		{"Nothing here", "1:1: unexpected character 'N' looking for a value", ""},
		{"[Infinity]", "1:2: unexpected character 'I' looking for a value", "NaN and Infinity are not JSON values"},
		{"NaN", "1:1: unexpected character 'N' looking for a value", "NaN and Infinity are not JSON values"},
		{"-Infinity", "1:2: invalid number: expected digit after '-'", "NaN and Infinity are not JSON values"},
		{"-Inf", "1:2: invalid number: expected digit after '-'", "NaN and Infinity are not JSON values"},
		{"-Inferno", "1:2: invalid number: expected digit after '-'", ""},
		{"-x", "1:2: invalid number: expected digit after '-'", ""},
		{"None", "1:1: unexpected character 'N' looking for a value", "JSON writes an absent value as null"},
		{"nil", "1:1: invalid literal 'nil'", "JSON writes an absent value as null"},
		{"undefined", "1:1: unexpected character 'u' looking for a value", "JSON writes an absent value as null"},
		{"True", "1:1: unexpected character 'T' looking for a value", "JSON's literals are lower case: true, false, null"},
		{"NULL", "1:1: unexpected character 'N' looking for a value", "JSON's literals are lower case: true, false, null"},
		{"[" + strings.Repeat("n", 50) + "]", "1:2: invalid literal '" + strings.Repeat("n", 40) + "…'", "JSON's literals are true, false and null; a string needs double quotes"},
	} {
		for _, s := range schemes {
			e := parseErr(t, c.src, s)
			if e.Error() != c.msg || e.Hint != c.hint {
				t.Errorf("%s: %q: %q, hint %q; want %q, hint %q", s, c.src, e.Error(), e.Hint, c.msg, c.hint)
			}
		}
	}
}
