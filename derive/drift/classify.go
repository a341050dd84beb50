package drift

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

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
	if x, ok := epochDigits(a); ok {
		if y, ok := epochDigits(b); ok {
			if unit, ok := epochUnit(x, y); ok { // epoch seconds or milliseconds written as strings
				e.kind = kTimestamp
				e.near = math.Abs(y-x)*unit <= float64(o.TimeGap)
				return
			}
		}
	}
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
	var bufA, bufB [64]uint64
	wa, wb := wordHashes(bufA[:0], a), wordHashes(bufB[:0], b)
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

// epochDigits reads a string of 10 to 19 digits as a number.
func epochDigits(s string) (float64, bool) {
	if len(s) < 10 || len(s) > 19 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	x, err := strconv.ParseFloat(s, 64)
	return x, err == nil
}

// isULID reports a ULID: 26 characters of Crockford's base32, the first
// at most 7.
func isULID(s string) bool {
	if len(s) != 26 || s[0] > '7' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' && c != 'I' && c != 'L' && c != 'O' && c != 'U') {
			return false
		}
	}
	return true
}

func isToken(tail string) bool {
	if isULID(tail) {
		return true
	}
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
	case len(tail) >= 16 && digits >= 1 && letters >= 1:
		return true // a long base32 or base36 token with few digits
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

// wordHashes appends the hash of each word of a text (a run of letters
// or digits, lower-cased) to dst; the lowest bit of a word's hash is set
// when the word holds a digit. It allocates nothing for texts of up to
// cap(dst) words.
func wordHashes(dst []uint64, s string) []uint64 {
	const offset, prime = 0xcbf29ce484222325, 0x100000001b3
	h, in, digit := uint64(offset), false, false
	end := func() {
		if in {
			w := mix(h) &^ 1
			if digit {
				w |= 1
			}
			dst = append(dst, w)
		}
		h, in, digit = offset, false, false
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case c >= 'a' && c <= 'z':
			case c >= 'A' && c <= 'Z':
				c += 'a' - 'A'
			case c >= '0' && c <= '9':
				digit = true
			default:
				end()
				continue
			}
			h = (h ^ uint64(c)) * prime
			in = true
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case unicode.IsLetter(r):
			r = unicode.ToLower(r)
		case unicode.IsDigit(r):
			digit = true
		default:
			end()
			continue
		}
		h = (h ^ uint64(r)) * prime
		in = true
	}
	end()
	return dst
}

// sameNumbers reports whether two texts mention the same numbers: a
// rewording keeps the facts, a different order number makes another call.
func sameNumbers(a, b []uint64) bool {
	var bufA, bufB [64]uint64
	na, nb := bufA[:0], bufB[:0]
	for _, w := range a {
		if w&1 == 1 {
			na = append(na, w)
		}
	}
	for _, w := range b {
		if w&1 == 1 {
			nb = append(nb, w)
		}
	}
	if len(na) != len(nb) {
		return false
	}
	slices.Sort(na)
	slices.Sort(nb)
	return slices.Equal(na, nb)
}

// jaccard is the overlap of the two word sets.
func jaccard(a, b []uint64) float64 {
	var bufA, bufB [64]uint64
	sa := slices.Compact(sortedCopy(bufA[:0], a))
	sb := slices.Compact(sortedCopy(bufB[:0], b))
	inter := 0
	for i, j := 0, 0; i < len(sa) && j < len(sb); {
		switch {
		case sa[i] == sb[j]:
			inter++
			i++
			j++
		case sa[i] < sb[j]:
			i++
		default:
			j++
		}
	}
	union := len(sa) + len(sb) - inter
	if union == 0 {
		return 1
	}
	return float64(inter) / float64(union)
}

func sortedCopy(dst, src []uint64) []uint64 {
	dst = append(dst, src...)
	slices.Sort(dst)
	return dst
}

// lookAlike reports two strings that a reader takes for the same text:
// they differ in letter case, white space, normalization, invisible
// characters or look-alike letters (as diff tells them apart).
func lookAlike(a, b string) bool {
	if ascii(a) && ascii(b) {
		// only case and white space can hide in ASCII
		return foldSpaceEqual(a, b)
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

// foldSpaceEqual reports whether two ASCII strings are equal but for
// letter case and white space (runs of it taken for one space, none at
// either end), without allocating.
func foldSpaceEqual(a, b string) bool {
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	i, j := 0, 0
	for {
		ca, ni := nextFolded(a, i)
		cb, nj := nextFolded(b, j)
		if ca != cb {
			return false
		}
		if ca < 0 {
			return true
		}
		i, j = ni, nj
	}
}

// nextFolded returns the byte of s (trimmed) at i lower-cased, or a run
// of white space as one ' ', or -1 at the end, and the offset after it.
func nextFolded(s string, i int) (int, int) {
	if i == len(s) {
		return -1, i
	}
	if asciiSpace(s[i]) {
		for i < len(s) && asciiSpace(s[i]) {
			i++
		}
		return ' ', i
	}
	c := s[i]
	if c >= 'A' && c <= 'Z' {
		c += 'a' - 'A'
	}
	return int(c), i + 1
}

func asciiSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}
