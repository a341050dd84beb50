package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/idemkey/idemkey/derive/ledger/internal/storetest"
	"github.com/idemkey/idemkey/derive/ledger/ledgertest"
	"github.com/idemkey/idemkey/derive/ledger/testserver"
)

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
		if err := st.Client().PExpire(ctx, st.RecordKey(key), time.Millisecond).Err(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if n, err := st.Client().Exists(ctx, st.RecordKey(key)).Result(); err != nil || n == 0 {
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
	t.Parallel()
	r := testserver.NewRedis(t)
	c := caps
	c.Concurrency = 64
	c.OwnStore = func(t *testing.T) ledger.Store { return open(t, testserver.NewRedis(t).URL(), Options{}) }
	ledgertest.Run(t, func(t *testing.T) ledger.Store { return open(t, r.URL(), Options{}) }, c)
}

func TestPrimitives(t *testing.T) {
	t.Parallel()
	r := testserver.NewRedis(t)
	var n atomic.Int32
	storetest.Run(t, func(t *testing.T) ledger.Store {
		return open(t, r.URL()+"?prefix=p"+string(rune('a'+n.Add(1)))+":", Options{})
	})
}

// TestScriptsReloaded: the scripts run by EVALSHA; after SCRIPT FLUSH
// (a restarted server) they are sent again with EVAL and work.
func TestScriptsReloaded(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"--maxmemory-policy", "allkeys-lru", "--maxmemory", "64mb"}, "maxmemory-policy is allkeys-lru"},
		{[]string{"--maxmemory-policy", "volatile-ttl"}, "maxmemory-policy is volatile-ttl"},
		{[]string{"--rename-command", "CONFIG", ""}, "cannot read maxmemory-policy"},
	} {
		r := testserver.NewRedis(t, append([]string{"--appendonly", "yes", "--appendfsync", "always"}, tc.args...)...)
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
	const ttl = 300 * time.Millisecond
	r := testserver.NewRedis(t)
	s := open(t, r.URL()+"?ttl="+ttl.String(), Options{})
	ctx := context.Background()
	start := time.Now()
	s.Insert(ctx, &ledger.Record{Key: "k", Task: "t", State: ledger.Succeeded, Attempt: 1, StartedAt: time.Now()}, 0)
	// A list read later than the ttl (a loaded machine) may find it gone.
	if l, _ := s.List(ctx, ledger.Filter{}); len(l) != 1 && time.Since(start) < ttl {
		t.Fatalf("list before ttl: %d", len(l))
	}
	// The record expires within the ttl, by Redis's own count (-2: gone
	// already, on a loaded machine).
	if d, err := s.Client().PTTL(ctx, s.RecordKey("k")).Result(); err != nil || d > ttl || d == -1 {
		t.Fatalf("the record expires in %v (%v), want at most %v", d, err, ttl)
	}
	testserver.WaitFor(t, 10*time.Second, "the record's expiry", func() bool {
		rec, _, _ := s.Get(ctx, "k")
		return rec == nil
	})
	if d := time.Since(start); d < ttl {
		t.Fatalf("the record was gone after %v, before its ttl", d)
	}
	if l, _ := s.List(ctx, ledger.Filter{}); len(l) != 0 {
		t.Fatalf("list after ttl: %d", len(l))
	}
}

// TestTTLRefused: a ttl Redis cannot honour is refused, naming it, rather
// than written as no expiry; a negative one says so.
func TestTTLRefused(t *testing.T) {
	t.Parallel()
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
// the holder stops renewing, the record turns unknown and never expires:
// claims keep reading it as unknown, long after lease plus ttl.
func TestRecordTTLSparesLiveHolder(t *testing.T) {
	t.Parallel()
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
	// The holder stops: no expiry on its record, whatever the ttl.
	if ms, err := s.Client().PTTL(ctx, s.RecordKey("k")).Result(); err != nil || ms != -1 {
		t.Fatalf("a running record's expiry: %v %v, want none", ms, err)
	}
	// The lease runs out: the next claim records it as unknown …
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, expired, err := s.Get(ctx, "k"); err != nil || expired {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the lease did not run out")
		}
	}
	if d3, err := ledger.Claim(ctx, s, req); err != nil || d3.Action != ledger.ActUnknown {
		t.Fatalf("claim after the lease: %v %v, want unknown", d3, err)
	}
	// … and it stays unknown past lease plus ttl, several times over.
	for i := 0; i < 4; i++ {
		time.Sleep(200 * time.Millisecond)
		if ms, err := s.Client().PTTL(ctx, s.RecordKey("k")).Result(); err != nil || ms != -1 {
			t.Fatalf("an unknown record's expiry: %v %v, want none", ms, err)
		}
		if d4, err := ledger.Claim(ctx, s, req); err != nil || d4.Action != ledger.ActUnknown {
			t.Fatalf("claim %d ms after the unknown: %v %v, want unknown", 200*(i+1), d4, err)
		}
	}
}

// TestRestartWithAOF: a server with appendfsync always crashed (SIGKILL)
// and restarted: a record written before is there, and a completion sent
// while it was down is retried and lands.
func TestRestartWithAOF(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
// does not expire; forgotten behind its back, the next claim runs as
// attempt 2 (the key's mark outlives its record) and the holder, continued,
// cannot renew or complete over it. The mark expires its keep after the
// record went.
func TestRecordTTLFencesPausedHolder(t *testing.T) {
	t.Parallel()
	r := testserver.NewRedis(t)
	s := open(t, r.URL()+"?ttl=200ms", Options{})
	ctx := context.Background()
	req := ledger.ClaimRequest{Record: ledger.Record{Key: "k", Task: "t", Tool: "deploy", Kind: "run", Fingerprint: "f", Holder: "a"}, Lease: 300 * time.Millisecond}
	d, err := ledger.Claim(ctx, s, req)
	if err != nil || d.Action != ledger.ActRun {
		t.Fatal(d, err)
	}
	paused := d.Record
	if ok, err := s.Delete(ctx, "k", nil); !ok || err != nil {
		t.Fatalf("forget: %v %v", ok, err)
	}
	if ms, err := s.Client().PTTL(ctx, s.markKey("k")).Result(); err != nil || ms < markKeep-time.Hour || ms > markKeep {
		t.Fatalf("the mark's expiry after its record went: %v %v, want about %v", ms, err, markKeep)
	}
	req.Record.Holder = "b"
	d2, err := ledger.Claim(ctx, s, req)
	if err != nil || d2.Action != ledger.ActRun || d2.Record.Attempt != 2 {
		t.Fatalf("claim after forget: %+v %v, want attempt 2", d2, err)
	}
	if ms, err := s.Client().PTTL(ctx, s.markKey("k")).Result(); err != nil || ms != -1 {
		t.Fatalf("the mark's expiry while its record runs: %v %v, want none", ms, err)
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
	// b succeeds: the record expires after the ttl, the mark its keep later.
	ok := *d2.Record
	ok.State, ok.ExitCode, ok.EndedAt = ledger.Succeeded, 0, time.Now()
	if _, err := ledger.Complete(ctx, s, &ok); err != nil {
		t.Fatal(err)
	}
	rt, _ := s.Client().PTTL(ctx, s.RecordKey("k")).Result()
	mt, _ := s.Client().PTTL(ctx, s.markKey("k")).Result()
	if rt <= 0 || rt > 200*time.Millisecond || mt < markKeep || mt > markKeep+200*time.Millisecond {
		t.Fatalf("after success: record expires in %v (want ≤ 200ms), mark in %v (want ttl + %v)", rt, mt, markKeep)
	}
}

// TestReplyTimeouts: a reply gets 30 s, not go-redis's 3 s (a replay of
// two 128 MiB outputs on a loaded machine took longer and failed with an
// i/o timeout on a healthy server); the URL's read_timeout and
// write_timeout still win.
func TestReplyTimeouts(t *testing.T) {
	t.Parallel()
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
		o := s.Client().(*redis.Client).Options()
		if o.ReadTimeout != tc.read || o.WriteTimeout != tc.write {
			t.Errorf("%q: read %v, write %v; want %v, %v", tc.query, o.ReadTimeout, o.WriteTimeout, tc.read, tc.write)
		}
	}
}

// TestClusterScenarios: the store scenario table on a Redis Cluster of
// three primaries, each with a replica (every claim waits for it).
func TestClusterScenarios(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a cluster of six servers")
	}
	c := testserver.NewRedisCluster(t, 3, 1)
	cc := caps
	cc.Cramped = nil // maxmemory on a cluster: the single server's case covers it
	// Every key of the store's (its prefix) on every shard: the scenarios
	// that act on the whole store each have a prefix of their own.
	cc.Wipe = func(t *testing.T, s ledger.Store) {
		st := s.(*Store)
		err := st.Client().(*redis.ClusterClient).ForEachMaster(context.Background(), func(ctx context.Context, n *redis.Client) error {
			it := n.Scan(ctx, 0, st.prefix+"*", 1000).Iterator()
			for it.Next(ctx) {
				if err := n.Del(ctx, it.Val()).Err(); err != nil {
					return err
				}
			}
			return it.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	cc.Concurrency = 32
	var prefixes atomic.Int32
	cc.OwnStore = func(t *testing.T) ledger.Store {
		return open(t, fmt.Sprintf("%s&prefix=own%d:", c.URL(), prefixes.Add(1)), Options{})
	}
	ledgertest.Run(t, func(t *testing.T) ledger.Store {
		s := open(t, c.URL(), Options{})
		if !s.Cluster() {
			t.Fatal("not opened as a cluster")
		}
		return s
	}, cc)
}

// TestPersistenceWarning: Open warns, once, about settings that can lose
// records, saying what is lost: no persistence at all (and a restart then
// loses a succeeded record, as the warning says), snapshots only, an
// append-only file not synced on every write, replicas=0 beside a
// connected replica. appendfsync always, and a replica claims wait for,
// get no warning.
func TestPersistenceWarning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	warned := func(s string, args ...string) []string {
		r := testserver.NewRedis(t, args...)
		var got []string
		open(t, r.URL()+s, Options{Warn: func(m string) { got = append(got, m) }})
		return got
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--appendonly", "yes", "--appendfsync", "always"}, ""},
		{[]string{"--appendonly", "yes", "--appendfsync", "everysec"}, "appendfsync is everysec: a crash of Redis's machine loses the records of the last writes"},
		{[]string{"--appendonly", "yes", "--appendfsync", "no"}, "appendfsync is no:"},
		{[]string{"--save", "60 1"}, `snapshots only (appendonly no, save "60 1"): a restart of Redis loses the records written since the last snapshot`},
		{nil, "no persistence (appendonly no, no save): a restart of Redis loses every record, and a step that succeeded runs again"},
	} {
		got := warned("", tc.args...)
		if tc.want == "" && len(got) != 0 || tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want) || !strings.Contains(got[0], "appendfsync always")) {
			t.Errorf("%v: warned %q, want %q", tc.args, got, tc.want)
		}
	}
	// What the warning says: a restart loses the record.
	r := testserver.NewRedis(t)
	s := open(t, r.URL(), Options{})
	if ok, err := s.Insert(ctx, &ledger.Record{Key: "k", State: ledger.Succeeded, Attempt: 1, StartedAt: time.Now()}, 0); !ok || err != nil {
		t.Fatal(ok, err)
	}
	r.Stop(syscall.SIGTERM)
	r.Start(t)
	if rec, _, err := s.Get(ctx, "k"); err != nil || rec != nil {
		t.Fatalf("after a restart without persistence: %v %v, want the record lost", rec, err)
	}
	// A primary with a replica: replicas=0 is warned about, auto is not.
	aof := []string{"--appendonly", "yes", "--appendfsync", "always"}
	p := testserver.NewRedis(t, aof...)
	testserver.NewRedisReplica(t, p, aof...)
	for q, want := range map[string]string{"": "", "?replicas=auto": "", "?replicas=1": "",
		"?replicas=0": "replicas=0 and the server has 1 connected replica(s): a failover to one can lose claims"} {
		var got []string
		open(t, p.URL()+q, Options{Warn: func(m string) { got = append(got, m) }})
		if want == "" && len(got) != 0 || want != "" && (len(got) != 1 || !strings.Contains(got[0], want)) {
			t.Errorf("%q: warned %q, want %q", q, got, want)
		}
	}
}

// TestReplicasParams: replicas= and replica_timeout= are read, and a bad
// value is refused naming it.
func TestReplicasParams(t *testing.T) {
	t.Parallel()
	r := testserver.NewRedis(t)
	for q, want := range map[string]string{
		"?replicas=-1": "replicas=-1: a number", "?replicas=many": "replicas=many: a number",
		"?replica_timeout=soon": "replica_timeout=soon", "?replica_timeout=10us": "replica_timeout=10us",
		"?replicas=1&replicas=2": "wants one value", "?addr=nohost": "addr=nohost: not host:port",
		"?addr=127.0.0.1:1": "not in cluster mode",
	} {
		if s, err := Open(context.Background(), r.URL()+q, Options{}); err == nil || !strings.Contains(err.Error(), want) {
			if s != nil {
				s.Close()
			}
			t.Errorf("%s: %v, want %q", q, err, want)
		}
	}
	s := open(t, r.URL()+"?replicas=2&replica_timeout=250ms", Options{})
	if s.replicas != 2 || s.replicaTimeout != 250*time.Millisecond {
		t.Fatalf("replicas %d, timeout %v", s.replicas, s.replicaTimeout)
	}
	// Two replicas wanted, none there: a claim is withdrawn, a completion
	// is not waited for.
	ctx := context.Background()
	rec := &ledger.Record{Key: "k", State: ledger.Running, Attempt: 1, StartedAt: time.Now(), Token: "t1", ExitCode: ledger.NoExit}
	if ok, err := s.Insert(ctx, rec, time.Minute); ok || !errors.Is(err, ledger.ErrNotDurable) || !strings.Contains(err.Error(), "0 of 2 replica(s)") {
		t.Fatalf("claim with no replica: %v %v", ok, err)
	}
	if got, _, _ := s.Get(ctx, "k"); got != nil {
		t.Fatalf("a withdrawn fresh claim left %+v", got)
	}
	done := &ledger.Record{Key: "d", State: ledger.Succeeded, Attempt: 1, StartedAt: time.Now()}
	if ok, err := s.Insert(ctx, done, 0); !ok || err != nil {
		t.Fatalf("an outcome's write waited: %v %v", ok, err)
	}
}

// TestUpgradeFromSchema1: a ledger of the earlier layout (records at
// PREFIX r:KEY, leases at l:KEY, marks at n:KEY, a sorted set PREFIX
// index) is moved on Open: its records read back (a running one loses the
// expiry an earlier ttl= gave it), a forgotten key's mark keeps its
// attempt and expires; PREFIX index becomes the schema string, which an
// earlier script's ZADD fails on. A newer schema is refused.
func TestUpgradeFromSchema1(t *testing.T) {
	t.Parallel()
	r := testserver.NewRedis(t)
	ctx := context.Background()
	c := r.Client(t)
	p := DefaultPrefix
	now := time.Now()
	for k, st := range map[string]string{"done": "succeeded", "run": "running"} {
		rec := ledger.Record{Key: k, State: ledger.State(st), Attempt: 3, StartedAt: now, Fingerprint: "f"}
		meta, _ := json.Marshal(rec)
		if err := c.HSet(ctx, p+"r:"+k, "state", st, "attempt", "3", "rec", meta, "task", "t").Err(); err != nil {
			t.Fatal(err)
		}
		c.Set(ctx, p+"n:"+k, "3", 0)
		c.ZAdd(ctx, p+"index", redis.Z{Score: float64(now.UnixMilli()), Member: k})
	}
	c.PExpire(ctx, p+"r:run", time.Hour)
	c.Set(ctx, p+"l:run", "3", time.Hour)
	c.Set(ctx, p+"n:gone", "7", 0) // a forgotten key's mark
	s := open(t, r.URL(), Options{})
	if got, _ := c.Get(ctx, p+"index").Result(); got != schemaValue {
		t.Fatalf("index after the upgrade: %q", got)
	}
	recs, err := s.List(ctx, ledger.Filter{})
	if err != nil || len(recs) != 2 {
		t.Fatalf("list after the upgrade: %d records, %v", len(recs), err)
	}
	if rec, expired, err := s.Get(ctx, "run"); err != nil || rec == nil || rec.State != ledger.Running || expired {
		t.Fatalf("the running record: %+v %v %v", rec, expired, err)
	}
	if ms, _ := c.PTTL(ctx, s.RecordKey("run")).Result(); ms != -1 {
		t.Fatalf("the running record's expiry: %v, want none", ms)
	}
	if ms, _ := c.PTTL(ctx, s.markKey("gone")).Result(); ms <= 0 {
		t.Fatalf("the forgotten key's mark: expiry %v, want one", ms)
	}
	d, err := ledger.Claim(ctx, s, ledger.ClaimRequest{Record: ledger.Record{Key: "gone", Fingerprint: "f"}, Lease: time.Minute})
	if err != nil || d.Action != ledger.ActRun || d.Record.Attempt != 8 {
		t.Fatalf("claim of the forgotten key: %+v %v, want attempt 8", d, err)
	}
	if n, _ := c.Exists(ctx, p+"r:done", p+"r:run", p+"l:run", p+"n:gone").Result(); n != 0 {
		t.Fatalf("%d keys of the earlier layout left", n)
	}
	if err := c.ZAdd(ctx, p+"index", redis.Z{Member: "x"}).Err(); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("an earlier script's ZADD on the index: %v, want WRONGTYPE", err)
	}
	c.Set(ctx, p+"index", "idemkey ledger schema 3", 0)
	if _, err := Open(ctx, r.URL(), Options{}); err == nil || !strings.Contains(err.Error(), "schema 3, newer than this idemkey's (2): upgrade idemkey") {
		t.Fatalf("a newer schema: %v", err)
	}
}

// TestClusterResharding: claims and completions go on while slots move
// between primaries (ASK, then MOVED, on the connection a claim's WAIT
// holds too), from before the move starts until after it ends: each lands
// once, and List finds every record where it is.
func TestClusterResharding(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a cluster of six servers")
	}
	c := testserver.NewRedisCluster(t, 3, 1)
	s := open(t, c.URL(), Options{})
	ctx := context.Background()
	ps := c.Primaries()
	var moving sync.WaitGroup
	moving.Add(6)
	var started atomic.Bool
	var moveErr error
	movedDone := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	var mu sync.Mutex
	claimed, during := 0, 0
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; ; i += 6 {
				select {
				case <-movedDone:
					return
				default:
				}
				req := ledger.ClaimRequest{Record: ledger.Record{Key: fmt.Sprintf("k%d", i), Fingerprint: "f", Task: "t"}, Lease: time.Minute}
				d, err := ledger.Claim(ctx, s, req)
				if err != nil || d.Action != ledger.ActRun {
					errs <- fmt.Errorf("claim %d: %v %v", i, d, err)
					return
				}
				done := *d.Record
				done.State, done.ExitCode, done.EndedAt = ledger.Succeeded, 0, time.Now()
				if _, err := ledger.Complete(ctx, s, &done); err != nil {
					errs <- fmt.Errorf("complete %d: %v", i, err)
					return
				}
				mu.Lock()
				claimed++
				if started.Load() {
					during++
				}
				mu.Unlock()
				if i == w+54 {
					moving.Done() // the first ten each: then the move starts
				}
			}
		}()
	}
	go func() {
		moving.Wait()
		started.Store(true)
		moveErr = c.Reshard(ps[0], ps[1], 500)
		close(movedDone)
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if moveErr != nil {
		t.Fatal(moveErr)
	}
	c.WaitOK()
	recs, err := s.List(ctx, ledger.Filter{State: ledger.Succeeded})
	if err != nil || len(recs) != claimed {
		t.Fatalf("list after the resharding: %d records, %v; want %d", len(recs), err, claimed)
	}
	if during == 0 {
		t.Fatal("no step was claimed while the slots moved")
	}
	t.Logf("%d steps claimed and completed, %d of them while the slots moved", claimed, during)
}

// TestSchemaValue: the schema value names the layout's number.
func TestSchemaValue(t *testing.T) {
	if want := "idemkey ledger schema " + strconv.Itoa(schemaVersion); schemaValue != want {
		t.Fatalf("schemaValue %q, want %q", schemaValue, want)
	}
}
