package post

import (
	"net/http"
	"net/url"
	"strings"
)

// Redirect returns the request -L sends after resp, by curl's rules, or
// ok false when resp is the response (not a redirect, no Location). next is nil when the Location is unusable.
//
//   - 307 and 308: the same method, the same body and the same key again;
//   - 303: GET without a body; 301 and 302: a POST becomes a GET without
//     a body, PUT and PATCH are sent again as they were;
//   - to another scheme, host or port, no credential goes along
//     (Authorization, cookies, and the other headers -v redacts), as curl
//     keeps Authorization and Cookie to the host they were given for.
//
// keyHeader, the key's header, goes along to any host.
func Redirect(req *http.Request, body []byte, resp *http.Response, keyHeader string) (next *http.Request, nextBody []byte, ok bool) {
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
	default:
		return nil, nil, false
	}
	loc := resp.Header.Get("Location")
	if loc == "" {
		return nil, nil, false
	}
	u, err := req.URL.Parse(loc)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return nil, nil, true
	}
	next = req.Clone(req.Context())
	next.URL, next.Host = u, req.Host
	nextBody = body
	switch {
	case resp.StatusCode == http.StatusSeeOther,
		resp.StatusCode != http.StatusTemporaryRedirect && resp.StatusCode != http.StatusPermanentRedirect && req.Method == http.MethodPost:
		next.Method, nextBody = http.MethodGet, nil
		next.Header.Del("Content-Type")
	}
	if !sameOrigin(req.URL, u) {
		next.Host = ""
		for name := range next.Header {
			if SecretHeader(name) && !strings.EqualFold(name, keyHeader) {
				next.Header.Del(name)
			}
		}
	}
	return next, nextBody, true
}

// sameOrigin reports whether two URLs have one scheme, host and port.
func sameOrigin(a, b *url.URL) bool {
	return a.Scheme == b.Scheme && strings.EqualFold(a.Hostname(), b.Hostname()) && portOf(a) == portOf(b)
}

// portOf is a URL's port, or its scheme's default.
func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
}
