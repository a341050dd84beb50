package testserver

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestPostgresRestart: a database made in a cluster of the test's own
// keeps a committed row across a crash of the server (SIGKILL) and a
// restart on the same port.
func TestPostgresRestart(t *testing.T) {
	c := NewPostgres(t)
	url := c.CreateDB(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE x (v int); INSERT INTO x VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	c.Stop(syscall.SIGKILL)
	if _, err := pgx.Connect(ctx, url); err == nil {
		t.Fatal("connected to a stopped server")
	}
	c.Start(t)
	conn, err = pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v int
	if err := conn.QueryRow(ctx, "SELECT v FROM x").Scan(&v); err != nil || v != 42 {
		t.Fatalf("after restart: v=%d err=%v", v, err)
	}
}

// TestPostgresShared: two fresh databases in the shared cluster are
// distinct.
func TestPostgresShared(t *testing.T) {
	a, b := Postgres(t), Postgres(t)
	if a == b {
		t.Fatalf("same database twice: %s", a)
	}
}

// TestRedisStopStart: a server with an append-only file fsynced on every
// write keeps a key across a crash and a restart.
func TestRedisStopStart(t *testing.T) {
	r := NewRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	ctx := context.Background()
	opt, _ := redis.ParseURL(r.URL())
	c := redis.NewClient(opt)
	defer c.Close()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	r.Stop(syscall.SIGKILL)
	r.Start(t)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if v, err := c.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("after restart: %q %v", v, err)
	}
}
