package diff

// Safe advice: which differing field may be left out of the key. A hint to
// --omit a field merges every two calls that differ only there, so it is
// given only for request metadata that a retry regenerates (a timestamp of
// the attempt, a request or trace id, a nonce, an attempt counter), never
// for a field that identifies the effect (an amount, a recipient, a title,
// a start time, the id of an order): leaving that out would let two
// distinct writes share a key, and the later one would be lost.

import (
	"math"
	"strings"
	"sync"
	"unicode"

	"github.com/idemkey/idemkey/canon"
)

// Shape is what two differing values look like.
type Shape uint8

const (
	ShapeOther   Shape = iota // anything else: a value
	ShapeTime                 // two date-times, or two epoch times in one unit
	ShapeID                   // two random-looking identifiers of one kind
	ShapeCounter              // two integers
)

// ShapeOf says what two differing values look like.
func ShapeOf(a, b canon.Node) Shape {
	switch {
	case a.Kind() == canon.String && b.Kind() == canon.String:
		return stringShape(a.Text(), b.Text())
	case a.Kind() == canon.Number && b.Kind() == canon.Number:
		x, ok1 := a.Float()
		y, ok2 := b.Float()
		if !ok1 || !ok2 {
			return ShapeOther
		}
		if _, ok := EpochUnit(x, y); ok {
			return ShapeTime
		}
		if x == math.Trunc(x) && y == math.Trunc(y) {
			return ShapeCounter
		}
	}
	return ShapeOther
}

func stringShape(a, b string) Shape {
	if x, ok := EpochDigits(a); ok {
		if y, ok := EpochDigits(b); ok {
			if _, ok := EpochUnit(x, y); ok {
				return ShapeTime
			}
		}
	}
	if _, ok := ParseTime(a); ok {
		if _, ok := ParseTime(b); ok {
			return ShapeTime
		}
	}
	if pa, ok := IDShape(a); ok {
		if pb, ok := IDShape(b); ok && pa == pb {
			return ShapeID
		}
	}
	return ShapeOther
}

// The words of field names. A name is split into words at every character
// that is not a letter or digit and where lower case turns to upper
// ("sentAtMs" is sent, at, ms), and the words are lower-cased.
var (
	// The time of the attempt itself.
	attemptTimeWords = words("ts timestamp sent created updated modified requested issued generated emitted submitted received logged recorded attempted retried now clock")
	// Words that make "time", "at", "date", "ms" or "epoch" the attempt's:
	// request_time, client_ts, call_at, a Date header.
	attemptWords = words("request req client call attempt retry server local current meta metadata headers header")
	plainTime    = words("time at date ms epoch stamp")
	// Identifiers of the request, not of what it does.
	requestIDWords = words("request req requestid reqid trace traceid traceparent tracestate tracing span spanid " +
		"correlation corr correlationid nonce dedup dedupe")
	// Counters of attempts.
	attemptCountWords = words("attempt attempts retry retries try tries redelivery redeliveries")
	// Words that say the field is part of what the call does, whatever
	// else its name says: request_amount, send_at, start_time, expires_at.
	effectWords = words("amount price total cost fee qty quantity balance to from recipient recipients cc bcc " +
		"subject title body message text content note notes comment description label labels tag tags attendees " +
		"start end begin due deadline scheduled schedule send until expires expiry valid duration delay " +
		"order product sku item address email phone name file path url branch repo " +
		"issue ticket invoice payment refund charge transfer appointment meeting event reminder booking publish")
	// Words that say who the call acts for or as: a tenant, an account, a
	// user, a key or a credential. Two calls that differ there are two
	// writes whatever the values look like, so these are never left out
	// (X-Tenant-Id, X-Api-Key, Authorization, customer_id).
	identityWords = words("account accounts acct accountid tenant tenants tenantid user users userid username " +
		"customer customers customerid org orgid organization organisation workspace team owner member principal " +
		"key keys apikey api authorization auth authn authz bearer token credential credentials secret password " +
		"session sessionid login signature sig")
)

// A wordSet is a set of words built on first use: building the sets above
// at package initialisation cost every idemkey process, a `key` call too,
// 0.1 M instructions.
type wordSet struct {
	list string
	once sync.Once
	set  map[string]bool
}

func words(list string) *wordSet { return &wordSet{list: list} }

// has reports whether w is in the set.
func (s *wordSet) has(w string) bool {
	s.once.Do(func() {
		s.set = map[string]bool{}
		for _, w := range strings.Fields(s.list) {
			s.set[w] = true
		}
	})
	return s.set[w]
}

// nameWords splits a member name into lower-case words.
func nameWords(name string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	prev := rune(0)
	for _, r := range name {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
		prev = r
	}
	flush()
	return out
}

// Regenerated reports whether a field at pointer (RFC 6901, relative to
// the arguments) whose values differ as shape says is request metadata
// that each attempt regenerates, so that leaving it out of the key gives a
// call's retries one key without merging distinct calls. It is the one
// rule of every --omit that drift and diff advise.
//
// The name decides, never the look of the values: the member's name and
// its parent's must say the field is per-attempt metadata (a request,
// trace, span or correlation id, a nonce, an attempt counter, the time of
// sending: sent_at, request_id, request.id, x-b3-spanid, attempt, a Date
// header), and the values must be of that kind (a time, an id, an
// integer). A name with a word of identity (tenant, account, user,
// customer, key, api, authorization, token, session: X-Tenant-Id,
// X-Api-Key) or of the effect (start_time, order.created_at,
// request_amount) is never metadata, and a random-looking value inside
// headers or meta is not metadata for where it sits. Anything else, and
// every other difference (float noise, a reordered array, reworded text, a
// changed title), is a value: the harness must send the same value, not
// leave it out.
func Regenerated(pointer string, shape Shape) bool {
	if shape == ShapeOther {
		return false
	}
	toks, err := canon.ParsePointer(pointer)
	if err != nil || len(toks) == 0 {
		return false
	}
	name := pointerName(toks)
	for _, w := range name {
		if effectWords.has(w) || identityWords.has(w) {
			return false
		}
	}
	var attempt, plain bool
	for _, w := range name {
		switch {
		case shape == ShapeTime && attemptTimeWords.has(w),
			shape == ShapeID && requestIDWords.has(w),
			shape != ShapeTime && attemptCountWords.has(w):
			return true
		}
		attempt = attempt || attemptWords.has(w)
		plain = plain || plainTime.has(w)
	}
	return shape == ShapeTime && attempt && plain
}

// pointerName is the words of a pointer's name: its member's and its
// parent's (request.id, sent.unix).
func pointerName(toks []string) []string {
	name := nameWords(toks[len(toks)-1])
	if len(toks) > 1 {
		name = append(name, nameWords(toks[len(toks)-2])...)
	}
	return name
}

// Identity reports whether a pointer (relative to the arguments) names who
// a call acts for or as (a tenant, account, user, customer, key or
// credential: X-Tenant-Id, api_key, user.id): two calls that differ there
// are two writes, however random the values look, so drift never takes
// them for one call retried, and no advice leaves them out.
func Identity(pointer string) bool {
	toks, err := canon.ParsePointer(pointer)
	if err != nil || len(toks) == 0 {
		return false
	}
	for _, w := range pointerName(toks) {
		if identityWords.has(w) {
			return true
		}
	}
	return false
}

// Advice says, for a difference that is not regenerated metadata, what
// the harness must do, in words: shape and kind say what differs.
func Advice(shape Shape, kind string) string {
	const same = "the harness must send the same value"
	switch {
	case kind == "float-noise":
		return same + ": a number computed again differs in its last digits (compute it once, or round it)"
	case kind == "reordered-array" || kind == KindReordered || kind == KindElemMoved:
		return same + ": the same elements in another order (keep one order)"
	case kind == "reworded-text":
		return same + ": a text written anew (write it once and reuse it)"
	case shape != ShapeOther:
		return same + ": it changes from attempt to attempt, but its name does not say it is only request metadata"
	}
	return same + " if the two are one call retried; if they are two calls, the keys are right to differ"
}

// EntryRegenerated reports whether a difference is request metadata that a
// retry regenerates (see Regenerated): two values of one shape, at a
// pointer into the arguments (ptr, relative to them) whose name says so.
func EntryRegenerated(ptr string, en Entry) bool {
	if en.Kind != KindValue {
		return false // a member added, a type changed, …: never metadata
	}
	a, ok1 := en.A.Node()
	b, ok2 := en.B.Node()
	return ok1 && ok2 && Regenerated(ptr, ShapeOf(a, b))
}

// RekeyNote goes next to every --omit that drift and diff advise: a key
// left without a field is another key, for every call of the tool, so a
// step begun before the change and retried after it is not recognised.
func RekeyNote(tool string) string {
	if tool == "" {
		return "adopting an --omit re-keys every step of the tool: a step retried across the change runs again"
	}
	return "adopting an --omit re-keys every step of " + tool + ": a step retried across the change runs again"
}
