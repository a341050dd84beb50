package clitest

import (
	"context"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/idemkey/idemkey/derive/ledger/testserver"
	"github.com/jackc/pgx/v5"
)

// Store is one shared store under test.
type Store struct {
	Name string
	URL  string
	// stop crashes the server (SIGKILL) for good; nil on a server shared
	// with other tests (PGStore).
	Stop func()
	// empty removes every record (TRUNCATE, FLUSHDB).
	Empty func(t *testing.T)
	// restart crashes the server (SIGKILL) and starts it again after
	// down; nil on a server shared with other tests (PGStore).
	Restart func(t *testing.T, down time.Duration)
}

// PGStore is a fresh database in the PostgreSQL cluster the test binary
// shares between its tests (testserver.Postgres): a database is made in
// milliseconds, a cluster started in seconds. The cluster cannot be
// stopped or restarted by one test (Stop and Restart are nil): a test
// that does takes OwnPGStore.
func PGStore(t *testing.T) *Store {
	url := testserver.Postgres(t)
	return &Store{Name: "postgres", URL: url, Empty: truncate(url)}
}

// OwnPGStore is a PostgreSQL cluster of the test's own, with a fresh
// database, that the test may stop and restart.
func OwnPGStore(t *testing.T) *Store {
	c := testserver.NewPostgres(t)
	url := c.CreateDB(t)
	return &Store{
		Name: "postgres", URL: url,
		Empty: truncate(url),
		Stop:  func() { c.Stop(syscall.SIGKILL) },
		Restart: func(t *testing.T, down time.Duration) {
			c.Stop(syscall.SIGKILL)
			time.Sleep(down)
			c.Start(t)
		},
	}
}

// truncate empties the ledger's table of the database at url.
func truncate(url string) func(t *testing.T) {
	return func(t *testing.T) {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "TRUNCATE idemkey_ledger"); err != nil {
			t.Fatal(err)
		}
	}
}

// RedisStore is a redis-server of the test's own, started with extra.
func RedisStore(t *testing.T, extra ...string) *Store {
	// Persistence as the README asks of a ledger: every write fsynced to
	// the append-only file before it is acknowledged.
	r := testserver.NewRedis(t, append([]string{"--appendonly", "yes", "--appendfsync", "always"}, extra...)...)
	return &Store{
		Name: "redis", URL: r.URL(),
		Empty: func(t *testing.T) {
			opt, _ := goredis.ParseURL(r.URL())
			c := goredis.NewClient(opt)
			defer c.Close()
			if err := c.FlushDB(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
		},
		Stop: func() { r.Stop(syscall.SIGKILL) },
		Restart: func(t *testing.T, down time.Duration) {
			r.Stop(syscall.SIGKILL)
			time.Sleep(down)
			r.Start(t)
		},
	}
}

// EachStore runs f on PostgreSQL (a database in the shared cluster) and
// on Redis (a redis-server of the test's own), not under -short: two
// parallel subtests, which run once the calling test's function returns.
func EachStore(t *testing.T, f func(t *testing.T, s *Store)) { eachStore(t, PGStore, f) }

// EachOwnStore is EachStore on servers of the test's own (a cluster of
// its own for PostgreSQL), for a test that stops or restarts them.
func EachOwnStore(t *testing.T, f func(t *testing.T, s *Store)) { eachStore(t, OwnPGStore, f) }

func eachStore(t *testing.T, pg func(*testing.T) *Store, f func(t *testing.T, s *Store)) {
	if testing.Short() {
		t.Skip("-short: the shared stores (PostgreSQL and a redis-server per test) run in the full suite")
	}
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		f(t, pg(t))
	})
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		f(t, RedisStore(t))
	})
}
