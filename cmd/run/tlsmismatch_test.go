package run_test

import (
	"strings"
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/derive/ledger/testserver"
)

// TestFleetTLSMismatch: a ledger URL whose TLS setting does not match the
// server (rediss:// or sslmode=require against a plain server, redis://
// or sslmode=disable against a TLS-only one) fails at once with an error
// that names TLS and a hint: run exits 125 without running the command,
// ledger ls exits 2. The bound on the time is a guard against the hang
// (go-redis retried a TLS handshake that a plain Redis never answers, 5 s
// each, five times: 25 s and "context deadline exceeded"), far above what
// a failure takes here.
func TestFleetTLSMismatch(t *testing.T) {
	t.Parallel()
	type tc struct {
		name, url string
		want      []string
	}
	var cases []tc
	plainRedis := testserver.NewRedis(t)
	tlsRedis, _ := testserver.NewRedisTLS(t)
	plainPG := testserver.NewPostgres(t)
	plainURL := plainPG.CreateDB(t)
	tlsPG, _ := testserver.NewPostgresTLS(t)
	tlsURL := tlsPG.CreateDB(t)
	cases = append(cases,
		tc{"rediss to plain redis", strings.Replace(plainRedis.URL(), "redis://", "rediss://", 1),
			[]string{"TLS", "hint:", "redis://"}},
		tc{"redis to tls redis", strings.Replace(tlsRedis.URL(), "rediss://", "redis://", 1),
			[]string{"TLS", "hint:", "rediss://"}},
		tc{"sslmode=require to plain postgres", strings.Replace(plainURL, "sslmode=disable", "sslmode=require", 1),
			[]string{"TLS", "hint:", "sslmode=disable"}},
		tc{"sslmode=disable to tls postgres", strings.Replace(tlsURL, "sslmode=require", "sslmode=disable", 1),
			[]string{"TLS", "hint:", "sslmode=require"}},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fl := clitest.NewFleet(t, &clitest.Store{URL: c.url}, nil)
			for _, args := range [][]string{
				{"run", "--task", "t-tls", "--tool", "x", "--", fl.Script("step.sh", "echo x >> ran")},
				{"ledger", "ls"},
			} {
				start := time.Now()
				w := fl.Run("a", args...)
				took := time.Since(start)
				want := cli.ExitRunFailed
				if args[0] == "ledger" {
					want = cli.ExitUsage
				}
				if w.Code != want || len(fl.Lines("ran")) != 0 || w.Stdout.Len() != 0 {
					t.Errorf("%s: exit %d (want %d), ran %d, stdout %q", args[0], w.Code, want, len(fl.Lines("ran")), w.Stdout.String())
				}
				for _, s := range c.want {
					if !strings.Contains(w.Stderr.String(), s) {
						t.Errorf("%s: stderr lacks %q:\n%s", args[0], s, w.Stderr.String())
					}
				}
				if took > 12*time.Second {
					t.Errorf("%s: took %v to fail", args[0], took)
				}
				t.Logf("%s: %v: %s", args[0], took.Round(time.Millisecond), w.Stderr.String())
			}
		})
	}
}
