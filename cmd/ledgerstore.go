package cmd

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/spf13/pflag"
)

// ledgerTestHooks are set only by the test binary (hooks_test.go), from
// environment variables that an installed idemkey ignores.
var ledgerTestHooks struct {
	// fsType replaces the statfs type of the ledger's directory.
	fsType func(real int64) int64
	// crashAfterExit kills idemkey between the command's exit and the
	// record of its outcome.
	crashAfterExit func() bool
	// crashAfterComplete, if set, kills idemkey right after the outcome's
	// lazy commit (no close of the store, no checkpoint).
	crashAfterComplete bool
}

// keyLocker is a store whose liveness is a kernel lock per key (SQLite on
// one machine). The returned file is the locked descriptor: a command that
// inherits it keeps the key locked until it exits.
type keyLocker interface {
	LockKey(key string) (*os.File, error)
	RemoveLock(key string) error
}

// ledgerUnavailable: the ledger cannot be opened or used (exit 125 in run).
type ledgerUnavailable struct {
	spec string
	err  error
}

func (e *ledgerUnavailable) Error() string {
	spec := redactStoreURL(e.spec)
	if msg := e.err.Error(); namesLedger(msg, spec) {
		return msg // a shared store's errors (and a path error) name it already
	}
	return fmt.Sprintf("ledger %s: %s", spec, e.err)
}

// namesLedger reports whether msg names the ledger spec as a word of its
// own (at the start or after a space, then a colon, a space or the end):
// a ledger file named "dir" or "data" is not named by "is a directory" or
// "file is not a database".
func namesLedger(msg, spec string) bool {
	for i := 0; spec != ""; {
		j := strings.Index(msg[i:], spec)
		if j < 0 {
			return false
		}
		at, end := i+j, i+j+len(spec)
		if (at == 0 || msg[at-1] == ' ') && (end == len(msg) || msg[end] == ':' || msg[end] == ' ') {
			return true
		}
		i = at + 1
	}
	return false
}

func (e *ledgerUnavailable) Unwrap() error { return e.err }

func addLedgerFlag(fl *pflag.FlagSet) {
	fl.String("ledger", "", "ledger: a SQLite file path (default $XDG_STATE_HOME/idemkey/ledger.db), or a shared store's postgres://… or redis://… URL (IDEMKEY_LEDGER)")
}

// defaultLedgerPath is $XDG_STATE_HOME/idemkey/ledger.db, or
// ~/.local/state/idemkey/ledger.db.
func (f *Factory) defaultLedgerPath() (string, error) {
	if dir := f.IO.Getenv("XDG_STATE_HOME"); dir != "" && filepath.IsAbs(dir) {
		return filepath.Join(dir, "idemkey", "ledger.db"), nil
	}
	home := f.IO.Getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", errors.New("no ledger path: set HOME, XDG_STATE_HOME or --ledger")
		}
	}
	return filepath.Join(home, ".local", "state", "idemkey", "ledger.db"), nil
}

// ledgerSpec is the --ledger setting (flag, IDEMKEY_LEDGER, config), or
// the default path.
func (f *Factory) ledgerSpec() (string, error) {
	if s := f.Config.GetString("ledger"); s != "" {
		return s, nil
	}
	return f.defaultLedgerPath()
}

// openLedger opens the ledger spec names: a URL of a shared store, or a
// SQLite file path.
func (f *Factory) openLedger(ctx context.Context, spec string) (ledger.Store, error) {
	switch {
	case strings.HasPrefix(spec, "postgres://"), strings.HasPrefix(spec, "postgresql://"):
		s, err := openPostgres(ctx, spec)
		if err != nil {
			return nil, &ledgerUnavailable{spec: spec, err: err}
		}
		return s, nil
	case strings.HasPrefix(spec, "redis://"), strings.HasPrefix(spec, "rediss://"):
		warn := func(msg string) { fmt.Fprintf(f.IO.Err, "idemkey: warning: %s\n", msg) }
		s, err := openRedis(ctx, spec, warn)
		if err != nil {
			return nil, &ledgerUnavailable{spec: spec, err: err}
		}
		return s, nil
	}
	if strings.HasPrefix(spec, "file:") {
		spec = strings.TrimPrefix(spec, "file:")
	} else if looksLikeDSN(spec) {
		// A libpq keyword/value string is not a file name (and holds a
		// password that must not become one, or be printed).
		return nil, &ledgerUnavailable{spec: "(a keyword/value connection string)", err: &UsageError{
			Err:  errors.New("a PostgreSQL keyword/value connection string is not supported"),
			hint: "give the ledger as a postgres://user@host/db URL (or a SQLite file path)"}}
	} else if scheme, ok := urlScheme(spec); ok {
		// A URL of a store this idemkey does not have (or a misspelt one)
		// must not become a local file of that name.
		return nil, &ledgerUnavailable{spec: spec, err: &UsageError{
			Err:  fmt.Errorf("unsupported ledger URL scheme %q", scheme),
			hint: "give a SQLite file path, or a postgres://, postgresql://, redis:// or rediss:// URL"}}
	}
	s, err := openSQLite(ctx, spec)
	if err != nil {
		return nil, &ledgerUnavailable{spec: spec, err: err}
	}
	return s, nil
}

// looksLikeDSN reports whether spec reads as a libpq keyword/value
// connection string ("host=db dbname=ledger password=…").
func looksLikeDSN(spec string) bool {
	k, _, ok := strings.Cut(strings.TrimSpace(spec), "=")
	switch k {
	case "host", "hostaddr", "port", "dbname", "user", "password", "passfile", "sslmode", "service":
		return ok
	}
	return false
}

// urlScheme returns the scheme of a spec of the form scheme://….
func urlScheme(spec string) (string, bool) {
	scheme, _, ok := strings.Cut(spec, "://")
	if !ok || scheme == "" {
		return "", false
	}
	for i, c := range scheme {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return "", false
		}
	}
	return scheme, true
}

// redactStoreURL hides the password of a store URL (for PostgreSQL and Redis
// as their stores do: in the user info and in a password parameter).
func redactStoreURL(s string) string {
	switch {
	case strings.HasPrefix(s, "postgres://"), strings.HasPrefix(s, "postgresql://"):
		return redactPostgres(s)
	case strings.HasPrefix(s, "redis://"), strings.HasPrefix(s, "rediss://"):
		return redactRedis(s)
	}
	i := strings.Index(s, "://")
	if i < 0 {
		return s
	}
	rest := s[i+3:]
	at := strings.LastIndex(strings.SplitN(rest, "/", 2)[0], "@")
	if at < 0 {
		return s
	}
	cred := rest[:at]
	if c := strings.IndexByte(cred, ':'); c >= 0 {
		cred = cred[:c] + ":xxxxx"
	}
	return s[:i+3] + cred + rest[at:]
}

// parseDays parses a duration that may use days: "7d", "36h", "90m", or
// a bare number of seconds ("30", "0.5"), as timeout(1) and post take it.
func parseDays(s string) (time.Duration, error) {
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

// parseSize parses a byte count: 1048576, 64KiB, 1MiB, 1M, 2G.
func parseSize(s string) (int64, error) {
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

// holderName is this process's host and pid, as records show it.
func holderName() string {
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	return fmt.Sprintf("%s pid %d", host, os.Getpid())
}
