package testserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// TestTemplateShared: the initdb'd template is kept in base() under the
// user's and the initdb build's name, and used again only when it is one
// of ours: a directory (not a link to one) of the cluster's user, that
// no one else can write, holding the mark of a finished initdb.
func TestTemplateShared(t *testing.T) {
	data, err := template()
	if err != nil {
		missing(t, "postgresql", err)
	}
	shared := filepath.Dir(data)
	if filepath.Dir(shared) != base() || !strings.HasPrefix(filepath.Base(shared), fmt.Sprintf("pgtemplate-%d-", os.Geteuid())) || !ownTemplate(shared) {
		t.Fatalf("template at %s, want one of ours in %s", data, base())
	}
	if c := NewPostgres(t); c.Dir == shared || !strings.HasPrefix(c.Dir, base()) {
		t.Fatalf("a cluster in %s: want a copy of its own in %s", c.Dir, base())
	}
	if _, err := os.Stat(filepath.Join(shared, "data", "PG_VERSION")); err != nil {
		t.Fatalf("the template after a cluster was copied from it: %v", err)
	}

	uid, gid := os.Geteuid(), os.Getegid()
	if pgUser != nil {
		u, g := ids(pgUser)
		uid, gid = int(u), int(g)
	}
	mk := func(mode os.FileMode, mark bool) string {
		d := filepath.Join(t.TempDir(), "pgtemplate")
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if mark {
			if err := os.WriteFile(filepath.Join(d, templateMark), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chown(d, uid, gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := mk(0o700, true); !ownTemplate(d) {
		t.Errorf("a finished template of ours (%s) is not used", d)
	}
	if d := mk(0o700, false); ownTemplate(d) {
		t.Errorf("a template without the mark of a finished initdb is used")
	}
	if d := mk(0o777, true); ownTemplate(d) {
		t.Errorf("a template others can write is used")
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(mk(0o700, true), link); err != nil {
		t.Fatal(err)
	}
	if ownTemplate(link) {
		t.Errorf("a link to a template is used")
	}
	if os.Geteuid() == 0 {
		d := mk(0o700, true)
		if err := os.Chown(d, uid+1, gid); err != nil {
			t.Fatal(err)
		}
		if ownTemplate(d) {
			t.Errorf("a template of another user (uid %d) is used", uid+1)
		}
	}
}
