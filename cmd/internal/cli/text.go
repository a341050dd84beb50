package cli

// Text as diagnostics and results show it: on one line, controls escaped,
// long pointers shortened, arguments quoted for a shell.

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/idemkey/idemkey/derive"
)

// TrimNL drops one trailing newline.
func TrimNL(b []byte) []byte { return bytes.TrimSuffix(b, []byte{'\n'}) }

// ShellQuote quotes s for a POSIX shell when it needs it.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/_.-~") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ShortPointer keeps a diagnostic on one readable line: a pointer deeper
// than a few dozen tokens is shown by its ends and its depth.
func ShortPointer(p string) string {
	const keep = 60
	if len(p) <= 2*keep {
		return p
	}
	head, tail := p[:keep], p[len(p)-keep:]
	if i := strings.LastIndexByte(head, '/'); i > 0 {
		head = head[:i]
	}
	if i := strings.IndexByte(tail, '/'); i >= 0 {
		tail = tail[i:]
	}
	return fmt.Sprintf("%s/…%s, %d levels deep", head, tail, strings.Count(p, "/"))
}

// PlainText reports whether s is UTF-8 made of printable characters and
// spaces only: safe to show as it is on a terminal, on one line.
func PlainText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return r != ' ' && !strconv.IsPrint(r) })
}

// Printable shows a text as it is when it is short, UTF-8 and made of
// printable characters only; otherwise quoted, and cut (derive.Printable).
func Printable(s string) string { return derive.Printable(s) }

// EscapeControls writes the characters of s that a terminal or a log
// reader would act on instead of showing as Go escapes: C0 and C1
// controls and DEL (\x1b, \r, \t, \u0085), the line and paragraph
// separators and bidirectional controls (\u2028, \u202e), and each byte
// that is not UTF-8 (\xed: the WTF-8 bytes of a lone surrogate too).
// Everything else, backslashes included, is left as it is.
func EscapeControls(s string) string {
	unsafe := func(r rune) bool {
		return r < 0x20 || (r >= 0x7f && r < 0xa0) || r == 0x2028 || r == 0x2029 ||
			(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == utf8.RuneError
	}
	if !strings.ContainsFunc(s, unsafe) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafe(r) && r != utf8.RuneError:
			q := strconv.QuoteRune(r) // '\x1b', '\r', '\u2028'
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// OneLine puts a message on one line.
func OneLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return strings.ReplaceAll(s, "\n", " ")
}

// DiagLine is a diagnostic as it goes to standard error: on one line,
// with whatever could move the cursor, recolour or retitle a terminal, or
// forge a line in a log escaped (see EscapeControls). Member names in
// pointers, server reason phrases and file contents reach diagnostics,
// and none of them is trusted.
func DiagLine(s string) string { return EscapeControls(OneLine(s)) }
