package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The layout. Every key an idempotency key touches is PREFIX{KEY}:X, X
// one letter: r its record (a hash), l its lease (a string with a PX
// expiry), n its high-water mark of attempts, w the record a claim took
// over, kept while the claim waits for its replicas (see durable.go). The
// braces make KEY the hash tag, so on a cluster the four share one slot
// (a KEY holding a "}" is cut there: still the same tag for all four).
// The four suffixes end in distinct letters, so no key's name is another
// key's.

// schemaVersion is the layout's number, kept in PREFIX index.
const schemaVersion = 2

// schemaValue is PREFIX index's value, the layout's number in words: a
// string, where the earlier layout kept a sorted set that its every write
// added to. An older idemkey's write then fails (WRONGTYPE) before it can
// hold a key. A constant: nothing is built at every process's start-up.
const schemaValue = "idemkey ledger schema 2"

// markKeep is how long a key's high-water mark outlives its record. The
// claim token fences a paused holder on its own; the mark keeps attempt
// numbers rising for a key that is claimed again within this time (a
// retry after gc or ttl=), and expiring it keeps the ledger from growing
// by one key per idempotency key ever used.
const markKeep = 90 * 24 * time.Hour

func (s *Store) name(key, kind string) string { return s.prefix + "{" + key + "}:" + kind }

// RecordKey is the Redis key of KEY's record (a hash), for tests and
// tools.
func (s *Store) RecordKey(key string) string { return s.name(key, "r") }
func (s *Store) leaseKey(key string) string  { return s.name(key, "l") }
func (s *Store) markKey(key string) string   { return s.name(key, "n") }
func (s *Store) schemaKey() string           { return s.prefix + "index" }

// keys are a key's record, lease, mark and taken-over record, the KEYS of
// its scripts.
func (s *Store) keys(key string) []string {
	return []string{s.name(key, "r"), s.name(key, "l"), s.name(key, "n"), s.name(key, "w")}
}

// recordPattern is a SCAN MATCH pattern for the ledger's records.
func (s *Store) recordPattern() string { return globEscape(s.prefix) + "{*}:r" }

// keyOf returns the idempotency key of a record's Redis key.
func (s *Store) keyOf(name string) (string, bool) {
	k, ok := strings.CutPrefix(name, s.prefix+"{")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(k, "}:r")
}

// globEscape escapes a glob pattern's special characters.
func globEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[]\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// upgradeLua moves a ledger of the earlier layout (PREFIX r:KEY, l:KEY,
// n:KEY and a sorted set PREFIX index) to this one and writes the schema
// value, in one script: no worker sees half of it. KEYS[1] is PREFIX
// index; ARGV: the prefix, the schema value, the marks' keep in ms, the
// SCAN pattern of the earlier marks ("" on a cluster, where the earlier
// layout never worked). Running and unknown records lose any expiry (an
// earlier ttl= gave them one). Returns the schema value found or written.
// It is made on first use, as the store's scripts are (each hashes its
// source).
var upgradeLua = sync.OnceValue(func() *redis.Script {
	return redis.NewScript(`
local idx = KEYS[1]
local ty = redis.call('TYPE', idx)['ok']
if ty == 'string' then return redis.call('GET', idx) end
if ty ~= 'zset' and ty ~= 'none' then
  return redis.error_reply('IDEMKEY ' .. idx .. ' is a ' .. ty .. ', not an idemkey ledger index')
end
local p = ARGV[1]
local function move(k, kind)
  local old, new = p .. kind .. ':' .. k, p .. '{' .. k .. '}:' .. kind
  if redis.call('EXISTS', old) == 1 then
    redis.call('RENAME', old, new)
    return new
  end
  return nil
end
if ty == 'zset' then
  for _, k in ipairs(redis.call('ZRANGE', idx, 0, -1)) do
    local r = move(k, 'r')
    move(k, 'l')
    move(k, 'n')
    if r then
      local st = redis.call('HGET', r, 'state')
      if st == 'running' or st == 'unknown' then redis.call('PERSIST', r) end
    end
  end
  redis.call('DEL', idx)
end
if ARGV[4] ~= '' then
  local cursor = '0'
  repeat
    local res = redis.call('SCAN', cursor, 'MATCH', ARGV[4], 'COUNT', 1000)
    cursor = res[1]
    for _, old in ipairs(res[2]) do
      local new = move(string.sub(old, #p + 3), 'n')
      if new and redis.call('PTTL', new) < 0 then redis.call('PEXPIRE', new, ARGV[3]) end
    end
  until cursor == '0'
end
redis.call('SET', idx, ARGV[2])
return ARGV[2]
`)
})

// upgrade checks the ledger's schema, and moves a ledger of the earlier
// layout (or none) to this one.
func (s *Store) upgrade(ctx context.Context, srv *server) error {
	if srv.schemaErr == nil && srv.schema == schemaValue {
		return nil
	}
	marks := ""
	if s.cluster == nil {
		marks = globEscape(s.prefix) + "n:*"
	}
	var got string
	_, err := s.do(ctx, func() error {
		var err error
		got, err = upgradeLua().Run(ctx, s.c, []string{s.schemaKey()}, s.prefix, schemaValue, markKeep.Milliseconds(), marks).Text()
		return err
	})
	if err != nil {
		return fmt.Errorf("ledger at %s: cannot check its schema: %w", s.display, err)
	}
	if got == schemaValue {
		return nil
	}
	if v, ok := strings.CutPrefix(got, "idemkey ledger schema "); ok {
		if n, err := strconv.Atoi(v); err == nil && n > schemaVersion {
			return fmt.Errorf("ledger at %s has schema %d, newer than this idemkey's (%d): upgrade idemkey", s.display, n, schemaVersion)
		}
	}
	return fmt.Errorf("ledger at %s: %s holds %q, not an idemkey ledger's schema", s.display, s.schemaKey(), got)
}
