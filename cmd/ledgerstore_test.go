package cmd

import (
	"testing"
	"time"
)

func TestParseDaysAndSize(t *testing.T) {
	for in, want := range map[string]time.Duration{"7d": 7 * 24 * time.Hour, "0.5d": 12 * time.Hour, "36h": 36 * time.Hour,
		"90m": 90 * time.Minute, "30": 30 * time.Second, "0.25": 250 * time.Millisecond, "0": 0, "1h30m": 90 * time.Minute} {
		if got, err := parseDays(in); err != nil || got != want {
			t.Errorf("parseDays(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "-2d", "xd", "soon", "1y"} {
		if _, err := parseDays(bad); err == nil {
			t.Errorf("parseDays(%q) accepted", bad)
		}
	}
	for in, want := range map[string]int64{"1MiB": 1 << 20, "64KiB": 64 << 10, "65536": 65536, "1M": 1 << 20, "2G": 2 << 30, "10B": 10, "1MB": 1e6, "0": 0, "64kB": 64000, "64KB": 64000, "64k": 64 << 10} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "1TiB", "lots", "1.5M"} {
		if _, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q) accepted", bad)
		}
	}
	for in, want := range map[string]string{
		"postgres://bob:hunter2@db:5432/x": "postgres://bob:xxxxx@db:5432/x",
		"redis://:pw@127.0.0.1:6379/0":     "redis://:xxxxx@127.0.0.1:6379/0",
		"postgres://db/x":                  "postgres://db/x",
		"/var/lib/ledger.db":               "/var/lib/ledger.db",
	} {
		if got := redactStoreURL(in); got != want {
			t.Errorf("redactStoreURL(%q) = %q, want %q", in, got, want)
		}
	}
}
