package post

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// ParseURL accepts http and https URLs; with no scheme, http is
// assumed, as curl does. A malformed URL is curl's exit 3; a password in
// it is never echoed.
func ParseURL(raw string) (*url.URL, error) {
	if i := strings.IndexByte(raw, ' '); i >= 0 {
		// Go's client would escape one in the path and write one in the
		// query raw, splitting the request line; curl refuses both.
		return nil, &Error{CurlURLMalformat, fmt.Errorf("invalid URL %q: a space at byte %d (percent-encode it as %%20)", RedactText(raw, raw), i+1)}
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		msg := RootCause(err)
		var ue *url.Error
		if errors.As(err, &ue) {
			msg = ue.Err.Error()
		}
		return nil, &Error{CurlURLMalformat, fmt.Errorf("invalid URL %q: %s", RedactURL(raw), RedactText(msg, raw))}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, usageErrorf("unsupported protocol %q in URL (want http or https)", u.Scheme)
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, &Error{CurlURLMalformat, fmt.Errorf("invalid URL %q: no host", u.Redacted())}
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n > 65535 {
			return nil, &Error{CurlURLMalformat, fmt.Errorf("invalid URL %q: port %s is not between 0 and 65535", u.Redacted(), p)}
		}
	}
	return u, nil
}

// RedactText removes the password of raw (a URL) from msg.
func RedactText(msg, raw string) string {
	rest := raw
	if i := strings.Index(raw, "://"); i >= 0 {
		rest = raw[i+3:]
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		if _, pass, ok := strings.Cut(rest[:at], ":"); ok && pass != "" {
			msg = strings.ReplaceAll(msg, pass, "xxxxx")
		}
	}
	return msg
}
