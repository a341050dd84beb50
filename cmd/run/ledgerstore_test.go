package run_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/cmd/internal/step"
	"github.com/idemkey/idemkey/derive/ledger/sqlite/usertest"
	"github.com/idemkey/idemkey/derive/ledger/stores"
	"github.com/idemkey/idemkey/derive/ledger/testserver"
)

func TestParseDaysAndSize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{"7d": 7 * 24 * time.Hour, "0.5d": 12 * time.Hour, "36h": 36 * time.Hour,
		"90m": 90 * time.Minute, "30": 30 * time.Second, "0.25": 250 * time.Millisecond, "0": 0, "1h30m": 90 * time.Minute} {
		if got, err := cli.ParseDays(in); err != nil || got != want {
			t.Errorf("parseDays(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "-2d", "xd", "soon", "1y"} {
		if _, err := cli.ParseDays(bad); err == nil {
			t.Errorf("parseDays(%q) accepted", bad)
		}
	}
	for in, want := range map[string]int64{"1MiB": 1 << 20, "64KiB": 64 << 10, "65536": 65536, "1M": 1 << 20, "2G": 2 << 30, "10B": 10, "1MB": 1e6, "0": 0, "64kB": 64000, "64KB": 64000, "64k": 64 << 10} {
		if got, err := cli.ParseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "1TiB", "lots", "1.5M"} {
		if _, err := cli.ParseSize(bad); err == nil {
			t.Errorf("parseSize(%q) accepted", bad)
		}
	}
	for in, want := range map[string]string{
		"postgres://bob:hunter2@db:5432/x": "postgres://bob:xxxxx@db:5432/x",
		"redis://:pw@127.0.0.1:6379/0":     "redis://:xxxxx@127.0.0.1:6379/0",
		"postgres://db/x":                  "postgres://db/x",
		"/var/lib/ledger.db":               "/var/lib/ledger.db",
	} {
		if got := stores.Redact(in); got != want {
			t.Errorf("redactStoreURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestLedgerURLSecretsNeverPrinted: a store URL is shown through an
// allow-list of its parameters. sslpassword= (a TLS key's passphrase) and
// a parameter idemkey does not know were printed as typed by run -v,
// ledger init and the errors of a store that cannot be reached.
func TestLedgerURLSecretsNeverPrinted(t *testing.T) {
	t.Parallel()
	r := clitest.NewRig(t)
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
	check := func(what string, res clitest.Result, wantCode int) {
		t.Helper()
		all := string(res.Stdout) + string(res.Stderr)
		if res.Code != wantCode {
			t.Fatalf("%s: exit %d, want %d: %s", what, res.Code, wantCode, all)
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
	check("ledger init", r.Idemkey("ledger", "init", "--ledger", url), 0)
	check("ledger init --json", r.Idemkey("ledger", "init", "--json", "--ledger", url), 0)
	check("run -v", r.Idemkey("run", "-v", "--ledger", url, "--task", "t", "--tool", "x", "--", "true"), 0)
	o := clitest.NewEffectOwner(t, true)
	check("post -v --ledger", r.Idemkey("post", "-v", o.URL+"/pay", "--task", "t", "--tool", "p", "-d", `{"a":1}`, "--ledger="+url), 0)
	check("run, store unreachable", r.Idemkey("run", "--ledger", closed, "--task", "t", "--tool", "x", "--", "true"), 125)
	check("ledger ls, store unreachable", r.Idemkey("ledger", "ls", "--ledger", closed), cli.ExitCode(errors.New("")))
}

// TestLedgerOfAnotherUserRefused: another local user runs the same step
// into team/ledger.db (its key and fingerprint are computable), beneath a
// shared sticky directory, then makes the directory 0777 and the files
// 0666. root, and a second non-root user, replayed the other user's
// output (here, their name) and never ran the step. Both now refuse the
// ledger: exit 125, the path, its owner and mode named, a hint.
func TestLedgerOfAnotherUserRefused(t *testing.T) {
	t.Parallel()
	r := clitest.NewRig(t)
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
	as := func(u *usertest.User, args ...string) clitest.Result {
		c := exec.Command(bin, args...)
		c.Dir = shared
		c.Env = append(step.WithoutEnv(os.Environ(), "IDEMKEY_LEDGER", "HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME"),
			"HOME="+shared, "XDG_CONFIG_HOME="+filepath.Join(shared, "none"), "NO_COLOR=1")
		if u != nil {
			u.As(c)
		}
		return r.Run(c)
	}
	step := []string{"run", "--ledger", team, "--task", "t1", "--tool", "whoami", "--", "id", "-un"}
	if res := as(&attacker, step...); res.Code != 0 || string(res.Stdout) != attacker.Name+"\n" {
		t.Fatalf("the other user's run: exit %d: %s%s", res.Code, res.Stdout, res.Stderr)
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
		if res.Code != 125 || len(res.Stdout) != 0 {
			t.Fatalf("%s: exit %d, stdout %q, want 125 and nothing replayed: %s", who, res.Code, res.Stdout, res.Stderr)
		}
		for _, want := range []string{"idemkey: error: ", filepath.Dir(team), attacker.Name, "0777", "\nhint: "} {
			if !strings.Contains(string(res.Stderr), want) {
				t.Errorf("%s: the error lacks %q: %s", who, want, res.Stderr)
			}
		}
	}
}

// TestLedgerHardLinkRefused: a hard link to the ledger was a second,
// independent set of key locks: a step running through one name could
// be run again through the other. A ledger file with two links is
// refused (exit 125), through either name, while the step runs.
func TestLedgerHardLinkRefused(t *testing.T) {
	r := clitest.NewRig(t)
	step := []string{"--task", "t1", "--tool", "slow", "--", "sh", "-c", "touch " + r.Path("started") + "; while [ ! -e " + r.Path("release") + " ]; do sleep 0.05; done; echo ran >> " + r.Path("mark")}
	holder := r.Cmd(append([]string{"run"}, step...)...)
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	r.WaitFile("started")
	link := r.Path("or.db")
	if err := os.Link(r.Ledger, link); err != nil {
		t.Fatal(err)
	}
	res := r.IdemkeyReleasing(append([]string{"run", "--ledger", link}, step...)...)
	if res.Code != 125 || !strings.Contains(string(res.Stderr), "2 hard links") || !strings.Contains(string(res.Stderr), "hint: ") {
		t.Fatalf("through the link: exit %d, want 125 naming the hard links: %s", res.Code, res.Stderr)
	}
	os.WriteFile(r.Path("release"), nil, 0o644)
	holder.Wait()
	if n := r.Lines("mark"); n != 1 {
		t.Fatalf("the step ran %d times", n)
	}
}

// TestRunFd3ReusedKeepsKeyBusy: a command that reuses fd 3 (exec
// 3>script.log, a common idiom) closed the key's lock; after kill -9 of
// idemkey the still-running step read as dead: 76, and with --recover
// retry a second copy ran at once. The recorded holder (its pid and start
// time, its process group, the step's environment) is checked before it
// is declared dead, and the lock is passed at a high descriptor. Also a
// command that closes every descriptor it inherited.
func TestRunFd3ReusedKeepsKeyBusy(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		group        bool
	}{
		{"exec3-own-group", "exec 3>script.log", true},
		{"exec3-shared-group", "exec 3>script.log", false},
		{"closes-all", `for fd in /proc/$$/fd/*; do n=${fd##*/}; [ "$n" -gt 2 ] && eval "exec $n>&-"; done`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := clitest.NewRig(t)
			holder, args := r.StartStepHolder(tc.script, tc.group)
			_ = holder.Process.Signal(syscall.SIGKILL) // idemkey alone
			_ = holder.Wait()
			retry := append([]string{"run", "--recover", "retry"}, args[1:]...)
			for range 3 {
				if res := r.IdemkeyReleasing(retry...); res.Code != 75 {
					t.Fatalf("while the step runs: exit %d, want 75 (busy): %s", res.Code, res.Stderr)
				}
			}
			if n := r.Lines("mark"); n != 1 {
				t.Fatalf("the step ran %d times", n)
			}
			// Once the step has ended, its outcome is unknown: not busy
			// for ever.
			os.WriteFile(r.Path("release"), nil, 0o644)
			r.WaitLine("ended")
			if res := r.Until(75, args...); res.Code != 76 {
				t.Fatalf("after the step ended: exit %d, want 76: %s", res.Code, res.Stderr)
			}
		})
	}
}

// TestRunLocksRemovedHolderAlive: removing a held lock file (rm -rf
// ledger.db.locks, a temp cleaner) made the live holder look dead: with
// --recover retry the step ran twice at once, and ledger forget removed
// its record. The recorded holder is alive, so the key is busy.
func TestRunLocksRemovedHolderAlive(t *testing.T) {
	r := clitest.NewRig(t)
	holder, args := r.StartStepHolder("true", true)
	if err := os.RemoveAll(r.Ledger + ".locks"); err != nil {
		t.Fatal(err)
	}
	retry := append([]string{"run", "--recover", "retry"}, args[1:]...)
	if res := r.IdemkeyReleasing(retry...); res.Code != 75 {
		t.Fatalf("with the locks removed: exit %d, want 75 (busy): %s", res.Code, res.Stderr)
	}
	key := r.CmdKey("t1", "deploy", args[len(args)-3:]...)
	for _, verb := range [][]string{{"forget", key}, {"resolve", key, "--as", "failed"}} {
		if res := r.Idemkey(append([]string{"ledger"}, verb...)...); res.Code != 1 || !strings.Contains(string(res.Stderr), "its holder is alive") {
			t.Fatalf("ledger %s: exit %d: %s", verb[0], res.Code, res.Stderr)
		}
	}
	os.WriteFile(r.Path("release"), nil, 0o644)
	if err := holder.Wait(); err != nil {
		t.Fatalf("the holder: %v", err)
	}
	if res := r.Idemkey(retry...); res.Code != 0 || r.Lines("mark") != 1 {
		t.Fatalf("after the holder finished: exit %d, %d executions: %s", res.Code, r.Lines("mark"), res.Stderr)
	}
}
