package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Plural is one when n is 1, else many ("1 record", "2 records").
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// SizeName writes n bytes in the largest binary unit that divides it.
func SizeName(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + " " + u.name
		}
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// ParseDays parses a duration that may use days: "7d", "36h", "90m", or
// a bare number of seconds ("30", "0.5"), as timeout(1) and post take it.
func ParseDays(s string) (time.Duration, error) {
	// A count of seconds or days beyond what a duration holds (about 292
	// years) would wrap around to a negative one.
	const most = float64(math.MaxInt64)
	if v, err := strconv.ParseFloat(s, 64); err == nil && v >= 0 {
		if v*float64(time.Second) >= most {
			return 0, fmt.Errorf("invalid duration %q: too long", s)
		}
		return time.Duration(v * float64(time.Second)), nil
	}
	if n, ok := strings.CutSuffix(s, "d"); ok {
		d, err := strconv.ParseFloat(n, 64)
		if err != nil || !(d >= 0) {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		if d*float64(24*time.Hour) >= most {
			return 0, fmt.Errorf("invalid duration %q: too long", s)
		}
		return time.Duration(d * float64(24*time.Hour)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("invalid duration %q (e.g. 7d, 36h, 90m)", s)
	}
	return d, nil
}

// ParseSize parses a byte count: 1048576, 64KiB, 1MiB, 1M, 2G.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000},
		{"kB", 1000}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"k", 1 << 10}, {"B", 1}} {
		if n, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = n, u.m
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid size %q (e.g. 1MiB, 65536)", s)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("invalid size %q: too large", s)
	}
	return n * mult, nil
}

// Stamp is a time as records show it: RFC 3339 in UTC, "-" when unset.
func Stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
