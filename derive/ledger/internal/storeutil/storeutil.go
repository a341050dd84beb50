// Package storeutil holds what the network stores share: hiding a URL's
// secrets in messages, and telling whether a write whose connection broke
// took effect.
package storeutil

import (
	"net/url"
	"strings"
	"time"

	"github.com/idemkey/idemkey/derive/ledger"
)

// Redact returns the URL with its password (in the user info or a
// password parameter) replaced by xxxxx. raw is the URL alone: a space in
// it is part of the URL (of a password, typed unescaped), never the start
// of text to keep as it is.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an unparsable URL)"
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	if q, err := url.ParseQuery(u.RawQuery); err == nil && q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// Secrets lists the strings of raw that must never be printed: its
// password, raw and escaped.
func Secrets(raw string) []string {
	var s []string
	add := func(p string) {
		if len(p) >= 3 {
			s = append(s, p, url.QueryEscape(p), url.PathEscape(p))
		}
	}
	if u, err := url.Parse(raw); err == nil {
		if p, ok := u.User.Password(); ok {
			add(p)
		}
		if q, err := url.ParseQuery(u.RawQuery); err == nil {
			add(q.Get("password"))
		}
	}
	return s
}

// RedactErr returns err with every secret in its message replaced by
// xxxxx, on one line (drivers join the errors of several addresses with
// newlines and tabs); errors.Is and errors.As still see the original.
func RedactErr(err error, secrets []string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := msg
	for _, p := range secrets {
		clean = strings.ReplaceAll(clean, p, "xxxxx")
	}
	if strings.ContainsAny(clean, "\n\t") {
		clean = strings.Join(strings.Fields(clean), " ")
	}
	if clean == msg {
		return err
	}
	return &redacted{msg: clean, err: err}
}

type redacted struct {
	msg string
	err error
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }

// Same reports whether stored is the record a write of rec left: after a
// connection broke mid-write, a retry that matches nothing asks whether
// the first try took effect. Holder (host and pid) and the times to the
// millisecond make another writer's identical record practically
// impossible.
//
// The claim token, when rec has one, settles it: 128 random bits that
// only this attempt's writes carry.
func Same(stored, rec *ledger.Record) bool {
	return stored != nil && stored.Attempt == rec.Attempt && stored.Token == rec.Token && stored.State == rec.State &&
		stored.Holder == rec.Holder && stored.Fingerprint == rec.Fingerprint &&
		stored.ExitCode == rec.ExitCode && stored.Reason == rec.Reason &&
		stored.StartedAt.Sub(rec.StartedAt).Abs() < time.Millisecond &&
		stored.EndedAt.Sub(rec.EndedAt).Abs() < time.Millisecond
}

// SameInsert is Same for an insert, whose attempt the store chose (the
// larger of rec's and one more than the key's high-water mark): a stored
// record with rec's token is rec at whatever attempt it was stored.
func SameInsert(stored, rec *ledger.Record) bool {
	if stored == nil || rec.Token == "" || stored.Token != rec.Token {
		return false
	}
	r := *rec
	r.Attempt = stored.Attempt
	return Same(stored, &r)
}
