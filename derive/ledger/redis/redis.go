// Package redis is a ledger.Store on Redis, through go-redis: one server
// (a single instance, or the primary of a replicated pair; no Redlock), or
// a Redis Cluster, found by the same redis:// URL (the server reports
// cluster_enabled:1) and reached through go-redis's cluster client.
//
// Each Store method is one Lua script (EVALSHA, falling back to EVAL when
// the server lacks it), so each is atomic on the server (on a cluster, on
// the key's shard). A key's record is a hash; its lease is a separate key
// with a PX expiry, so leases run on Redis's own clock: a running record
// whose lease key is gone has no live holder. Every key one idempotency
// key touches carries it as a hash tag (PREFIX{KEY}:r, :l, :n, :w), so
// they share a hash slot; no key is touched by every write, and List
// scans every primary for the records.
//
// The ledger's layout has a schema number, kept in PREFIX index (a
// string). Opening a ledger of the earlier layout (records at PREFIX r:KEY,
// a sorted set at PREFIX index) moves it to this one in one script; an
// older idemkey's scripts then fail on it (the sorted set they add to is a
// string, the records they compare are not where they look), so that an
// older worker left in a fleet can neither claim nor complete.
//
// Redis keeps the ledger only as well as its persistence and replication
// are configured: Open warns about settings that can lose records, and a
// claim waits for a replica's acknowledgement (replicas=). The ledger is
// a cache in front of the owner's dedupe, never a replacement for it.
package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemkey/idemkey/derive/ledger/internal/storeutil"
)

// DefaultPrefix starts every key the ledger writes, unless the URL
// (?prefix=…) or Options name another.
const DefaultPrefix = "idemkey:"

// DefaultReplicaTimeout is how long a claim waits for its replicas'
// acknowledgement, unless the URL's replica_timeout= says otherwise.
const DefaultReplicaTimeout = 5 * time.Second

// Options tunes a Store; the zero value is the default.
type Options struct {
	// Prefix starts every key of the ledger; the URL's prefix parameter
	// wins over it.
	Prefix string
	// RecordTTL, if set, expires each succeeded or failed record that
	// long after its last write (Redis's own retention; ledger gc works
	// either way). Running and unknown records never expire. The URL's
	// ttl parameter (a Go duration) wins over it.
	RecordTTL time.Duration
	// RetryFor is how long a call retries after the connection broke (a
	// restart, a failover); default 10 s, negative: never.
	RetryFor time.Duration
	// Warn receives warnings about the server's configuration (an
	// eviction policy, or persistence, that could drop records); nil
	// drops them.
	Warn func(msg string)
}

// Store is a ledger in one Redis database, or in a Redis Cluster.
type Store struct {
	c        redis.UniversalClient
	single   *redis.Client        // a single server: c
	cluster  *redis.ClusterClient // a cluster: c
	prefix   string
	ttl      time.Duration
	display  string
	secrets  []string
	retryFor time.Duration

	// replicas is how many replicas must acknowledge a claim (-1: auto,
	// one when the key's primary has a connected replica);
	// replicaTimeout bounds the wait.
	replicas       int
	replicaTimeout time.Duration
	autoMu         sync.Mutex
	auto           map[string]int // connected replicas, by primary address
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

// ledgerParams are the URL's parameters that are the ledger's, not
// go-redis's.
var ledgerParams = []string{"prefix", "ttl", "replicas", "replica_timeout"}

// Open connects to the Redis server at rawURL (redis:// or rediss:// for
// TLS; user, password and database number as go-redis reads them;
// prefix=, ttl=, replicas=, replica_timeout= and addr= are the ledger's),
// checks that it answers, and reads its configuration: a server in
// cluster mode is used through the cluster client (with the URL's host
// and every addr=host:port as seeds), and Warn is told about settings
// that can lose records (an eviction policy, missing persistence, a
// replica that claims do not wait for). Errors never contain the URL's
// password.
func Open(ctx context.Context, rawURL string, opts Options) (*Store, error) {
	s := &Store{display: Redact(rawURL), secrets: storeutil.Secrets(rawURL), prefix: opts.Prefix, ttl: opts.RecordTTL,
		replicas: -1, replicaTimeout: DefaultReplicaTimeout, auto: map[string]int{}}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") {
		return nil, fmt.Errorf("%s: not a redis:// or rediss:// URL", s.display)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", s.display, err)
	}
	seeds, err := s.readParams(q)
	if err != nil {
		return nil, err
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
	// read_timeout and write_timeout still win. A claim's WAIT gets its
	// replica_timeout on top.
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
	// While other seeds remain, one dial per seed: go-redis retries a
	// failed dial 5 times, 100 ms apart (5 dial timeouts for a seed that
	// never answers), and every process that opens the ledger would pay
	// that for a dead first node before it tried the next.
	if len(seeds) > 0 {
		o.DialerRetries = 1
	}
	quietLog()
	s.single = redis.NewClient(o)
	s.c = s.single
	// One round trip reads what Open needs, on the connection the
	// store's scripts use next: the settings that can lose records, the
	// server's INFO (cluster mode, replicas) and the ledger's schema.
	srv, err := s.probe(ctx)
	// The URL's node is down: a cluster's other seeds may answer.
	for i := 0; err != nil && i < len(seeds) && dialFailed(err); i++ {
		s.single.Close()
		o.Addr = seeds[i]
		if i == len(seeds)-1 {
			o.DialerRetries = 0 // the last seed: go-redis's retries
		}
		s.single = redis.NewClient(o)
		s.c = s.single
		seeds[i] = s.single.Options().Addr
		srv, err = s.probe(ctx)
	}
	if err != nil {
		s.single.Close()
		err = authHint(plainToTLS(ctx, o, err), o)
		return nil, s.redactErr(fmt.Errorf("cannot reach the ledger at %s: %w", s.display, err))
	}
	if srv.info["cluster_enabled"] == "1" {
		if err := s.useCluster(ctx, o, seeds); err != nil {
			return nil, err
		}
		if srv.schema, srv.schemaErr = s.c.Get(ctx, s.schemaKey()).Result(); errors.Is(srv.schemaErr, redis.Nil) {
			srv.schemaErr = nil
		}
	} else if len(seeds) > 0 {
		s.single.Close()
		return nil, fmt.Errorf("%s: addr= names more nodes of a Redis Cluster, and the server is not in cluster mode (cluster_enabled:0)", s.display)
	}
	if err := s.upgrade(ctx, srv); err != nil {
		s.c.Close()
		return nil, s.redactErr(err)
	}
	if opts.Warn != nil {
		for _, w := range s.warnings(srv) {
			opts.Warn(w)
		}
	}
	return s, nil
}

// dialFailed reports whether err is a connection that could not be made.
func dialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// readParams takes the ledger's parameters out of q, and returns the
// cluster seeds of its addr= parameters.
func (s *Store) readParams(q url.Values) ([]string, error) {
	for _, name := range ledgerParams {
		if v, ok := q[name]; ok && (len(v) != 1 || v[0] == "") {
			return nil, fmt.Errorf("%s: %s= wants one value (given %q)", s.display, name, v)
		}
	}
	if q.Has("prefix") {
		s.prefix = q.Get("prefix")
	}
	if s.prefix == "" {
		s.prefix = DefaultPrefix
	}
	var err error
	if q.Has("ttl") {
		if s.ttl, err = time.ParseDuration(q.Get("ttl")); err != nil {
			return nil, fmt.Errorf("%s: ttl=%s: not a duration (such as 720h; 0 for none)", s.display, q.Get("ttl"))
		}
	}
	// Redis expires in milliseconds: a ttl below one would have been
	// written as 0, no expiry at all, silently.
	switch {
	case s.ttl < 0:
		return nil, fmt.Errorf("%s: ttl %v: negative (0 for none)", s.display, s.ttl)
	case s.ttl > 0 && s.ttl < time.Millisecond:
		return nil, fmt.Errorf("%s: ttl %v: below a millisecond, Redis's resolution (0 for none)", s.display, s.ttl)
	}
	if v := q.Get("replicas"); v != "" && v != "auto" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%s: replicas=%s: a number of replicas (0 for none), or auto", s.display, v)
		}
		s.replicas = n
	}
	if v := q.Get("replica_timeout"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Millisecond {
			return nil, fmt.Errorf("%s: replica_timeout=%s: a duration of a millisecond or more (such as 5s)", s.display, v)
		}
		s.replicaTimeout = d
	}
	seeds := q["addr"]
	for _, a := range seeds {
		if h, p, err := net.SplitHostPort(a); err != nil || h == "" || p == "" {
			return nil, fmt.Errorf("%s: addr=%s: not host:port", s.display, a)
		}
	}
	for _, name := range append(ledgerParams, "addr") {
		q.Del(name)
	}
	return seeds, nil
}

// useCluster replaces the single server's client by a cluster client with
// the same options, seeded with the URL's node and seeds.
func (s *Store) useCluster(ctx context.Context, o *redis.Options, seeds []string) error {
	s.single.Close()
	s.single = nil
	if o.DB != 0 {
		return fmt.Errorf("%s: a Redis Cluster has only database 0 (the URL names %d)", s.display, o.DB)
	}
	s.cluster = redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:    append([]string{o.Addr}, seeds...),
		Username: o.Username, Password: o.Password, TLSConfig: o.TLSConfig, Dialer: o.Dialer,
		Protocol: o.Protocol, DisableIdentity: o.DisableIdentity, ClientName: o.ClientName,
		MaxRetries: -1, DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
		ContextTimeoutEnabled: o.ContextTimeoutEnabled, PoolSize: o.PoolSize, MinIdleConns: o.MinIdleConns,
		PoolTimeout: o.PoolTimeout,
	})
	s.c = s.cluster
	if err := s.cluster.Ping(ctx).Err(); err != nil {
		s.cluster.Close()
		return s.redactErr(fmt.Errorf("cannot reach the Redis Cluster at %s: %w", s.display, err))
	}
	return nil
}

// server is what Open read of the server.
type server struct {
	config    map[string]string // nil: CONFIG is hidden (configErr)
	configErr error
	info      map[string]string
	schema    string
	schemaErr error
}

// configNames are the settings Open reads: those that decide whether the
// server can lose records.
var configNames = []string{"maxmemory-policy", "appendonly", "appendfsync", "save"}

// probe reads the server's settings, INFO and the ledger's schema in one
// pipeline on one connection. An error is the connection's or its
// authentication's; a reply error of CONFIG other than those (CONFIG
// renamed away, an ACL without it) means the server answers but hides
// its settings.
func (s *Store) probe(ctx context.Context) (*server, error) {
	conn := s.single.Conn()
	defer conn.Close()
	args := []any{"CONFIG", "GET"}
	for _, n := range configNames {
		args = append(args, n)
	}
	var cfg *redis.Cmd
	var info *redis.StringCmd
	var schema *redis.StringCmd
	_, perr := conn.Pipelined(ctx, func(p redis.Pipeliner) error {
		cfg = p.Do(ctx, args...)
		info = p.Info(ctx)
		schema = p.Get(ctx, s.schemaKey())
		return nil
	})
	if perr != nil && !errors.Is(perr, redis.Nil) && !configHidden(perr) {
		return nil, perr
	}
	srv := &server{config: map[string]string{}, info: map[string]string{}}
	err := cfg.Err()
	if err != nil && strings.Contains(err.Error(), "wrong number of arguments") {
		// Redis before 7 reads one setting per CONFIG GET.
		err = nil
		for _, n := range configNames {
			m, e := conn.ConfigGet(ctx, n).Result()
			if e != nil {
				err = e
				break
			}
			for k, v := range m {
				srv.config[k] = v
			}
		}
	} else if err == nil {
		if a, ok := cfg.Val().([]any); ok {
			for i := 0; i+1 < len(a); i += 2 {
				srv.config[fmt.Sprint(a[i])] = fmt.Sprint(a[i+1])
			}
		} else if m, ok := cfg.Val().(map[any]any); ok {
			for k, v := range m {
				srv.config[fmt.Sprint(k)] = fmt.Sprint(v)
			}
		}
	}
	if err != nil {
		if !configHidden(err) {
			return nil, err
		}
		srv.config, srv.configErr = nil, err
	}
	if err := info.Err(); err != nil && !configHidden(err) {
		return nil, err
	}
	for _, line := range strings.Split(info.Val(), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			srv.info[k] = v
		}
	}
	srv.schema, srv.schemaErr = schema.Result()
	if errors.Is(srv.schemaErr, redis.Nil) {
		srv.schemaErr = nil
	}
	if srv.info["role"] == "master" || srv.info["role"] == "" {
		if n, err := strconv.Atoi(srv.info["connected_slaves"]); err == nil {
			s.auto[""] = n
		}
	}
	return srv, nil
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

// configHidden reports whether err is the server refusing a command
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

// warnings are Open's warnings about settings that can lose records: an
// eviction policy, persistence that a restart or a crash loses records
// to, a replica that claims do not wait for.
func (s *Store) warnings(srv *server) []string {
	if srv.config == nil {
		return []string{fmt.Sprintf("ledger at %s: cannot read maxmemory-policy (%v): unless it is noeviction, Redis may evict ledger records or leases under memory pressure, and a step could run twice",
			s.display, s.redactErr(srv.configErr))}
	}
	var out []string
	if policy := srv.config["maxmemory-policy"]; policy != "" && policy != "noeviction" {
		out = append(out, fmt.Sprintf("ledger at %s: maxmemory-policy is %s: under memory pressure Redis may evict ledger records or leases, and a step could run twice; set maxmemory-policy noeviction",
			s.display, policy))
	}
	if w := persistenceWarning(srv.config); w != "" {
		out = append(out, fmt.Sprintf("ledger at %s: %s", s.display, w))
	}
	if n := s.auto[""]; s.replicas == 0 && n > 0 {
		out = append(out, fmt.Sprintf("ledger at %s: replicas=0 and the server has %d connected replica(s): a failover to one can lose claims the primary acknowledged, and a step could run twice; drop replicas=0 (auto waits for one replica)",
			s.display, n))
	}
	return out
}

// persistenceWarning says what a server with these settings loses when it
// restarts or its machine crashes, or "" when it fsyncs every write.
func persistenceWarning(cfg map[string]string) string {
	const fix = "set appendonly yes and appendfsync always"
	aof, fsync, save := cfg["appendonly"], cfg["appendfsync"], strings.TrimSpace(cfg["save"])
	switch {
	case aof == "" && fsync == "":
		return "" // not reported (a managed service's CONFIG without these)
	case aof != "yes" && save == "":
		return "no persistence (appendonly no, no save): a restart of Redis loses every record, and a step that succeeded runs again; " + fix
	case aof != "yes":
		return fmt.Sprintf("snapshots only (appendonly no, save %q): a restart of Redis loses the records written since the last snapshot, and such a step runs again; %s", save, fix)
	case fsync != "always":
		return fmt.Sprintf("appendfsync is %s: a crash of Redis's machine loses the records of the last writes before it (a second or more), and such a step can run again; %s", fsync, fix)
	}
	return ""
}

func (s *Store) redactErr(err error) error { return storeutil.RedactErr(err, s.secrets) }

// Name is the store's URL with its password redacted.
func (s *Store) Name() string { return s.display }

// Client is the store's Redis client (a *redis.Client, or a
// *redis.ClusterClient on a cluster), for tests and tools.
func (s *Store) Client() redis.UniversalClient { return s.c }

// Cluster reports whether the store is on a Redis Cluster.
func (s *Store) Cluster() bool { return s.cluster != nil }

// Close implements ledger.Store.
func (s *Store) Close() error { return s.c.Close() }
