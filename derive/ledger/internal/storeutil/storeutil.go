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

// shownParams reports whether a URL parameter's value may be printed: the
// ones idemkey's stores and their drivers (pgx, go-redis) read that name
// a place, a mode or a limit, never a credential. Every other parameter's
// value is hidden, a known secret (password, sslpassword: a TLS key's
// passphrase) or not: an unknown parameter may be a driver's new secret,
// or a password typed in the wrong place. A switch, not a map: nothing to
// build at package initialisation, which every idemkey process pays.
func shownParams(name string) bool {
	switch name {
	// the stores' own
	case "table", "prefix", "ttl":
		return true
	case "replicas", "replica_timeout":
		return true
	// libpq and pgx
	case "host", "hostaddr", "port", "dbname", "user":
		return true
	case "sslmode", "sslrootcert", "sslcert", "sslkey", "sslsni", "sslnegotiation":
		return true
	case "connect_timeout", "application_name", "target_session_attrs":
		return true
	case "default_query_exec_mode", "statement_cache_capacity", "description_cache_capacity":
		return true
	// go-redis
	case "db", "protocol", "client_name", "addr", "skip_verify":
		return true
	case "dial_timeout", "read_timeout", "write_timeout", "pool_fifo":
		return true
	case "pool_size", "pool_timeout", "min_idle_conns", "max_idle_conns":
		return true
	case "max_active_conns", "conn_max_idle_time", "conn_max_lifetime":
		return true
	case "max_retries", "min_retry_backoff", "max_retry_backoff":
		return true
	}
	return false
}

const hidden = "xxxxx"

// Redact returns the URL as it may be printed: its password (in the user
// info) and the value of every parameter not in shownParams replaced by
// xxxxx, and so are a fragment (a "#" typed in a password cuts it there)
// and a query that does not parse. raw is the URL alone: a space in it is
// part of the URL (of a password, typed unescaped), never the start of
// text to keep as it is.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an unparsable URL)"
	}
	if u.Opaque != "" {
		u.Opaque = hidden
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), hidden)
	}
	if u.RawQuery != "" {
		u.RawQuery = redactQuery(u.RawQuery)
	}
	if u.Fragment != "" {
		u.Fragment, u.RawFragment = hidden, ""
	}
	return u.String()
}

// redactQuery hides the values of the parameters not in shownParams,
// keeping the others as they were typed, in their order; a query that does
// not parse is hidden whole.
func redactQuery(raw string) string {
	if _, err := url.ParseQuery(raw); err != nil {
		return hidden
	}
	pairs := strings.Split(raw, "&")
	for i, kv := range pairs {
		k, _, _ := strings.Cut(kv, "=")
		if name, _ := url.QueryUnescape(k); !shownParams(name) {
			pairs[i] = k + "=" + hidden
		}
	}
	return strings.Join(pairs, "&")
}

// Secrets lists the strings of raw that must never be printed, raw and
// escaped: its password, the values of its parameters that Redact hides,
// its fragment.
func Secrets(raw string) []string {
	var s []string
	add := func(p string) {
		if len(p) >= 3 {
			s = append(s, p, url.QueryEscape(p), url.PathEscape(p))
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return s
	}
	if p, ok := u.User.Password(); ok {
		add(p)
	}
	add(u.Opaque)
	add(u.Fragment)
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		// Every piece of a query that does not parse.
		for _, kv := range strings.Split(u.RawQuery, "&") {
			_, v, _ := strings.Cut(kv, "=")
			add(v)
		}
		return s
	}
	for name, vs := range q {
		if !shownParams(name) {
			for _, v := range vs {
				add(v)
			}
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
