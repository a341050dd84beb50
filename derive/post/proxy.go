package post

import (
	"net"
	"net/url"
	"strings"
)

// ProxyFor returns the proxy curl would use for target, from the
// environment, or nil:
//
//   - http:// URLs use http_proxy, in lower case only: an upper-case
//     HTTP_PROXY can be set by a request header in CGI programs (httpoxy),
//     so curl ignores it;
//   - https:// URLs use https_proxy or HTTPS_PROXY;
//   - either falls back to all_proxy or ALL_PROXY;
//   - no_proxy (or NO_PROXY) lists hosts reached directly: "*" for all, a
//     name matches itself and its subdomains (a leading dot is optional),
//     an IP address or CIDR range matches addresses in it. Loopback
//     addresses are not special, as in curl (Go's default skips them).
//
// A proxy given without a scheme is an HTTP proxy.
func ProxyFor(getenv func(string) string, target *url.URL) (*url.URL, error) {
	var p string
	switch target.Scheme {
	case "http":
		p = getenv("http_proxy")
	case "https":
		p = firstEnv(getenv, "https_proxy", "HTTPS_PROXY")
	}
	if p == "" {
		p = firstEnv(getenv, "all_proxy", "ALL_PROXY")
	}
	if p == "" || noProxy(firstEnv(getenv, "no_proxy", "NO_PROXY"), target.Hostname()) {
		return nil, nil
	}
	if !strings.Contains(p, "://") {
		p = "http://" + p
	}
	u, err := url.Parse(p)
	if err != nil || u.Host == "" {
		return nil, usageErrorf("invalid proxy in the environment: %s", RedactURL(p))
	}
	return u, nil
}

// firstEnv returns the first of the variables that is set.
func firstEnv(getenv func(string) string, names ...string) string {
	for _, n := range names {
		if v := getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// noProxy reports whether host matches the no_proxy list.
func noProxy(list, host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	ip := net.ParseIP(host)
	for _, e := range strings.Split(list, ",") {
		e = strings.ToLower(strings.TrimSpace(e))
		switch {
		case e == "":
			continue
		case e == "*":
			return true
		}
		e = strings.TrimPrefix(strings.TrimSuffix(e, "]"), "[")
		if ip != nil {
			if _, n, err := net.ParseCIDR(e); err == nil {
				if n.Contains(ip) {
					return true
				}
				continue
			}
			if eip := net.ParseIP(e); eip != nil && eip.Equal(ip) {
				return true
			}
			continue
		}
		if h, _, err := net.SplitHostPort(e); err == nil {
			e = h
		}
		e = strings.TrimSuffix(strings.TrimPrefix(e, "."), ".")
		if host == e || strings.HasSuffix(host, "."+e) {
			return true
		}
	}
	return false
}
