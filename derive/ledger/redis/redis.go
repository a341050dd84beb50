// Package redis is a ledger.Store on one Redis server (a single instance,
// or the primary of a replicated pair; no Redlock), through go-redis.
//
// Each Store method is one Lua script (EVALSHA, falling back to EVAL when
// the server lacks it), so each is atomic on the server. A key's record is
// a hash; its lease is a separate key with a PX expiry, so leases run on
// Redis's own clock: a running record whose lease key is gone has no live
// holder. A sorted set per prefix indexes the records (by start time) for
// List: no KEYS or SCAN on any path.
//
// Redis keeps the ledger only as well as its persistence is configured:
// see the package's README section. The ledger is a cache in front of the
// owner's dedupe, never a replacement for it.
package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/idemkey/idemkey/derive/ledger/internal/storeutil"
)

// DefaultPrefix starts every key the ledger writes, unless the URL
// (?prefix=…) or Options name another.
const DefaultPrefix = "idemkey:"

// Options tunes a Store; the zero value is the default.
type Options struct {
	// Prefix starts every key of the ledger; the URL's prefix parameter
	// wins over it.
	Prefix string
	// RecordTTL, if set, expires each record that long after its last
	// write (Redis's own retention; ledger gc works either way). The URL's
	// ttl parameter (a Go duration) wins over it.
	RecordTTL time.Duration
	// RetryFor is how long a call retries after the connection broke (a
	// restart, a failover); default 10 s, negative: never.
	RetryFor time.Duration
	// Warn receives warnings about the server's configuration (an
	// eviction policy that could drop records); nil drops them.
	Warn func(msg string)
}

// Store is a ledger in one Redis database.
type Store struct {
	c        *redis.Client
	prefix   string
	ttl      time.Duration
	display  string
	secrets  []string
	retryFor time.Duration
}

// quiet drops go-redis's own log lines (its pool prints dial failures on
// the process's stderr): the store reports errors to its caller instead.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// quietLog installs quiet as go-redis's logger, once, before the first
// client is made (not at start-up: most idemkey processes never open one).
var quietLog = sync.OnceFunc(func() { redis.SetLogger(quiet{}) })

// Redact returns the URL with its password replaced by xxxxx.
func Redact(raw string) string { return storeutil.Redact(raw) }

// Open connects to the Redis server at rawURL (redis:// or rediss:// for
// TLS; user, password and database number as go-redis reads them; prefix=
// and ttl= are the ledger's), checks that it answers, and reads its
// maxmemory-policy: any policy but noeviction can evict records or leases
// under memory pressure, and Warn says so. Errors never contain the URL's
// password.
func Open(ctx context.Context, rawURL string, opts Options) (*Store, error) {
	s := &Store{display: Redact(rawURL), secrets: storeutil.Secrets(rawURL), prefix: opts.Prefix, ttl: opts.RecordTTL}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") {
		return nil, fmt.Errorf("%s: not a redis:// or rediss:// URL", s.display)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", s.display, err)
	}
	for _, name := range []string{"prefix", "ttl"} {
		if v, ok := q[name]; ok && (len(v) != 1 || v[0] == "") {
			return nil, fmt.Errorf("%s: %s= wants one value (given %q)", s.display, name, v)
		}
	}
	if q.Has("prefix") {
		s.prefix = q.Get("prefix")
		q.Del("prefix")
	}
	if s.prefix == "" {
		s.prefix = DefaultPrefix
	}
	if q.Has("ttl") {
		if s.ttl, err = time.ParseDuration(q.Get("ttl")); err != nil {
			return nil, fmt.Errorf("%s: ttl=%s: not a duration (such as 720h; 0 for none)", s.display, q.Get("ttl"))
		}
		q.Del("ttl")
	}
	// Redis expires in milliseconds: a ttl below one would have been
	// written as 0, no expiry at all, silently.
	switch {
	case s.ttl < 0:
		return nil, fmt.Errorf("%s: ttl %v: negative (0 for none)", s.display, s.ttl)
	case s.ttl > 0 && s.ttl < time.Millisecond:
		return nil, fmt.Errorf("%s: ttl %v: below a millisecond, Redis's resolution (0 for none)", s.display, s.ttl)
	}
	u.RawQuery = q.Encode()
	o, err := redis.ParseURL(u.String())
	if err != nil {
		return nil, s.redactErr(fmt.Errorf("%s: %w", s.display, err))
	}
	// The store retries itself, knowing which writes may have landed.
	o.MaxRetries = -1
	if !q.Has("dial_timeout") {
		o.DialTimeout = 5 * time.Second
	}
	// go-redis gives a whole reply 3 s by default: a replay of two
	// 128 MiB outputs on a loaded machine took longer, and the run failed
	// with an i/o timeout on a healthy server. A deadline of the caller's
	// context still applies first (ContextTimeoutEnabled); the URL's
	// read_timeout and write_timeout still win.
	if !q.Has("read_timeout") {
		o.ReadTimeout = 30 * time.Second
	}
	if !q.Has("write_timeout") {
		o.WriteTimeout = 30 * time.Second
	}
	o.ContextTimeoutEnabled = true
	s.retryFor = opts.RetryFor
	if s.retryFor == 0 {
		s.retryFor = 10 * time.Second
	}
	// One round trip fewer per process: no CLIENT SETINFO, and RESP2
	// (no HELLO) unless the URL asks for a protocol.
	o.DisableIdentity = true
	if !q.Has("protocol") {
		o.Protocol = 2
	}
	if o.TLSConfig != nil {
		d := &tlsDialer{o: o}
		o.Dialer = d.dial
	}
	quietLog()
	s.c = redis.NewClient(o)
	// CONFIG GET maxmemory-policy is also the check that the server
	// answers: one round trip (after the HELLO go-redis sends on every
	// connection), on the connection the store's scripts use next (a
	// pipeline would take a connection of go-redis's separate pipeline
	// pool: one more connection, and one more HELLO, per process). A reply
	// error other than authentication's (CONFIG renamed away, an ACL
	// without it) means the server answers but hides its policy.
	policy := s.c.ConfigGet(ctx, "maxmemory-policy")
	if err := policy.Err(); err != nil && !configHidden(err) {
		s.c.Close()
		err = authHint(plainToTLS(ctx, o, err), o)
		return nil, s.redactErr(fmt.Errorf("cannot reach the ledger at %s: %w", s.display, err))
	}
	if w := s.evictionWarning(policy); w != "" && opts.Warn != nil {
		opts.Warn(w)
	}
	return s, nil
}

// authHint says how to give the credentials a server asked for (NOAUTH:
// none given; WRONGPASS: not these).
func authHint(err error, o *redis.Options) error {
	switch {
	case strings.HasPrefix(err.Error(), "NOAUTH"):
		return storeutil.Hinted(fmt.Errorf("the server requires a password, and the URL gives none: %w", err),
			"give it in the URL: redis://:PASSWORD@host:port/db (redis://USER:PASSWORD@… for an ACL user), percent-encoding any @ : / in it")
	case strings.HasPrefix(err.Error(), "WRONGPASS"):
		who := "the default user"
		if o.Username != "" {
			who = "user " + o.Username
		}
		return storeutil.Hinted(fmt.Errorf("the server refused the password for %s: %w", who, err),
			"check the URL's user and password (percent-encode any @ : / in the password)")
	}
	return err
}

// configHidden reports whether err is the server refusing CONFIG GET
// itself, rather than the connection or its authentication failing.
func configHidden(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	for _, p := range []string{"WRONGPASS", "NOAUTH", "LOADING", "MASTERDOWN", "BUSY"} {
		if strings.HasPrefix(err.Error(), p) {
			return false
		}
	}
	return true
}

// evictionWarning returns a warning when the server could evict records.
func (s *Store) evictionWarning(cmd *redis.MapStringStringCmd) string {
	m, err := cmd.Result()
	if err != nil {
		return fmt.Sprintf("ledger at %s: cannot read maxmemory-policy (%v): unless it is noeviction, Redis may evict ledger records or leases under memory pressure, and a step could run twice",
			s.display, s.redactErr(err))
	}
	policy := m["maxmemory-policy"]
	if policy == "" || policy == "noeviction" {
		return ""
	}
	return fmt.Sprintf("ledger at %s: maxmemory-policy is %s: under memory pressure Redis may evict ledger records or leases, and a step could run twice; set maxmemory-policy noeviction",
		s.display, policy)
}

func (s *Store) redactErr(err error) error { return storeutil.RedactErr(err, s.secrets) }

// Name is the store's URL with its password redacted.
func (s *Store) Name() string { return s.display }

// Client is the store's Redis client (for tests and tools).
func (s *Store) Client() *redis.Client { return s.c }

func (s *Store) recKey(key string) string   { return s.prefix + "r:" + key }
func (s *Store) leaseKey(key string) string { return s.prefix + "l:" + key }
func (s *Store) indexKey() string           { return s.prefix + "index" }

// markKey is the key's high-water mark of attempts: a plain key with no
// expiry, raised by every write of the record, so that it outlives the
// record (forget, gc, and a ttl= that expires it) and the next claim
// continues above it. FLUSHALL loses it; the claim token still fences.
func (s *Store) markKey(key string) string { return s.prefix + "n:" + key }

// The scripts. A record is a hash: state, attempt and token (compared by
// the scripts), stored (Redis's TIME at the write, in microseconds), rec
// (the rest of the record as JSON), request, stdout, stderr and meta
// (bytes), and task, tool, holder and reason as they are (JSON would turn
// bytes that are not UTF-8 into U+FFFD, and List's filter would then miss
// the task it was given). Its lease is a key with a PX expiry.

// writeLua sets the record's hash (at attempt att), lease, index entry and
// high-water mark from ARGV[o+1…]: key, state, attempt, rec, request,
// stdout, stderr, meta, lease ms, index score, ttl ms, task, tool,
// holder, reason, token. With a ttl, a running record expires ttl after
// its lease (renew pushes both on), never while its holder is alive: a
// record gone under a live lease would let the next claim run the step
// again.
const writeLua = `
local function write(o, att)
  local t = redis.call('TIME')
  redis.call('HSET', KEYS[1], 'state', ARGV[o+2], 'attempt', att, 'rec', ARGV[o+4],
    'request', ARGV[o+5], 'stdout', ARGV[o+6], 'stderr', ARGV[o+7], 'meta', ARGV[o+8],
    'task', ARGV[o+12], 'tool', ARGV[o+13], 'holder', ARGV[o+14], 'reason', ARGV[o+15],
    'token', ARGV[o+16], 'stored', t[1] .. string.format('%06d', tonumber(t[2])))
  if ARGV[o+2] == 'running' then
    redis.call('SET', KEYS[2], att, 'PX', ARGV[o+9])
  else
    redis.call('DEL', KEYS[2])
  end
  redis.call('ZADD', KEYS[3], ARGV[o+10], ARGV[o+1])
  if tonumber(ARGV[o+11]) > 0 then
    local ttl = tonumber(ARGV[o+11])
    if ARGV[o+2] == 'running' then ttl = ttl + tonumber(ARGV[o+9]) end
    redis.call('PEXPIRE', KEYS[1], ttl)
  else
    redis.call('PERSIST', KEYS[1])
  end
  if tonumber(att) > tonumber(redis.call('GET', KEYS[4]) or '0') then
    redis.call('SET', KEYS[4], att)
  end
end
-- next is the attempt of an insert: ARGV[o+3], or one more than the mark.
local function next(o)
  local a = tonumber(ARGV[o+3])
  local m = tonumber(redis.call('GET', KEYS[4]) or '0') + 1
  if m > a then a = m end
  return string.format('%d', a)
end
`

// luaScripts are the store's scripts. They are made on first use, not
// in the start-up of every idemkey process (each hashes its source).
type luaScripts struct{ get, insert, insertOrGet, swap, renew, delete *redis.Script }

var scripts = sync.OnceValue(func() *luaScripts {
	return &luaScripts{
		get: redis.NewScript(`
local h = redis.call('HGETALL', KEYS[1])
if #h == 0 then return false end
local t = redis.call('TIME')
return {h, redis.call('PTTL', KEYS[2]), t[1], t[2]}
`),
		// the attempt inserted, or 0.
		insert: redis.NewScript(writeLua + `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local a = next(0)
write(0, a)
return tonumber(a)
`),
		// the attempt inserted, or the stored record as get returns it.
		insertOrGet: redis.NewScript(writeLua + `
local h = redis.call('HGETALL', KEYS[1])
if #h == 0 then
  local a = next(0)
  write(0, a)
  return tonumber(a)
end
local t = redis.call('TIME')
return {h, redis.call('PTTL', KEYS[2]), t[1], t[2]}
`),
		// ARGV: from attempt, from state, need expired ('1'), from
		// token, then write's.
		swap: redis.NewScript(writeLua + `
local cur = redis.call('HMGET', KEYS[1], 'attempt', 'state', 'token')
if cur[1] ~= ARGV[1] or cur[2] ~= ARGV[2] or (cur[3] or '') ~= ARGV[4] then return 0 end
if ARGV[3] == '1' and (ARGV[2] ~= 'running' or redis.call('EXISTS', KEYS[2]) == 1) then return 0 end
write(4, ARGV[7])
return 1
`),
		// ARGV: attempt, lease ms (0: end it now), ttl ms (0: none),
		// state, token.
		renew: redis.NewScript(`
local cur = redis.call('HMGET', KEYS[1], 'attempt', 'state', 'token')
if cur[1] ~= ARGV[1] or cur[2] ~= ARGV[4] or cur[2] ~= 'running' or (cur[3] or '') ~= ARGV[5] then return 0 end
local lease = tonumber(ARGV[2])
if lease > 0 then
  redis.call('SET', KEYS[2], ARGV[1], 'PX', lease)
else
  redis.call('DEL', KEYS[2])
end
if tonumber(ARGV[3]) > 0 then
  redis.call('PEXPIRE', KEYS[1], lease + tonumber(ARGV[3]))
end
return 1
`),
		// ARGV: key, check ('1'), attempt, state, token. A checked
		// running record goes only when its lease key is gone. The mark
		// keeps the record's attempt (one written before marks were
		// kept has none yet).
		delete: redis.NewScript(`
local cur = redis.call('HMGET', KEYS[1], 'attempt', 'state', 'token')
if ARGV[2] == '1' then
  if cur[1] ~= ARGV[3] or cur[2] ~= ARGV[4] or (cur[3] or '') ~= ARGV[5] then return 0 end
  if cur[2] == 'running' and redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
end
if cur[1] and tonumber(cur[1]) > tonumber(redis.call('GET', KEYS[4]) or '0') then
  redis.call('SET', KEYS[4], cur[1])
end
local n = redis.call('DEL', KEYS[1])
redis.call('DEL', KEYS[2])
redis.call('ZREM', KEYS[3], ARGV[1])
return n
`),
	}
})

func (s *Store) keys(key string) []string {
	return []string{s.recKey(key), s.leaseKey(key), s.indexKey(), s.markKey(key)}
}

// writeArgs are write's arguments for rec.
func (s *Store) writeArgs(rec *ledger.Record, lease time.Duration) ([]any, error) {
	meta, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	ms := max(lease.Milliseconds(), 1)
	return []any{rec.Key, string(rec.State), strconv.FormatInt(rec.Attempt, 10), meta,
		rec.Request, rec.Stdout.Data, rec.Stderr.Data, rec.Meta, ms, rec.StartedAt.UnixMilli(), s.ttl.Milliseconds(),
		rec.Task, rec.Tool, rec.Holder, rec.Reason, rec.Token}, nil
}

// transient reports whether err is the connection failing (worth a retry
// on a new one), and whether the command may have reached the server.
func transient(err error) (retry, maybeSent bool) {
	if err == nil || errors.Is(err, redis.Nil) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false, false
	}
	msg := err.Error()
	if strings.HasPrefix(msg, "LOADING") || strings.HasPrefix(msg, "MASTERDOWN") || strings.HasPrefix(msg, "TRYAGAIN") {
		return true, false // the server refused before running anything
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true, false
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		strings.Contains(msg, "connection reset") || strings.Contains(msg, "broken pipe") || errors.Is(err, redis.ErrClosed) {
		return !errors.Is(err, redis.ErrClosed), true
	}
	return false, false
}

// oom reports whether err is Redis refusing a write under maxmemory
// (noeviction): OOM command not allowed when used memory > 'maxmemory'.
func oom(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.Contains(err.Error(), "OOM command not allowed")
}

// do runs f, retrying for up to RetryFor while the connection fails. It
// reports whether a failed try may have reached the server.
func (s *Store) do(ctx context.Context, f func() error) (maybeApplied bool, err error) {
	deadline := time.Now().Add(s.retryFor)
	delay := 50 * time.Millisecond
	for {
		err = f()
		retry, sent := transient(err)
		maybeApplied = maybeApplied || sent
		if !retry || s.retryFor < 0 || time.Now().After(deadline) || ctx.Err() != nil {
			if err != nil {
				err = s.redactErr(fmt.Errorf("ledger at %s: %w", s.display, err))
				if oom(err) {
					err = ledger.TooLarge(err)
				}
			}
			return maybeApplied, err
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return maybeApplied, ctx.Err()
		}
		delay = min(2*delay, time.Second)
	}
}

// Get implements ledger.Store.
func (s *Store) Get(ctx context.Context, key string) (*ledger.Record, bool, error) {
	var res any
	_, err := s.do(ctx, func() error {
		var err error
		res, err = scripts().get.Run(ctx, s.c, s.keys(key)[:2]).Result()
		return err
	})
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return s.decodeGet(res)
}

func (s *Store) decodeGet(res any) (*ledger.Record, bool, error) {
	a, ok := res.([]any)
	if !ok || len(a) != 4 {
		return nil, false, fmt.Errorf("ledger at %s: unexpected reply %T", s.display, res)
	}
	fields := map[string]string{}
	switch h := a[0].(type) {
	case []any:
		for i := 0; i+1 < len(h); i += 2 {
			k, _ := h[i].(string)
			v, _ := h[i+1].(string)
			fields[k] = v
		}
	case map[any]any:
		for k, v := range h {
			ks, _ := k.(string)
			vs, _ := v.(string)
			fields[ks] = vs
		}
	}
	rec, err := s.decode(fields)
	if err != nil {
		return nil, false, err
	}
	pttl, _ := a[1].(int64)
	sec, _ := strconv.ParseInt(fmt.Sprint(a[2]), 10, 64)
	usec, _ := strconv.ParseInt(fmt.Sprint(a[3]), 10, 64)
	now := time.Unix(sec, usec*1000)
	rec.ReadAt = now
	expired := false
	if rec.State == ledger.Running {
		if pttl >= 0 {
			rec.LeaseUntil = now.Add(time.Duration(pttl) * time.Millisecond)
		} else {
			expired = true // -2: the lease key is gone
		}
	}
	return rec, expired, nil
}

// decode builds a record from its hash fields.
func (s *Store) decode(f map[string]string) (*ledger.Record, error) {
	rec := &ledger.Record{}
	if err := json.Unmarshal([]byte(f["rec"]), rec); err != nil {
		return nil, fmt.Errorf("ledger at %s: a record that is not idemkey's: %v", s.display, err)
	}
	// The text fields' own copies, exact; a record written before they
	// were kept has only the JSON's.
	for name, dst := range textFields(rec) {
		if v, ok := f[name]; ok {
			*dst = v
		}
	}
	rec.State = ledger.State(f["state"])
	rec.Attempt, _ = strconv.ParseInt(f["attempt"], 10, 64)
	rec.Token = f["token"]
	rec.StoredAt = time.Time{}
	if us, err := strconv.ParseInt(f["stored"], 10, 64); err == nil && us > 0 {
		rec.StoredAt = time.UnixMicro(us)
	}
	rec.ReadAt = time.Time{}
	rec.LeaseUntil = time.Time{}
	rec.Request = []byte(f["request"])
	rec.Stdout.Data = []byte(f["stdout"])
	rec.Stderr.Data = []byte(f["stderr"])
	rec.Meta = []byte(f["meta"])
	return rec, nil
}

// textFields are the record's text fields kept in hash fields of their
// own, by name.
func textFields(rec *ledger.Record) map[string]*string {
	return map[string]*string{"task": &rec.Task, "tool": &rec.Tool, "holder": &rec.Holder, "reason": &rec.Reason}
}

// write runs a conditional write script; when a broken connection may
// have let a try land, a later try that matches nothing checks whether
// the stored record is rec (insert: whether it has rec's token). The
// script's reply, when positive, is the attempt an insert stored (set in
// rec).
func (s *Store) write(ctx context.Context, sc *redis.Script, rec *ledger.Record, args []any, insert bool) (bool, error) {
	var n int64
	run := func() error {
		var err error
		n, err = sc.Run(ctx, s.c, s.keys(rec.Key), args...).Int64()
		return err
	}
	maybe, err := s.do(ctx, run)
	// Refused under maxmemory, a small write is tried again for a while:
	// the query buffer of a large write refused just before (the outcome
	// with its outputs) counts as used memory until Redis shrinks it, a
	// few hundred milliseconds later.
	for pause := 50 * time.Millisecond; errors.Is(err, ledger.ErrTooLarge) && argsSize(args) < 1<<20 && pause < 2*time.Second; pause *= 2 {
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return false, err
		}
		var again bool
		again, err = s.do(ctx, run)
		maybe = maybe || again
	}
	if err != nil {
		return false, err
	}
	if n == 0 && maybe {
		stored, _, err := s.Get(ctx, rec.Key)
		if err != nil {
			return false, err
		}
		if insert && storeutil.SameInsert(stored, rec) {
			rec.Attempt = stored.Attempt
			return true, nil
		}
		return !insert && storeutil.Same(stored, rec), nil
	}
	if insert && n > 0 {
		rec.Attempt = n
	}
	return n > 0, nil
}

// argsSize is the size of a script's arguments' bytes.
func argsSize(args []any) int {
	n := 0
	for _, a := range args {
		switch v := a.(type) {
		case string:
			n += len(v)
		case []byte:
			n += len(v)
		}
	}
	return n
}

// Insert implements ledger.Store.
func (s *Store) Insert(ctx context.Context, rec *ledger.Record, lease time.Duration) (bool, error) {
	args, err := s.writeArgs(rec, lease)
	if err != nil {
		return false, err
	}
	return s.write(ctx, scripts().insert, rec, args, true)
}

// InsertOrGet implements ledger.InsertGetter: one script inserts rec, or
// returns the stored record as Get does.
func (s *Store) InsertOrGet(ctx context.Context, rec *ledger.Record, lease time.Duration) (bool, *ledger.Record, bool, error) {
	args, err := s.writeArgs(rec, lease)
	if err != nil {
		return false, nil, false, err
	}
	var res any
	maybe, err := s.do(ctx, func() error {
		var err error
		res, err = scripts().insertOrGet.Run(ctx, s.c, s.keys(rec.Key), args...).Result()
		return err
	})
	if err != nil {
		return false, nil, false, err
	}
	if n, ok := res.(int64); ok && n > 0 {
		rec.Attempt = n
		return true, nil, false, nil
	}
	stored, expired, err := s.decodeGet(res)
	if err != nil {
		return false, nil, false, err
	}
	if maybe && storeutil.SameInsert(stored, rec) {
		rec.Attempt = stored.Attempt
		return true, nil, false, nil // an earlier try inserted it
	}
	return false, stored, expired, nil
}

// Swap implements ledger.Store.
func (s *Store) Swap(ctx context.Context, from ledger.Version, needExpired bool, rec *ledger.Record, lease time.Duration) (bool, error) {
	args, err := s.writeArgs(rec, lease)
	if err != nil {
		return false, err
	}
	need := "0"
	if needExpired {
		need = "1"
	}
	return s.write(ctx, scripts().swap, rec, append([]any{strconv.FormatInt(from.Attempt, 10), string(from.State), need, from.Token}, args...), false)
}

// Renew implements ledger.Store: the lease key's expiry is set to lease
// from now, on Redis's clock (a lease of zero or less removes it: the
// lease has ended).
func (s *Store) Renew(ctx context.Context, key string, from ledger.Version, lease time.Duration) (bool, error) {
	ms := int64(0) // ends the lease now
	if lease > 0 {
		ms = max(lease.Milliseconds(), 1)
	}
	var n int64
	_, err := s.do(ctx, func() error {
		var err error
		n, err = scripts().renew.Run(ctx, s.c, s.keys(key)[:2], strconv.FormatInt(from.Attempt, 10), ms, s.ttl.Milliseconds(),
			string(from.State), from.Token).Int64()
		return err
	})
	return n == 1, err
}

// Delete implements ledger.Store.
func (s *Store) Delete(ctx context.Context, key string, from *ledger.Version) (bool, error) {
	args := []any{key, "0", "", "", ""}
	if from != nil {
		args = []any{key, "1", strconv.FormatInt(from.Attempt, 10), string(from.State), from.Token}
	}
	var n int64
	maybe, err := s.do(ctx, func() error {
		var err error
		n, err = scripts().delete.Run(ctx, s.c, s.keys(key), args...).Int64()
		return err
	})
	if err != nil {
		return false, err
	}
	if n == 0 && maybe {
		// A try may have deleted it: it is gone either way.
		rec, _, err := s.Get(ctx, key)
		return rec == nil && err == nil, err
	}
	return n == 1, nil
}

// List implements ledger.Store: the index in pages, each page's records
// read in one pipeline (without their outputs); index entries whose
// record expired (ttl) are dropped from the index.
func (s *Store) List(ctx context.Context, f ledger.Filter) ([]*ledger.Record, error) {
	var out []*ledger.Record
	const page = 500
	for start := int64(0); ; start += page {
		var keys []string
		_, err := s.do(ctx, func() error {
			var err error
			keys, err = s.c.ZRange(ctx, s.indexKey(), start, start+page-1).Result()
			return err
		})
		if err != nil {
			return nil, err
		}
		if len(keys) == 0 {
			return out, nil
		}
		var cmds []*redis.SliceCmd
		var pttls []*redis.DurationCmd
		var now *redis.TimeCmd
		_, err = s.do(ctx, func() error {
			pipe := s.c.Pipeline()
			cmds, pttls = cmds[:0], pttls[:0]
			for _, k := range keys {
				cmds = append(cmds, pipe.HMGet(ctx, s.recKey(k), listFields...))
				pttls = append(pttls, pipe.PTTL(ctx, s.leaseKey(k)))
			}
			now = pipe.Time(ctx)
			_, err := pipe.Exec(ctx)
			return err
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, err
		}
		var gone []any
		for i, c := range cmds {
			v := c.Val()
			if len(v) != len(listFields) || v[0] == nil {
				gone = append(gone, keys[i])
				continue
			}
			fields := map[string]string{}
			for j, name := range listFields {
				if str, ok := v[j].(string); ok {
					fields[name] = str
				}
			}
			rec, err := s.decode(fields)
			if err != nil {
				return nil, err
			}
			rec.Request, rec.Stdout.Data, rec.Stderr.Data, rec.Meta = nil, nil, nil, nil
			rec.ReadAt = now.Val()
			if d := pttls[i].Val(); rec.State == ledger.Running && d >= 0 {
				rec.LeaseUntil = rec.ReadAt.Add(d)
			} else if rec.State == ledger.Running {
				rec.LeaseUntil = rec.ReadAt // the lease key is gone: expired
			}
			if (f.Task == "" || rec.Task == f.Task) && (f.Tool == "" || rec.Tool == f.Tool) && (f.State == "" || rec.State == f.State) {
				out = append(out, rec)
			}
		}
		if len(gone) > 0 {
			s.c.ZRem(ctx, s.indexKey(), gone...)
			start -= int64(len(gone))
		}
		if len(keys) < page {
			return out, nil
		}
	}
}

// listFields are the hash fields List reads: all but the outputs' and
// request's bytes.
var listFields = []string{"state", "attempt", "rec", "task", "tool", "holder", "reason", "token", "stored"}

// Close implements ledger.Store.
func (s *Store) Close() error { return s.c.Close() }

var (
	_ ledger.Store        = (*Store)(nil)
	_ ledger.InsertGetter = (*Store)(nil)
)
