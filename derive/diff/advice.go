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
	// request_time, client_ts, call_at.
	attemptWords = words("request req client call attempt retry server local current")
	plainTime    = words("time at date ms epoch stamp")
	// Identifiers of the request, not of what it does.
	requestIDWords = words("request req trace traceparent tracestate span correlation corr nonce idempotency dedup dedupe")
	// Counters of attempts.
	attemptCountWords = words("attempt attempts retry retries try tries redelivery redeliveries")
	// Containers of request metadata: every value inside is the request's.
	metaContainers = words("meta metadata headers header trace tracing telemetry diagnostics instrumentation")
	// Words that say the field is part of what the call does, whatever
	// else its name says: request_amount, send_at, start_time, expires_at.
	effectWords = words("amount price total cost fee qty quantity balance to from recipient recipients cc bcc " +
		"subject title body message text content note notes comment description label labels tag tags attendees " +
		"start end begin due deadline scheduled schedule send until expires expiry valid duration delay " +
		"order customer account user product sku item address email phone name file path url branch repo " +
		"issue ticket invoice payment refund charge transfer appointment meeting event reminder booking publish")
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
// call's retries one key without merging distinct calls. It takes both
// the values and the name (the member's and its parent's): a time, an id
// or an integer that changes is metadata only where the name says so
// (sent_at, request_id, request.id, sent.unix, attempt; anything inside
// meta, _meta or headers), and never where a word of the name says the
// field is part of the effect (start_time, order.created_at,
// request_amount; order_id says nothing of the request). Anything else, and every other difference
// (float noise, a reordered array, reworded text, a changed title), is a
// value: the harness must send the same value, not leave it out.
func Regenerated(pointer string, shape Shape) bool {
	if shape == ShapeOther {
		return false
	}
	toks, err := canon.ParsePointer(pointer)
	if err != nil || len(toks) == 0 {
		return false
	}
	// The name is the member's and its parent's: request.id, sent.unix.
	name := nameWords(toks[len(toks)-1])
	if len(toks) > 1 {
		name = append(name, nameWords(toks[len(toks)-2])...)
	}
	for _, w := range name {
		if effectWords.has(w) {
			return false
		}
	}
	for _, tok := range toks[:len(toks)-1] {
		for _, w := range nameWords(tok) {
			if metaContainers.has(w) {
				return true
			}
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
