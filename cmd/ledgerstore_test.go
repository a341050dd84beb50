package cmd

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemkey/idemkey/derive/ledger/sqlite/usertest"
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

// TestLedgerOfAnotherUserRefused: another local user runs the same step
// into team/ledger.db (its key and fingerprint are computable), beneath a
// shared sticky directory, then makes the directory 0777 and the files
// 0666. root, and a second non-root user, replayed the other user's
// output (here, their name) and never ran the step. Both now refuse the
// ledger: exit 125, the path, its owner and mode named, a hint.
func TestLedgerOfAnotherUserRefused(t *testing.T) {
	r := newRig(t)
	users := usertest.New(t, 2)
	attacker, victim := users[0], users[1]
	shared, exe := usertest.SharedDir(t)
	bin := filepath.Join(shared, "idemkey")
	if err := os.Symlink(exe, bin); err != nil {
		t.Fatal(err)
	}
	pub := filepath.Join(shared, "pub")
	os.Mkdir(pub, 0o755)
	os.Chmod(pub, os.ModeSticky|0o777)
	team := filepath.Join(pub, "team", "ledger.db")
	as := func(u *usertest.User, args ...string) result {
		c := exec.Command(bin, args...)
		c.Dir = shared
		c.Env = append(withoutEnv(os.Environ(), "IDEMKEY_LEDGER", "HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME"),
			"HOME="+shared, "XDG_CONFIG_HOME="+filepath.Join(shared, "none"), "NO_COLOR=1")
		if u != nil {
			u.As(c)
		}
		return r.run(c)
	}
	step := []string{"run", "--ledger", team, "--task", "t1", "--tool", "whoami", "--", "id", "-un"}
	if res := as(&attacker, step...); res.code != 0 || string(res.stdout) != attacker.Name+"\n" {
		t.Fatalf("the other user's run: exit %d: %s%s", res.code, res.stdout, res.stderr)
	}
	if out, err := attacker.As(exec.Command("sh", "-c", "chmod 0777 "+filepath.Dir(team)+"; chmod 0666 "+team+"*")).CombinedOutput(); err != nil {
		t.Fatalf("chmod: %v: %s", err, out)
	}
	for _, u := range []*usertest.User{nil, &victim} {
		res := as(u, step...)
		who := "root"
		if u != nil {
			who = u.Name
		}
		if res.code != 125 || len(res.stdout) != 0 {
			t.Fatalf("%s: exit %d, stdout %q, want 125 and nothing replayed: %s", who, res.code, res.stdout, res.stderr)
		}
		for _, want := range []string{"idemkey: error: ", filepath.Dir(team), attacker.Name, "0777", "\nhint: "} {
			if !strings.Contains(string(res.stderr), want) {
				t.Errorf("%s: the error lacks %q: %s", who, want, res.stderr)
			}
		}
	}
}

// TestLedgerHardLinkRefused: a hard link to the ledger was a second,
// independent set of key locks: a step running through one name could
// be run again through the other. A ledger file with two links is
// refused (exit 125), through either name, while the step runs.
func TestLedgerHardLinkRefused(t *testing.T) {
	r := newRig(t)
	step := []string{"--task", "t1", "--tool", "slow", "--", "sh", "-c", "touch " + r.path("started") + "; while [ ! -e " + r.path("go") + " ]; do sleep 0.05; done; echo ran >> " + r.path("mark")}
	holder := r.cmd(append([]string{"run"}, step...)...)
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	r.waitFile("started")
	link := r.path("or.db")
	if err := os.Link(r.ledger, link); err != nil {
		t.Fatal(err)
	}
	second := make(chan result, 1)
	go func() { second <- r.idemkey(append([]string{"run", "--ledger", link}, step...)...) }()
	var res result
	select {
	case res = <-second:
	case <-time.After(20 * time.Second):
		// Running the step a second time: let both end.
		os.WriteFile(r.path("go"), nil, 0o644)
		res = <-second
	}
	if res.code != 125 || !strings.Contains(string(res.stderr), "2 hard links") || !strings.Contains(string(res.stderr), "hint: ") {
		t.Fatalf("through the link: exit %d, want 125 naming the hard links: %s", res.code, res.stderr)
	}
	os.WriteFile(r.path("go"), nil, 0o644)
	holder.Wait()
	if n := r.lines("mark"); n != 1 {
		t.Fatalf("the step ran %d times", n)
	}
}
