package post

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/idemkey/idemkey/canon"
)

// validHeaderName reports whether s is a header name: an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return false
		}
	}
	return true
}

// transportHeaders are the headers Go's HTTP client writes itself, drops
// or rewrites: a key sent under one of these names would not arrive, and
// an -H for one would not be what is sent.
var transportHeaders = []string{
	"Host", "Content-Length", "Transfer-Encoding", "Trailer", "Connection", "Upgrade",
	"Keep-Alive", "Proxy-Connection", "Te",
}

// ownHeaders are set by idemkey from its own flags; the key under one of
// these names would replace the body's type or the credentials.
var ownHeaders = []string{"Content-Type", "Accept", "User-Agent", "Authorization", "Proxy-Authorization", "Cookie"}

// CheckKeyHeader refuses a key header name that cannot carry the key;
// src names where it came from (--key-header, IDEMKEY_KEY_HEADER, the
// config file's line).
func CheckKeyHeader(name, src string) error {
	if !validHeaderName(name) {
		return usageErrorf("invalid %s %q", src, name)
	}
	c := http.CanonicalHeaderKey(name)
	switch {
	case slices.Contains(transportHeaders, c) || c == "Expect":
		return &UsageError{Err: fmt.Errorf("%s %s cannot carry the key: Go's HTTP client writes, drops or rewrites that header", src, name),
			Advice: "use the default Idempotency-Key, or another name the server reads (X-Idempotency-Key)"}
	case slices.Contains(ownHeaders, c) || strings.HasPrefix(name, ":"):
		return &UsageError{Err: fmt.Errorf("%s %s cannot carry the key: idemkey sends that header for its own purpose", src, name),
			Advice: "use the default Idempotency-Key, or another name the server reads (X-Idempotency-Key)"}
	}
	return nil
}

// CheckHeaderText refuses a value with a control character (CR and LF
// would inject header lines), before anything is sent.
func CheckHeaderText(what, v string) error {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return &UsageError{Err: fmt.Errorf("%s contains the control character %s at byte %d", what, ctrlName(c), i+1),
				Advice: "a header value is one line of text; CR and LF would start a new header"}
		}
	}
	return nil
}

// ctrlName names a control character for a message.
func ctrlName(c byte) string {
	switch c {
	case '\r':
		return `\r (CR)`
	case '\n':
		return `\n (LF)`
	case 0:
		return `\x00 (NUL)`
	}
	return fmt.Sprintf(`\x%02x`, c)
}

// printable makes s printable on one line.
func printable(s string) string {
	q := strconv.QuoteToASCII(s)
	return q[1 : len(q)-1]
}

// ParseHeaderLine splits one -H line as curl does: "Name: value" sets it,
// "Name:" removes a default header, "Name;" sends it empty. Its errors
// never echo the value: a malformed 'Authorization Bearer …' holds a token.
func ParseHeaderLine(line string) (name, value string, empty bool, err error) {
	name, value, ok := strings.Cut(line, ":")
	if !ok {
		n, rest, semi := strings.Cut(line, ";")
		if !semi || strings.TrimSpace(rest) != "" {
			word, _, more := strings.Cut(strings.TrimSpace(line), " ")
			if !more {
				// One word is all there is: -H "$TOKEN" would echo the token.
				return "", "", false, &UsageError{
					Err:    fmt.Errorf("invalid -H of one word (%d bytes): want 'Name: value'", len(word)),
					Advice: "the word is not shown, as it may be a credential"}
			}
			return "", "", false, &UsageError{
				Err:    fmt.Errorf("invalid -H starting with %q: want 'Name: value'", printable(trunc(word, 40))),
				Advice: "the rest of the line is not shown, as it may hold a credential"}
		}
		name, empty = n, true
	}
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	if !validHeaderName(name) {
		i := 0
		for i < len(name) && validHeaderName(name[i:i+1]) {
			i++
		}
		what := "is empty"
		if i < len(name) {
			what = fmt.Sprintf("has %s at byte %d", strconv.QuoteToASCII(name[i:i+1]), i+1)
		}
		return "", "", false, &UsageError{Err: fmt.Errorf("invalid -H header name starting with %q: it %s", trunc(name[:i], 40), what),
			Advice: "a header name is a token: letters, digits and !#$%&'*+-.^_`|~"}
	}
	if err := CheckHeaderText("-H "+name, value); err != nil {
		return "", "", false, err
	}
	// Removing one ("Connection:") is a no-op and curl users write
	// -H 'Expect:' out of habit; setting one is refused.
	if c := http.CanonicalHeaderKey(name); c != "Host" && slices.Contains(transportHeaders, c) && (value != "" || empty) {
		return "", "", false, &UsageError{Err: fmt.Errorf("-H %s is not sent as given: Go's HTTP client writes that header itself", name),
			Advice: "idemkey sends the body with its exact Content-Length, on a connection of its own"}
	}
	return name, value, empty, nil
}

// trunc cuts s to n bytes, marking the cut with an ellipsis.
func trunc(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// CheckLosses refuses a body whose canonical form denotes other values
// than the input: the key is still the harness's, but the server would
// store something else than what was written. The error is a *Hinted.
func CheckLosses(args canon.Node) error {
	ls := args.Losses(4)
	if len(ls) == 0 {
		return nil
	}
	var parts []string
	for _, l := range ls {
		ptr := l.Pointer
		if ptr == "" {
			ptr = "the root"
		}
		switch l.Kind {
		case canon.LossDuplicate:
			parts = append(parts, fmt.Sprintf("at %s the repeated name would drop the value %s and keep %s", ptr, trunc(l.Input, 40), trunc(l.Output, 40)))
		default:
			parts = append(parts, fmt.Sprintf("at %s %s would be sent as %s", ptr, trunc(l.Input, 60), l.Output))
		}
	}
	return &Hinted{
		Msg: "the canonical body would change a value: " + strings.Join(parts, "; "),
		Advice: "--send-as-is sends the original bytes (the key stays the same); " +
			"--lossy sends the canonical form anyway",
	}
}

// AddHeader applies one -H line (checked by ParseHeaderLine) to req, as
// curl does: it replaces a default header (User-Agent, Accept,
// Content-Type, Authorization), adds to others, "Name:" removes one. A
// line that sets keyHeader is refused: the key is derived, never given.
func AddHeader(req *http.Request, line, keyHeader string) error {
	name, value, empty, err := ParseHeaderLine(line)
	if err != nil {
		return err
	}
	if strings.EqualFold(name, keyHeader) {
		return &UsageError{Err: fmt.Errorf("-H sets %s, which idemkey derives from the call", keyHeader),
			Advice: "use --key-header NAME to send the key under another name"}
	}
	switch {
	case strings.EqualFold(name, "Host"):
		req.Host = value
	case value == "" && !empty && strings.EqualFold(name, "User-Agent"):
		// Go's client writes its own User-Agent when there is none; an
		// empty one is not written at all.
		req.Header["User-Agent"] = []string{""}
	case value == "" && !empty:
		req.Header.Del(name)
	case len(req.Header.Values(name)) > 0 && isDefaultHeader(name):
		req.Header.Set(name, value)
	default:
		req.Header.Add(name, value)
	}
	return nil
}

// isDefaultHeader reports whether idemkey sets the header itself, so
// that an -H for it replaces the default rather than adding to it.
func isDefaultHeader(name string) bool {
	switch http.CanonicalHeaderKey(name) {
	case "User-Agent", "Accept", "Content-Type", "Authorization":
		return true
	}
	return false
}
