package mcp

import (
	"net/url"
	"sort"
	"strings"
)

// A server's URL may carry secrets: a password in its userinfo, an API
// key or a token in its query string. They are never printed, recorded
// or told to the model: every reason, diagnostic and error text idemkey
// makes passes through a Redactor of the URL.

// RedactURL is the URL as idemkey shows it: the userinfo's password and
// every query value replaced by xxxxx (the names kept, to tell which),
// the fragment dropped.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(the --url, which could not be read)"
	}
	return redacted(u)
}

func redacted(u *url.URL) string {
	r := *u
	r.Fragment, r.RawFragment = "", ""
	if r.User != nil {
		if _, has := r.User.Password(); has {
			r.User = url.UserPassword(r.User.Username(), "xxxxx")
		}
	}
	if r.RawQuery != "" {
		var parts []string
		for _, kv := range strings.Split(r.RawQuery, "&") {
			name, _, _ := strings.Cut(kv, "=")
			parts = append(parts, name+"=xxxxx")
		}
		r.RawQuery = strings.Join(parts, "&")
	}
	return r.String()
}

// Redactor returns a function that replaces, in a text, the secrets of
// the URL raw: the URL in the spellings an error may print it in (as
// given, as net/url writes it, without its password), then its query
// string, its query values and its password wherever they still appear.
func Redactor(raw string) func(string) string {
	u, err := url.Parse(raw)
	if err != nil || raw == "" {
		return func(s string) string { return s }
	}
	shown := redacted(u)
	whole := map[string]bool{raw: true, u.String(): true}
	if u.User != nil {
		s := *u
		s.User = url.User(u.User.Username())
		whole[s.String()] = true
		// As net/http's errors write it.
		whole[strings.Replace(u.String(), u.User.String()+"@", s.User.String()+":***@", 1)] = true
	}
	var secrets []string
	for w := range whole {
		secrets = append(secrets, w)
	}
	sort.Slice(secrets, func(i, j int) bool { return len(secrets[i]) > len(secrets[j]) })
	var parts []string
	if u.RawQuery != "" {
		parts = append(parts, u.RawQuery)
		for _, kv := range strings.Split(u.RawQuery, "&") {
			if _, v, ok := strings.Cut(kv, "="); ok && len(v) >= 4 {
				parts = append(parts, v)
				if d, err := url.QueryUnescape(v); err == nil && d != v {
					parts = append(parts, d)
				}
			}
		}
	}
	if u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			parts = append(parts, p, url.QueryEscape(p), url.PathEscape(p))
		}
	}
	sort.Slice(parts, func(i, j int) bool { return len(parts[i]) > len(parts[j]) })
	return func(s string) string {
		for _, w := range secrets {
			s = strings.ReplaceAll(s, w, shown)
		}
		for _, p := range parts {
			if p != "" {
				s = strings.ReplaceAll(s, p, "xxxxx")
			}
		}
		return s
	}
}
