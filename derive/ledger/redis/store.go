package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/idemkey/idemkey/derive/ledger/internal/storeutil"
)

// The scripts. A record is a hash: state, attempt and token (compared by
// the scripts), stored (Redis's TIME at the write, in microseconds), rec
// (the rest of the record as JSON), request, stdout, stderr and meta
// (bytes), and task, tool, holder and reason as they are (JSON would turn
// bytes that are not UTF-8 into U+FFFD, and List's filter would then miss
// the task it was given). KEYS are a key's record, lease, mark and
// taken-over record (Store.keys).

// writeLua: write sets the record's hash (at attempt att), lease and high-water
// mark from ARGV[o+1…]: state, attempt, rec, request, stdout, stderr,
// meta, lease ms, ttl ms, task, tool, holder, reason, token, the mark's
// keep ms. With a ttl, only a succeeded or failed record expires: a
// running record under a live or dead holder, and an unknown one, stay
// until a person or gc removes them (one that expired would let the next
// claim run the step again, with no word of the unknown outcome). The
// mark expires its keep after the record.
const writeLua = `
local function write(o, att)
  local t = redis.call('TIME')
  local st = ARGV[o+1]
  redis.call('HSET', KEYS[1], 'state', st, 'attempt', att, 'rec', ARGV[o+3],
    'request', ARGV[o+4], 'stdout', ARGV[o+5], 'stderr', ARGV[o+6], 'meta', ARGV[o+7],
    'task', ARGV[o+10], 'tool', ARGV[o+11], 'holder', ARGV[o+12], 'reason', ARGV[o+13],
    'token', ARGV[o+14], 'stored', t[1] .. string.format('%06d', tonumber(t[2])))
  if st == 'running' then
    redis.call('SET', KEYS[2], att, 'PX', ARGV[o+8])
  else
    redis.call('DEL', KEYS[2])
  end
  if tonumber(att) > tonumber(redis.call('GET', KEYS[3]) or '0') then
    redis.call('SET', KEYS[3], att)
  end
  local ttl = tonumber(ARGV[o+9])
  if ttl > 0 and (st == 'succeeded' or st == 'failed') then
    redis.call('PEXPIRE', KEYS[1], ttl)
    redis.call('PEXPIRE', KEYS[3], ttl + tonumber(ARGV[o+15]))
  else
    redis.call('PERSIST', KEYS[1])
    redis.call('PERSIST', KEYS[3])
  end
end
-- next is the attempt of an insert: ARGV[o+2], or one more than the mark.
local function next(o)
  local a = tonumber(ARGV[o+2])
  local m = tonumber(redis.call('GET', KEYS[3]) or '0') + 1
  if m > a then a = m end
  return string.format('%d', a)
end
-- keep saves the record a claim takes over in KEYS[4] (with its expiry
-- in _pttl) for keepMs, so that a claim its replicas did not acknowledge
-- can put it back (withdraw); a fresh key's claim removes any saved one.
local function keep(keepMs)
  if keepMs == '0' then return end
  if redis.call('EXISTS', KEYS[1]) == 0 then
    redis.call('DEL', KEYS[4])
    return
  end
  redis.call('COPY', KEYS[1], KEYS[4], 'REPLACE')
  redis.call('HSET', KEYS[4], '_pttl', redis.call('PTTL', KEYS[1]))
  redis.call('PEXPIRE', KEYS[4], keepMs)
end
`

// luaScripts are the store's scripts. They are made on first use, not
// in the start-up of every idemkey process (each hashes its source).
type luaScripts struct{ get, insert, insertOrGet, swap, renew, delete, withdraw *redis.Script }

var scripts = sync.OnceValue(func() *luaScripts {
	return &luaScripts{
		get: redis.NewScript(`
local h = redis.call('HGETALL', KEYS[1])
if #h == 0 then return false end
local t = redis.call('TIME')
return {h, redis.call('PTTL', KEYS[2]), t[1], t[2]}
`),
		// ARGV: keep ms, then write's. The attempt inserted, or 0.
		insert: redis.NewScript(writeLua + `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
keep(ARGV[1])
local a = next(1)
write(1, a)
return tonumber(a)
`),
		// ARGV: keep ms, then write's. The attempt inserted, or the
		// stored record as get returns it.
		insertOrGet: redis.NewScript(writeLua + `
local h = redis.call('HGETALL', KEYS[1])
if #h == 0 then
  keep(ARGV[1])
  local a = next(1)
  write(1, a)
  return tonumber(a)
end
local t = redis.call('TIME')
return {h, redis.call('PTTL', KEYS[2]), t[1], t[2]}
`),
		// ARGV: keep ms, from attempt, from state, need expired ('1'),
		// from token, then write's.
		swap: redis.NewScript(writeLua + `
local cur = redis.call('HMGET', KEYS[1], 'attempt', 'state', 'token')
if cur[1] ~= ARGV[2] or cur[2] ~= ARGV[3] or (cur[3] or '') ~= ARGV[5] then return 0 end
if ARGV[4] == '1' and (ARGV[3] ~= 'running' or redis.call('EXISTS', KEYS[2]) == 1) then return 0 end
keep(ARGV[1])
write(5, ARGV[7])
return 1
`),
		// ARGV: attempt, lease ms (0: end it now), state, token. A
		// running record never expires (one of the earlier layout may
		// have an expiry: it goes).
		renew: redis.NewScript(`
local cur = redis.call('HMGET', KEYS[1], 'attempt', 'state', 'token')
if cur[1] ~= ARGV[1] or cur[2] ~= ARGV[3] or cur[2] ~= 'running' or (cur[3] or '') ~= ARGV[4] then return 0 end
local lease = tonumber(ARGV[2])
if lease > 0 then
  redis.call('SET', KEYS[2], ARGV[1], 'PX', lease)
else
  redis.call('DEL', KEYS[2])
end
redis.call('PERSIST', KEYS[1])
return 1
`),
		// ARGV: check ('1'), attempt, state, token, the mark's keep ms.
		// A checked running record goes only when its lease key is gone.
		// The mark keeps the record's attempt, and expires its keep
		// later.
		delete: redis.NewScript(`
local cur = redis.call('HMGET', KEYS[1], 'attempt', 'state', 'token')
if ARGV[1] == '1' then
  if cur[1] ~= ARGV[2] or cur[2] ~= ARGV[3] or (cur[3] or '') ~= ARGV[4] then return 0 end
  if cur[2] == 'running' and redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
end
if cur[1] and tonumber(cur[1]) > tonumber(redis.call('GET', KEYS[3]) or '0') then
  redis.call('SET', KEYS[3], cur[1])
end
if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('PEXPIRE', KEYS[3], ARGV[5]) end
local n = redis.call('DEL', KEYS[1])
redis.call('DEL', KEYS[2], KEYS[4])
return n
`),
		// ARGV: token, took over ('1'), the mark's keep ms. Withdraws a
		// claim still held by token: the record it took over comes back
		// (with its expiry), or a fresh key's record goes. Returns 1, 2
		// when a takeover's saved record is gone (its lease is ended
		// instead: the record reads unknown, never as a fresh key), or 0
		// when token no longer holds the key.
		withdraw: redis.NewScript(`
local cur = redis.call('HMGET', KEYS[1], 'state', 'token')
if cur[1] ~= 'running' or cur[2] ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[2])
if redis.call('EXISTS', KEYS[4]) == 1 then
  local p = tonumber(redis.call('HGET', KEYS[4], '_pttl')) or -1
  redis.call('HDEL', KEYS[4], '_pttl')
  redis.call('RENAME', KEYS[4], KEYS[1])
  if p > 0 then redis.call('PEXPIRE', KEYS[1], p) else redis.call('PERSIST', KEYS[1]) end
  return 1
end
if ARGV[2] == '1' then return 2 end
redis.call('DEL', KEYS[1])
redis.call('PEXPIRE', KEYS[3], ARGV[3])
return 1
`),
	}
})

// writeArgs are write's arguments for rec.
func (s *Store) writeArgs(rec *ledger.Record, lease time.Duration) ([]any, error) {
	meta, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	ms := max(lease.Milliseconds(), 1)
	return []any{string(rec.State), strconv.FormatInt(rec.Attempt, 10), meta,
		rec.Request, rec.Stdout.Data, rec.Stderr.Data, rec.Meta, ms, s.ttl.Milliseconds(),
		rec.Task, rec.Tool, rec.Holder, rec.Reason, rec.Token, markKeep.Milliseconds()}, nil
}

// transient reports whether err is the connection failing (worth a retry
// on a new one), and whether the command may have reached the server.
func transient(err error) (retry, maybeSent bool) {
	if err == nil || errors.Is(err, redis.Nil) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false, false
	}
	msg := err.Error()
	for _, p := range []string{"LOADING", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "MOVED", "ASK", "READONLY"} {
		if strings.HasPrefix(msg, p) {
			// The server refused before running anything: a restart, a
			// failover, a slot moving (on a connection pinned to a
			// node).
			return true, false
		}
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
		if retry && s.cluster != nil {
			s.cluster.ReloadState(ctx) // a failover or a slot moved: learn where
		}
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
// rec). A claim (rec running) is then made durable (s.durable).
func (s *Store) write(ctx context.Context, sc *redis.Script, rec *ledger.Record, args []any, insert bool) (bool, error) {
	cl := s.claim(ctx, rec, !insert)
	args[0] = cl.keepArg()
	var n int64
	run := func() error {
		var err error
		n, err = sc.Run(ctx, cl.on(ctx), s.keys(rec.Key), args...).Int64()
		return err
	}
	defer cl.close()
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
			return cl.confirmed(ctx, rec, false)
		}
		same := !insert && storeutil.Same(stored, rec)
		if same {
			return cl.confirmed(ctx, rec, false)
		}
		return false, nil
	}
	if insert && n > 0 {
		rec.Attempt = n
	}
	if n > 0 {
		return cl.confirmed(ctx, rec, true)
	}
	return false, nil
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
	return s.write(ctx, scripts().insert, rec, append([]any{"0"}, args...), true)
}

// InsertOrGet implements ledger.InsertGetter: one script inserts rec, or
// returns the stored record as Get does.
func (s *Store) InsertOrGet(ctx context.Context, rec *ledger.Record, lease time.Duration) (bool, *ledger.Record, bool, error) {
	args, err := s.writeArgs(rec, lease)
	if err != nil {
		return false, nil, false, err
	}
	cl := s.claim(ctx, rec, false)
	defer cl.close()
	var res any
	maybe, err := s.do(ctx, func() error {
		var err error
		res, err = scripts().insertOrGet.Run(ctx, cl.on(ctx), s.keys(rec.Key), append([]any{cl.keepArg()}, args...)...).Result()
		return err
	})
	if err != nil {
		return false, nil, false, err
	}
	if n, ok := res.(int64); ok && n > 0 {
		rec.Attempt = n
		ok, err := cl.confirmed(ctx, rec, true)
		return ok, nil, false, err
	}
	stored, expired, err := s.decodeGet(res)
	if err != nil {
		return false, nil, false, err
	}
	if maybe && storeutil.SameInsert(stored, rec) {
		rec.Attempt = stored.Attempt
		ok, err := cl.confirmed(ctx, rec, false) // an earlier try inserted it
		return ok, nil, false, err
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
	return s.write(ctx, scripts().swap, rec, append([]any{"0", strconv.FormatInt(from.Attempt, 10), string(from.State), need, from.Token}, args...), false)
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
		n, err = scripts().renew.Run(ctx, s.c, s.keys(key)[:2], strconv.FormatInt(from.Attempt, 10), ms,
			string(from.State), from.Token).Int64()
		return err
	})
	return n == 1, err
}

// Delete implements ledger.Store.
func (s *Store) Delete(ctx context.Context, key string, from *ledger.Version) (bool, error) {
	args := []any{"0", "", "", "", markKeep.Milliseconds()}
	if from != nil {
		args = []any{"1", strconv.FormatInt(from.Attempt, 10), string(from.State), from.Token, markKeep.Milliseconds()}
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

var (
	_ ledger.Store        = (*Store)(nil)
	_ ledger.InsertGetter = (*Store)(nil)
)
