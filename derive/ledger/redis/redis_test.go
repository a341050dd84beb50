package redis

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/idemkey/idemkey/derive/ledger/internal/storetest"
	"github.com/idemkey/idemkey/derive/ledger/ledgertest"
	"github.com/idemkey/idemkey/derive/ledger/testserver"
)

func TestMain(m *testing.M) { os.Exit(testserver.Main(m)) }

func open(t *testing.T, url string, opts Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// caps are the scenarios' means on Redis: FLUSHALL; a record's expiry
// as ttl= makes it (PEXPIRE on its hash, on Redis's clock); and a server
// whose maxmemory (noeviction) leaves room for claims, not for an 8 MiB
// output.
var caps = ledgertest.Caps{
	Leases: true,
	Wipe: func(t *testing.T, s ledger.Store) {
		if err := s.(*Store).Client().FlushAll(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
	},
	Vanish: func(t *testing.T, s ledger.Store, key string) {
		st := s.(*Store)
		ctx := context.Background()
		if err := st.Client().PExpire(ctx, st.recKey(key), time.Millisecond).Err(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if n, err := st.Client().Exists(ctx, st.recKey(key)).Result(); err != nil || n == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the record did not expire")
			}
		}
	},
	Cramped: func(t *testing.T) (ledger.Store, int) {
		r := testserver.NewRedis(t, "--maxmemory", "4mb", "--maxmemory-policy", "noeviction")
		return open(t, r.URL(), Options{}), 8 << 20
	},
}

func TestScenarios(t *testing.T) {
	r := testserver.NewRedis(t)
	c := caps
	c.Concurrency = 64
	ledgertest.Run(t, func(t *testing.T) ledger.Store { return open(t, r.URL(), Options{}) }, c)
}

func TestPrimitives(t *testing.T) {
	r := testserver.NewRedis(t)
	n := 0
	storetest.Run(t, func(t *testing.T) ledger.Store {
		n++
		return open(t, r.URL()+"?prefix=p"+string(rune('a'+n))+":", Options{})
	})
}

// TestScriptsReloaded: the scripts run by EVALSHA; after SCRIPT FLUSH
// (a restarted server) they are sent again with EVAL and work.
func TestScriptsReloaded(t *testing.T) {
	r := testserver.NewRedis(t)
	s := open(t, r.URL(), Options{})
	ctx := context.Background()
	rec := &ledger.Record{Key: "k", State: ledger.Running, Attempt: 1, StartedAt: time.Now(), ExitCode: ledger.NoExit}
	if ok, err := s.Insert(ctx, rec, time.Minute); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := s.Client().ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Renew(ctx, "k", ledger.Version{Attempt: 1, State: ledger.Running}, time.Minute); !ok || err != nil {
		t.Fatalf("renew after SCRIPT FLUSH: %v %v", ok, err)
	}
	info, _ := s.Client().Info(ctx, "commandstats").Result()
	if !strings.Contains(info, "cmdstat_evalsha") || !strings.Contains(info, "cmdstat_eval:") {
		t.Fatalf("want both EVALSHA and EVAL in commandstats:\n%s", info)
	}
}

// TestEvictionWarning: an eviction policy is warned about, noeviction is
// not, and a server whose CONFIG command is disabled is tolerated with a
// warning.
func TestEvictionWarning(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"--maxmemory-policy", "allkeys-lru", "--maxmemory", "64mb"}, "maxmemory-policy is allkeys-lru"},
		{[]string{"--maxmemory-policy", "volatile-ttl"}, "maxmemory-policy is volatile-ttl"},
		{[]string{"--rename-command", "CONFIG", ""}, "cannot read maxmemory-policy"},
	} {
		r := testserver.NewRedis(t, tc.args...)
		var mu sync.Mutex
		var warned []string
		s := open(t, r.URL(), Options{Warn: func(m string) { mu.Lock(); warned = append(warned, m); mu.Unlock() }})
		if tc.want == "" {
			if len(warned) != 0 {
				t.Errorf("%v: warned %q", tc.args, warned)
			}
		} else if len(warned) != 1 || !strings.Contains(warned[0], tc.want) || !strings.Contains(warned[0], "noeviction") {
			t.Errorf("%v: warned %q, want %q", tc.args, warned, tc.want)
		}
		// The store works regardless.
		if ok, err := s.Insert(context.Background(), &ledger.Record{Key: "k", State: ledger.Succeeded, Attempt: 1, StartedAt: time.Now()}, 0); !ok || err != nil {
			t.Errorf("%v: insert %v %v", tc.args, ok, err)
		}
	}
}

// TestPasswordRedacted: a server that requires a password: a wrong one's
// error and the store's name never show it; the right one works.
func TestPasswordRedacted(t *testing.T) {
	r := testserver.NewRedis(t, "--requirepass", "open-sesame-42")
	ctx := context.Background()
	bad := strings.Replace(r.URL(), "redis://", "redis://:wrong-secret-77@", 1)
	_, err := Open(ctx, bad, Options{})
	if err == nil || strings.Contains(err.Error(), "wrong-secret-77") || !strings.Contains(err.Error(), "xxxxx") {
		t.Fatalf("wrong password: %v", err)
	}
	var h interface{ Hint() string }
	if !errors.As(err, &h) || !strings.Contains(err.Error(), "refused the password for the default user") || !strings.Contains(h.Hint(), "percent-encode") {
		t.Fatalf("wrong password: %v, want it said and a hint", err)
	}
	// No password at all: NOAUTH, said in words, with how to give one.
	_, err = Open(ctx, r.URL(), Options{})
	if err == nil || !strings.Contains(err.Error(), "requires a password, and the URL gives none") || !errors.As(err, &h) || !strings.Contains(h.Hint(), "redis://:PASSWORD@") {
		t.Fatalf("no password: %v", err)
	}
	// An ACL user's name is said, never the password.
	_, err = Open(ctx, strings.Replace(r.URL(), "redis://", "redis://bob:wrong-secret-77@", 1), Options{})
	if err == nil || !strings.Contains(err.Error(), "for user bob") || strings.Contains(err.Error(), "wrong-secret-77") {
		t.Fatalf("user bob: %v", err)
	}
	good := strings.Replace(r.URL(), "redis://", "redis://:open-sesame-42@", 1)
	s := open(t, good, Options{})
	if strings.Contains(s.Name(), "open-sesame") {
		t.Fatalf("name %q", s.Name())
	}
	_, err = Open(ctx, "redis://:open-sesame-42@127.0.0.1:1/0", Options{})
	if err == nil || strings.Contains(err.Error(), "open-sesame") || !strings.Contains(err.Error(), "cannot reach") {
		t.Fatalf("unreachable: %v", err)
	}
}

// TestPrefixesIsolate: two prefixes on one server are two ledgers.
func TestPrefixesIsolate(t *testing.T) {
	r := testserver.NewRedis(t)
	a := open(t, r.URL()+"?prefix=a:", Options{})
	b := open(t, r.URL()+"?prefix=b:", Options{})
	ctx := context.Background()
	a.Insert(ctx, &ledger.Record{Key: "k", Task: "t", State: ledger.Succeeded, Attempt: 1, StartedAt: time.Now()}, 0)
	if rec, _, _ := b.Get(ctx, "k"); rec != nil {
		t.Fatal("prefix b sees a's record")
	}
	la, _ := a.List(ctx, ledger.Filter{})
	lb, _ := b.List(ctx, ledger.Filter{})
	if len(la) != 1 || len(lb) != 0 {
		t.Fatalf("lists: a %d, b %d", len(la), len(lb))
	}
}

// TestRecordTTL: with ttl= a finished record expires on Redis's clock,
// and List drops it from the index.
func TestRecordTTL(t *testing.T) {
	r := testserver.NewRedis(t)
	s := open(t, r.URL()+"?ttl=300ms", Options{})
	ctx := context.Background()
	s.Insert(ctx, &ledger.Record{Key: "k", Task: "t", State: ledger.Succeeded, Attempt: 1, StartedAt: time.Now()}, 0)
	if l, _ := s.List(ctx, ledger.Filter{}); len(l) != 1 {
		t.Fatalf("list before ttl: %d", len(l))
	}
	time.Sleep(600 * time.Millisecond)
	if rec, _, _ := s.Get(ctx, "k"); rec != nil {
		t.Fatal("record outlived its ttl")
	}
	if l, _ := s.List(ctx, ledger.Filter{}); len(l) != 0 {
		t.Fatalf("list after ttl: %d", len(l))
	}
	if n, _ := s.Client().ZCard(ctx, s.indexKey()).Result(); n != 0 {
		t.Fatalf("index keeps %d expired entries", n)
	}
}

// TestTTLRefused: a ttl Redis cannot honour is refused, naming it, rather
// than written as no expiry; a negative one says so.
func TestTTLRefused(t *testing.T) {
	r := testserver.NewRedis(t)
	ctx := context.Background()
	for q, want := range map[string]string{
		"?ttl=500us": "below a millisecond", "?ttl=1ns": "below a millisecond",
		"?ttl=-1s": "negative", "?ttl=soon": "not a duration",
	} {
		if s, err := Open(ctx, r.URL()+q, Options{}); err == nil || !strings.Contains(err.Error(), want) {
			if s != nil {
				s.Close()
			}
			t.Errorf("%s: %v, want an error saying %q", q, err, want)
		}
	}
	// An empty or repeated prefix= or ttl= is refused, not read as the
	// default (an unset shell variable would share the default ledger).
	for _, q := range []string{"?prefix=", "?prefix=a:&prefix=b:", "?ttl=", "?ttl=1h&ttl=2h"} {
		if s, err := Open(ctx, r.URL()+q, Options{}); err == nil || !strings.Contains(err.Error(), "wants one value") {
			if s != nil {
				s.Close()
			}
			t.Errorf("%s: %v, want refused", q, err)
		}
	}
	if _, err := Open(ctx, r.URL(), Options{RecordTTL: time.Microsecond}); err == nil || !strings.Contains(err.Error(), "below a millisecond") {
		t.Errorf("Options.RecordTTL 1µs: %v", err)
	}
	for _, q := range []string{"?ttl=0", "?ttl=1ms", "?ttl=8760h"} {
		s := open(t, r.URL()+q, Options{})
		if ok, err := s.Insert(ctx, &ledger.Record{Key: "k" + q, State: ledger.Succeeded, Attempt: 1, StartedAt: time.Now()}, 0); !ok || err != nil {
			t.Errorf("%s: insert %v %v", q, ok, err)
		}
	}
}

// TestRecordTTLSparesLiveHolder: with ttl= shorter than the step, a
// running record whose holder keeps renewing its lease outlives the ttl,
// so a second worker's claim is busy and does not run the step again; once
// the holder stops renewing, the record still outlives its lease (it turns
// unknown, not missing) and then expires ttl later.
func TestRecordTTLSparesLiveHolder(t *testing.T) {
	r := testserver.NewRedis(t)
	s := open(t, r.URL()+"?ttl=200ms", Options{})
	ctx := context.Background()
	req := ledger.ClaimRequest{
		Record: ledger.Record{Key: "k", Task: "t", Tool: "deploy", Kind: "run", Fingerprint: "f", Holder: "a"},
		Lease:  300 * time.Millisecond,
	}
	d, err := ledger.Claim(ctx, s, req)
	if err != nil || d.Action != ledger.ActRun {
		t.Fatal(d, err)
	}
	for i := 0; i < 8; i++ {
		time.Sleep(100 * time.Millisecond)
		if err := ledger.Renew(ctx, s, d.Record, 300*time.Millisecond); err != nil {
			t.Fatalf("renew %d (%d ms in, ttl 200 ms): %v", i, 100*(i+1), err)
		}
	}
	req.Record.Holder = "b"
	d2, err := ledger.Claim(ctx, s, req)
	if err != nil || d2.Action != ledger.ActBusy {
		t.Fatalf("second claim of a renewed step after 800 ms (ttl 200 ms): %v %v, want busy", d2.Action, err)
	}
	// The holder stops: the lease runs out (unknown, not gone) …
	time.Sleep(350 * time.Millisecond)
	if rec, expired, err := s.Get(ctx, "k"); err != nil || rec == nil || !expired {
		t.Fatalf("after the lease: record %v expired %v err %v, want an expired running record", rec, expired, err)
	}
	// … and the record goes ttl after the lease.
	time.Sleep(300 * time.Millisecond)
	if rec, _, _ := s.Get(ctx, "k"); rec != nil {
		t.Fatal("record outlived its lease plus ttl")
	}
}

// TestRestartWithAOF: a server with appendfsync always crashed (SIGKILL)
// and restarted: a record written before is there, and a completion sent
// while it was down is retried and lands.
func TestRestartWithAOF(t *testing.T) {
	r := testserver.NewRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	s := open(t, r.URL(), Options{})
	ctx := context.Background()
	rec := &ledger.Record{Key: "k", State: ledger.Running, Attempt: 1, StartedAt: time.Now(), Holder: "h", ExitCode: ledger.NoExit}
	if ok, err := s.Insert(ctx, rec, time.Minute); !ok || err != nil {
		t.Fatal(ok, err)
	}
	r.Stop(syscall.SIGKILL)
	restarted := make(chan struct{})
	go func() { time.Sleep(500 * time.Millisecond); r.Start(t); close(restarted) }()
	done := *rec
	done.State, done.ExitCode, done.EndedAt = ledger.Succeeded, 0, time.Now()
	ok, err := s.Swap(ctx, ledger.Version{Attempt: 1, State: ledger.Running}, false, &done, 0)
	<-restarted
	if !ok || err != nil {
		t.Fatalf("complete across a restart: %v %v", ok, err)
	}
	got, _, err := s.Get(ctx, "k")
	if err != nil || got == nil || got.State != ledger.Succeeded {
		t.Fatalf("after restart: %+v %v", got, err)
	}
}

// TestTLSMismatch: a URL whose TLS does not match the server fails Open
// with errTLSMismatch and a hint, in either direction; a matching one
// opens (the handshake is the store's own dialer's).
func TestTLSMismatch(t *testing.T) {
	plain := testserver.NewRedis(t)
	tlsr, _ := testserver.NewRedisTLS(t)
	for _, tc := range []struct {
		url, hint string
	}{
		{strings.Replace(plain.URL(), "redis://", "rediss://", 1), "use redis://"},
		{strings.Replace(tlsr.URL(), "rediss://", "redis://", 1), "use rediss://"},
		// A dial timeout shorter than the look at what the server speaks
		// (plainProbeAfter): the look comes sooner, or after the deadline.
		{strings.Replace(plain.URL(), "redis://", "rediss://", 1) + "?dial_timeout=200ms", "use redis://"},
		{strings.Replace(plain.URL(), "redis://", "rediss://", 1) + "?dial_timeout=30ms", "use redis://"},
	} {
		_, err := Open(context.Background(), tc.url, Options{})
		var h interface{ Hint() string }
		if !errors.Is(err, errTLSMismatch) || !errors.As(err, &h) || !strings.Contains(h.Hint(), tc.hint) {
			t.Errorf("%s: %v (want a TLS mismatch, hinting %q)", tc.url, err, tc.hint)
		}
	}
	s := open(t, tlsr.URL()+"?skip_verify=true", Options{})
	if _, _, err := s.Get(context.Background(), "k"); err != nil {
		t.Fatalf("TLS store: %v", err)
	}
}

// TestRecordTTLFencesPausedHolder: with ttl= a paused holder's record
// expires (ttl after its lease) and the next claim runs the step again,
// as attempt 2 (the key's mark has no expiry); the holder, continued,
// cannot renew or complete over it. The attempt does not start over at 1,
// and the paused holder's completion does not overwrite the new attempt's record.
func TestRecordTTLFencesPausedHolder(t *testing.T) {
	r := testserver.NewRedis(t)
	s := open(t, r.URL()+"?ttl=200ms", Options{})
	ctx := context.Background()
	req := ledger.ClaimRequest{Record: ledger.Record{Key: "k", Task: "t", Tool: "deploy", Kind: "run", Fingerprint: "f", Holder: "a"}, Lease: 300 * time.Millisecond}
	d, err := ledger.Claim(ctx, s, req)
	if err != nil || d.Action != ledger.ActRun {
		t.Fatal(d, err)
	}
	paused := d.Record
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if rec, _, err := s.Get(ctx, "k"); err == nil && rec == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the record did not expire")
		}
	}
	req.Record.Holder = "b"
	d2, err := ledger.Claim(ctx, s, req)
	if err != nil || d2.Action != ledger.ActRun || d2.Record.Attempt != 2 {
		t.Fatalf("claim after the ttl: %+v %v, want attempt 2", d2, err)
	}
	if err := ledger.Renew(ctx, s, paused, time.Minute); !errors.Is(err, ledger.ErrLeaseLost) {
		t.Fatalf("renewal by the paused holder: %v", err)
	}
	done := *paused
	done.State, done.ExitCode, done.EndedAt = ledger.Succeeded, 0, time.Now()
	if _, err := ledger.Complete(ctx, s, &done); !errors.Is(err, ledger.ErrLeaseLost) {
		t.Fatalf("completion by the paused holder: %v", err)
	}
	if rec, _, _ := s.Get(ctx, "k"); rec == nil || rec.Holder != "b" || rec.State != ledger.Running || rec.Token != d2.Record.Token {
		t.Fatalf("record: %+v, want b's running attempt", rec)
	}
	if ttl, err := s.Client().PTTL(ctx, s.markKey("k")).Result(); err != nil || ttl != -1 {
		t.Fatalf("the mark's ttl: %v %v, want none", ttl, err)
	}
}

// TestReplyTimeouts: a reply gets 30 s, not go-redis's 3 s (a replay of
// two 128 MiB outputs on a loaded machine took longer and failed with an
// i/o timeout on a healthy server); the URL's read_timeout and
// write_timeout still win.
func TestReplyTimeouts(t *testing.T) {
	r := testserver.NewRedis(t)
	for _, tc := range []struct {
		query       string
		read, write time.Duration
	}{
		{"", 30 * time.Second, 30 * time.Second},
		{"?read_timeout=2s", 2 * time.Second, 30 * time.Second},
		{"?write_timeout=4s", 30 * time.Second, 4 * time.Second},
	} {
		s := open(t, r.URL()+tc.query, Options{})
		o := s.Client().Options()
		if o.ReadTimeout != tc.read || o.WriteTimeout != tc.write {
			t.Errorf("%q: read %v, write %v; want %v, %v", tc.query, o.ReadTimeout, o.WriteTimeout, tc.read, tc.write)
		}
	}
}
