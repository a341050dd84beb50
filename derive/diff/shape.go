package diff

// The shapes of values that a retry regenerates: date-times and epoch
// times, random-looking identifiers. idemkey drift classifies variations
// with them, and the advice of drift and diff (see Regenerated) asks them
// what two differing values look like.

import (
	"strconv"
	"strings"
	"time"
)

// EpochUnit reports two numbers that read as Unix times in the same unit
// (seconds, milliseconds, microseconds or nanoseconds, 2001 to 2103), and
// the unit's length in nanoseconds.
func EpochUnit(x, y float64) (float64, bool) {
	for _, u := range []struct{ lo, ns float64 }{{1e9, 1e9}, {1e12, 1e6}, {1e15, 1e3}, {1e18, 1}} {
		if x >= u.lo && x < 4.2*u.lo && y >= u.lo && y < 4.2*u.lo {
			return u.ns, true
		}
	}
	return 0, false
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

// ParseTime reads a date with a time of day: RFC 3339 and its common
// variants (a space for the T, no zone, a zone without a colon), or an
// HTTP date.
func ParseTime(s string) (time.Time, bool) {
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

// IDShape reports a random-looking identifier: a UUID, 16 or more hex
// digits, a W3C traceparent, or a prefix ("req_") and a random token (8 or
// more hex digits; 10 or more letters and digits with at least two of
// each, as a ULID or base62 id; 16 or more letters whose case changes
// often). It returns the prefix: two identifiers
// of one kind have the same.
func IDShape(s string) (prefix string, ok bool) {
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

// EpochDigits reads a string of 10 to 19 digits as a number.
func EpochDigits(s string) (float64, bool) {
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
