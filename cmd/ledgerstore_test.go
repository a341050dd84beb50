package cmd

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idemkey/idemkey/derive/ledger/testserver"
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

// TestLedgerURLSecretsNeverPrinted: a store URL is shown through an
// allow-list of its parameters. sslpassword= (a TLS key's passphrase) and
// a parameter idemkey does not know were printed as typed by run -v,
// ledger init and the errors of a store that cannot be reached.
func TestLedgerURLSecretsNeverPrinted(t *testing.T) {
	r := newRig(t)
	pg := testserver.NewPostgres(t)
	base := pg.CreateDB(t)
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	// A server setting idemkey does not know stands for any parameter it
	// does not (pgx passes it on to the server, which must accept it).
	secrets := []string{"tls-key-passphrase-1", "123457", "not-a-known-param-3"}
	url := base + sep + "sslpassword=" + secrets[0] + "&statement_timeout=" + secrets[1] + "&connect_timeout=7"
	closed := "postgres://idemkey@127.0.0.1:1/x?sslpassword=" + secrets[0] + "&future_token=" + secrets[2] + "&connect_timeout=7"
	check := func(what string, res result, wantCode int) {
		t.Helper()
		all := string(res.stdout) + string(res.stderr)
		if res.code != wantCode {
			t.Fatalf("%s: exit %d, want %d: %s", what, res.code, wantCode, all)
		}
		for _, s := range secrets {
			if strings.Contains(all, s) {
				t.Errorf("%s printed %q: %s", what, s, all)
			}
		}
		// The parameters are named, their values hidden; allowed ones
		// are shown.
		if !strings.Contains(all, "sslpassword=xxxxx") || !strings.Contains(all, "connect_timeout=7") {
			t.Errorf("%s: the URL is not shown redacted: %s", what, all)
		}
	}
	check("ledger init", r.idemkey("ledger", "init", "--ledger", url), 0)
	check("ledger init --json", r.idemkey("ledger", "init", "--json", "--ledger", url), 0)
	check("run -v", r.idemkey("run", "-v", "--ledger", url, "--task", "t", "--tool", "x", "--", "true"), 0)
	o := newEffectOwner(t, true)
	check("post -v --ledger", r.idemkey("post", "-v", o.URL+"/pay", "--task", "t", "--tool", "p", "-d", `{"a":1}`, "--ledger="+url), 0)
	check("run, store unreachable", r.idemkey("run", "--ledger", closed, "--task", "t", "--tool", "x", "--", "true"), 125)
	check("ledger ls, store unreachable", r.idemkey("ledger", "ls", "--ledger", closed), exitCode(errors.New("")))
}
