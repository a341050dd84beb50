package drift

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/derive/diff"
)

// classify gives a difference the diff engine found its kind.
func classify(o *Options, en diff.Entry) entry {
	switch en.Kind {
	case diff.KindReordered, diff.KindElemMoved:
		return entry{kind: kReordered, near: true}
	case diff.KindValue, diff.KindNormalization, diff.KindInvisible, diff.KindNBSP, diff.KindTrailingWS, diff.KindLeadingWS,
		diff.KindSurroundWS, diff.KindCase, diff.KindLookAlike, diff.KindMixedScript:
		a, ok1 := en.A.Node()
		b, ok2 := en.B.Node()
		if ok1 && ok2 {
			return classifyNodes(o, a, b)
		}
	}
	return entry{kind: kOther}
}

// classifyValues gives the difference between two canonical values its
// kind. Strings without escapes and numbers are read directly; anything
// else through the parser.
func classifyValues(o *Options, va, vb []byte) entry {
	if len(va) == 0 || len(vb) == 0 {
		return entry{kind: kOther}
	}
	switch ca, cb := va[0], vb[0]; {
	case ca == '"' && cb == '"':
		if bytes.IndexByte(va, '\\') < 0 && bytes.IndexByte(vb, '\\') < 0 {
			e := entry{kind: kOther}
			classifyStrings(o, string(va[1:len(va)-1]), string(vb[1:len(vb)-1]), &e)
			return e
		}
	case isNumberStart(ca) && isNumberStart(cb):
		x, err1 := strconv.ParseFloat(string(va), 64)
		y, err2 := strconv.ParseFloat(string(vb), 64)
		if err1 == nil && err2 == nil {
			e := entry{kind: kOther}
			classifyFloats(o, x, y, &e)
			return e
		}
	case ca != cb:
		return entry{kind: kOther}
	}
	da, err1 := canon.Parse(va, canon.JS)
	db, err2 := canon.Parse(vb, canon.JS)
	if err1 != nil || err2 != nil {
		return entry{kind: kOther}
	}
	return classifyNodes(o, da.Root(), db.Root())
}

func isNumberStart(c byte) bool { return c == '-' || c >= '0' && c <= '9' }

func classifyNodes(o *Options, a, b canon.Node) entry {
	e := entry{kind: kOther}
	if a.Kind() != b.Kind() {
		return e
	}
	switch a.Kind() {
	case canon.Number:
		classifyNumbers(o, a, b, &e)
	case canon.String:
		classifyStrings(o, a.Text(), b.Text(), &e)
	}
	return e
}

func classifyNumbers(o *Options, a, b canon.Node, e *entry) {
	x, ok1 := a.Float()
	y, ok2 := b.Float()
	if ok1 && ok2 {
		classifyFloats(o, x, y, e)
	}
}

func classifyFloats(o *Options, x, y float64, e *entry) {
	if unit, ok := epochUnit(x, y); ok {
		e.kind = kTimestamp
		e.near = math.Abs(y-x)*unit <= float64(o.TimeGap)
		return
	}
	intA, intB := x == math.Trunc(x), y == math.Trunc(y)
	if (!intA || !intB) && math.Abs(x-y) <= o.FloatTolerance*math.Max(math.Abs(x), math.Abs(y)) {
		e.kind, e.near = kFloat, true
		return
	}
	if intA && intB && math.Abs(y-x) < 1<<31 {
		e.kind, e.step = kCounter, int32(y-x)
	}
}

// epochUnit reports two numbers that read as Unix times in the same unit
// (seconds, milliseconds, microseconds or nanoseconds, 2001 to 2103), and
// the unit's length in nanoseconds.
func epochUnit(x, y float64) (float64, bool) {
	for _, u := range []struct{ lo, ns float64 }{{1e9, 1e9}, {1e12, 1e6}, {1e15, 1e3}, {1e18, 1}} {
		if x >= u.lo && x < 4.2*u.lo && y >= u.lo && y < 4.2*u.lo {
			return u.ns, true
		}
	}
	return 0, false
}

func classifyStrings(o *Options, a, b string, e *entry) {
	if ta, ok := parseTime(a); ok {
		if tb, ok := parseTime(b); ok {
			e.kind = kTimestamp
			e.near = absDur(int64(tb.Sub(ta))) <= int64(o.TimeGap)
			return
		}
	}
	if pa, ok := idShape(a); ok {
		if pb, ok := idShape(b); ok && pa == pb {
			e.kind = kID
			return
		}
	}
	wa, wb := words(a), words(b)
	if len(wa) >= 3 || len(wb) >= 3 {
		e.kind = kReworded
		e.near = sameNumbers(wa, wb) && jaccard(wa, wb) >= o.TextSimilarity
	}
	if !e.near && lookAlike(a, b) {
		// the same text as a reader sees it (case, white space,
		// normalization, look-alike letters): a small edit
		e.kind, e.near = kReworded, true
	}
}

var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02 15:04:05.999999999 -0700",
	"2006-01-02T15:04:05.999999999-0700",
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04",
}

// parseTime reads a date with a time of day: RFC 3339 and its common
// variants (a space for the T, no zone, a zone without a colon), or an
// HTTP date.
func parseTime(s string) (time.Time, bool) {
	if len(s) >= 16 && len(s) <= 40 && s[4] == '-' && s[7] == '-' && (s[10] == 'T' || s[10] == ' ' || s[10] == 't') {
		for _, l := range timeLayouts {
			if t, err := time.Parse(l, s); err == nil {
				return t, true
			}
		}
		return time.Time{}, false
	}
	if len(s) >= 25 && len(s) <= 31 && s[3] == ',' {
		if t, err := time.Parse(time.RFC1123, s); err == nil {
			return t, true
		}
		if t, err := time.Parse(time.RFC1123Z, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// idShape reports a random-looking identifier: a UUID, 16 or more hex
// digits, a W3C traceparent, or a prefix ("req_") and a random token (8 or
// more hex digits; 10 or more letters and digits with at least two of
// each, as a ULID or base62 id; 16 or more letters whose case changes
// often). It returns the prefix: two identifiers
// of one kind have the same.
func idShape(s string) (prefix string, ok bool) {
	if len(s) < 8 || len(s) > 200 || strings.ContainsAny(s, " @\t\n") {
		return "", false
	}
	if isUUID(s) || len(s) >= 16 && isHex(s) {
		return "", true
	}
	if len(s) == 55 && s[2] == '-' && s[35] == '-' && s[52] == '-' && isHex(s[:2]) && isHex(s[3:35]) && isHex(s[36:52]) && isHex(s[53:]) {
		return "traceparent", true
	}
	prefix = idPrefix(s)
	return prefix, isToken(s[len(prefix):])
}

func isToken(tail string) bool {
	if len(tail) < 8 {
		return false
	}
	digits, letters := 0, 0
	for i := 0; i < len(tail); i++ {
		switch c := tail[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			letters++
		default:
			return false
		}
	}
	switch {
	case isHex(tail):
		return true
	case len(tail) >= 10 && digits >= 2 && letters >= 2:
		return true // base32 (ULID), base36, base62 with digits
	}
	// Letters only: random when the case changes often (base62).
	return len(tail) >= 16 && 4*classChanges(tail) >= len(tail)
}

// classChanges counts the places where s changes between digits, upper-
// and lower-case letters.
func classChanges(s string) int {
	class := func(c byte) int {
		switch {
		case c >= '0' && c <= '9':
			return 0
		case c >= 'A' && c <= 'Z':
			return 1
		}
		return 2
	}
	n := 0
	for i := 1; i < len(s); i++ {
		if class(s[i]) != class(s[i-1]) {
			n++
		}
	}
	return n
}

// idPrefix returns an identifier's prefix, up to its last separator
// ("req_" of "req_8f2a…"), or "".
func idPrefix(s string) string {
	if i := strings.LastIndexAny(s, "_-:./"); i >= 0 {
		return s[:i+1]
	}
	return ""
}

func isUUID(s string) bool {
	return len(s) == 36 && s[8] == '-' && s[13] == '-' && s[18] == '-' && s[23] == '-' &&
		isHex(s[:8]) && isHex(s[9:13]) && isHex(s[14:18]) && isHex(s[19:23]) && isHex(s[24:])
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return s != ""
}

// words splits a text into lower-case words of letters or digits.
func words(s string) []string {
	var out []string
	start := -1
	for i, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, strings.ToLower(s[start:i]))
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, strings.ToLower(s[start:]))
	}
	return out
}

// sameNumbers reports whether two texts mention the same numbers: a
// rewording keeps the facts, a different order number makes another call.
func sameNumbers(a, b []string) bool {
	count := map[string]int{}
	for _, w := range a {
		if isNumberWord(w) {
			count[w]++
		}
	}
	for _, w := range b {
		if isNumberWord(w) {
			count[w]--
		}
	}
	for _, n := range count {
		if n != 0 {
			return false
		}
	}
	return true
}

func isNumberWord(w string) bool {
	for _, r := range w {
		if unicode.IsDigit(r) {
			return true
		}
	}
	return false
}

// jaccard is the overlap of the two word sets.
func jaccard(a, b []string) float64 {
	sa := make(map[string]bool, len(a))
	for _, w := range a {
		sa[w] = true
	}
	sb := make(map[string]bool, len(b))
	inter := 0
	for _, w := range b {
		if !sb[w] {
			sb[w] = true
			if sa[w] {
				inter++
			}
		}
	}
	union := len(sa) + len(sb) - inter
	if union == 0 {
		return 1
	}
	return float64(inter) / float64(union)
}

// lookAlike reports two strings that a reader takes for the same text:
// they differ in letter case, white space, normalization, invisible
// characters or look-alike letters (as diff tells them apart).
func lookAlike(a, b string) bool {
	if ascii(a) && ascii(b) {
		// only case and white space can hide in ASCII
		ta, tb := strings.TrimSpace(a), strings.TrimSpace(b)
		return strings.EqualFold(ta, tb) || strings.EqualFold(strings.Join(strings.Fields(ta), " "), strings.Join(strings.Fields(tb), " "))
	}
	return diff.StringKind(a, b) != diff.KindValue
}

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
