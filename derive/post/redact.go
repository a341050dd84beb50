package post

import (
	"net/http"
	"net/url"
	"strings"
)

// ReplayHeader returns the header that says the response is a replay of
// the one saved for this key (Idempotent-Replayed: true, and the variants
// servers use), or "".
func ReplayHeader(h http.Header) string {
	for name, vals := range h {
		n := strings.ToLower(name)
		if !strings.Contains(n, "idempot") || !strings.Contains(n, "replay") {
			continue
		}
		for _, v := range vals {
			if v := strings.ToLower(strings.TrimSpace(v)); v == "true" || v == "1" || v == "yes" {
				return name + ": " + strings.TrimSpace(vals[0])
			}
		}
	}
	return ""
}

// SecretHeader reports whether a header's value is a credential, shown as
// "[redacted]" in -v and --dry-run output and not sent to another host
// when -L follows a redirect there.
func SecretHeader(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case "cookie", "set-cookie", "x-api-key", "api-key", "apikey", "x-goog-api-key", "dpop":
		return true
	}
	for _, w := range []string{"auth", "token", "secret", "password", "passwd", "session", "api-key", "apikey", "credential", "signature"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// authSchemes are the authorization schemes whose name redact keeps.
var authSchemes = map[string]bool{
	"basic": true, "bearer": true, "digest": true, "token": true, "negotiate": true, "ntlm": true,
	"hoba": true, "mutual": true, "vapid": true, "dpop": true, "privatetoken": true, "oauth": true,
	"aws4-hmac-sha256": true, "scram-sha-1": true, "scram-sha-256": true, "gnap": true, "apikey": true,
}

// Redact returns a header value fit to print: credentials are replaced,
// a known authorization scheme ("Basic", "Bearer") is kept.
func Redact(name, value string) string {
	if !SecretHeader(name) {
		return value
	}
	n := strings.ToLower(name)
	if n == "authorization" || n == "proxy-authorization" {
		if scheme, _, ok := strings.Cut(strings.TrimSpace(value), " "); ok && authSchemes[strings.ToLower(scheme)] {
			return scheme + " [redacted]"
		}
	}
	return "[redacted]"
}

// RedactURL hides the password of a URL that may not parse.
func RedactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	rest, scheme := raw, ""
	if i := strings.Index(raw, "://"); i >= 0 {
		scheme, rest = raw[:i+3], raw[i+3:]
	}
	authEnd := strings.IndexAny(rest, "/?#")
	if authEnd < 0 {
		authEnd = len(rest)
	}
	if at := strings.LastIndex(rest[:authEnd], "@"); at >= 0 {
		user, _, hasPass := strings.Cut(rest[:at], ":")
		if hasPass {
			return scheme + user + ":xxxxx" + rest[at:]
		}
	}
	return raw
}
