package cmd

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/idemkey/idemkey/canon"
)

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

func checkKeyHeader(name string) error {
	if !validHeaderName(name) {
		return usageErrorf("invalid --key-header %q", postPrintable(name))
	}
	c := http.CanonicalHeaderKey(name)
	switch {
	case slices.Contains(transportHeaders, c) || c == "Expect":
		return &UsageError{Err: fmt.Errorf("--key-header %s cannot carry the key: Go's HTTP client writes, drops or rewrites that header", name),
			hint: "use the default Idempotency-Key, or another name the server reads (X-Idempotency-Key)"}
	case slices.Contains(ownHeaders, c) || strings.HasPrefix(name, ":"):
		return &UsageError{Err: fmt.Errorf("--key-header %s cannot carry the key: idemkey sends that header for its own purpose", name),
			hint: "use the default Idempotency-Key, or another name the server reads (X-Idempotency-Key)"}
	}
	return nil
}

// postCheckHeaderText refuses a value with a control character (CR and LF
// would inject header lines), before anything is sent.
func postCheckHeaderText(what, v string) error {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return &UsageError{Err: fmt.Errorf("%s contains the control character %s at byte %d", what, postCtrlName(c), i+1),
				hint: "a header value is one line of text; CR and LF would start a new header"}
		}
	}
	return nil
}

func postCtrlName(c byte) string {
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

// postPrintable makes s printable on one line.
func postPrintable(s string) string {
	q := strconv.QuoteToASCII(s)
	return q[1 : len(q)-1]
}

// parseHeaderLine splits one -H line as curl does: "Name: value" sets it,
// "Name:" removes a default header, "Name;" sends it empty. Its errors
// never echo the value: a malformed 'Authorization Bearer …' holds a token.
func parseHeaderLine(line string) (name, value string, empty bool, err error) {
	name, value, ok := strings.Cut(line, ":")
	if !ok {
		n, rest, semi := strings.Cut(line, ";")
		if !semi || strings.TrimSpace(rest) != "" {
			word, _, _ := strings.Cut(strings.TrimSpace(line), " ")
			return "", "", false, &UsageError{
				Err:  fmt.Errorf("invalid -H starting with %q: want 'Name: value'", postPrintable(postTrunc(word, 40))),
				hint: "the rest of the line is not shown, as it may hold a credential"}
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
		return "", "", false, &UsageError{Err: fmt.Errorf("invalid -H header name starting with %q: it %s", postTrunc(name[:i], 40), what),
			hint: "a header name is a token: letters, digits and !#$%&'*+-.^_`|~"}
	}
	if err := postCheckHeaderText("-H "+name, value); err != nil {
		return "", "", false, err
	}
	// Removing one ("Connection:") is a no-op and curl users write
	// -H 'Expect:' out of habit; setting one is refused.
	if c := http.CanonicalHeaderKey(name); c != "Host" && slices.Contains(transportHeaders, c) && (value != "" || empty) {
		return "", "", false, &UsageError{Err: fmt.Errorf("-H %s is not sent as given: Go's HTTP client writes that header itself", name),
			hint: "idemkey sends the body with its exact Content-Length, on a connection of its own"}
	}
	return name, value, empty, nil
}

func postTrunc(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// lossError refuses a body whose canonical form denotes other values than
// the input: the key is still the harness's, but the server would store
// something else than what was written.
func lossError(name string, args canon.Node) error {
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
			parts = append(parts, fmt.Sprintf("at %s the repeated name would drop the value %s and keep %s", ptr, postTrunc(l.Input, 40), postTrunc(l.Output, 40)))
		default:
			parts = append(parts, fmt.Sprintf("at %s %s would be sent as %s", ptr, postTrunc(l.Input, 60), l.Output))
		}
	}
	return &InputError{Name: name, Err: &hintedError{
		msg: "the canonical body would change a value: " + strings.Join(parts, "; "),
		hint: "--send-as-is sends the original bytes (the key stays the same); " +
			"--lossy sends the canonical form anyway",
	}}
}

// addHeader applies one -H line (checked by parseHeaderLine).
func (o *postOptions) addHeader(req *http.Request, line string) error {
	name, value, empty, err := parseHeaderLine(line)
	if err != nil {
		return err
	}
	if strings.EqualFold(name, o.KeyHeader) {
		return &UsageError{Err: fmt.Errorf("-H sets %s, which idemkey derives from the call", o.KeyHeader),
			hint: "use --key-header NAME to send the key under another name"}
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

func isDefaultHeader(name string) bool {
	switch http.CanonicalHeaderKey(name) {
	case "User-Agent", "Accept", "Content-Type", "Authorization":
		return true
	}
	return false
}
