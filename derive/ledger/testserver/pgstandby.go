package testserver

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// NewStandby makes a streaming standby of c (pg_basebackup -R: a copy of
// c's data directory that replicates from it, named name as its
// application_name), starts it on a port of its own, and waits until c
// lists it as streaming. It is removed when the test ends.
func (c *PG) NewStandby(t testing.TB, name string) *PG {
	t.Helper()
	dir, err := newDir("pgstandby", c.owner)
	if err != nil {
		t.Fatal(err)
	}
	sb := &PG{Dir: dir, bindir: c.bindir, owner: c.owner, extra: c.extra}
	t.Cleanup(sb.remove)
	conninfo := fmt.Sprintf("host=127.0.0.1 port=%d user=postgres application_name=%s", c.Port, name)
	cmd := exec.Command(filepath.Join(c.bindir, "pg_basebackup"), "-d", conninfo, "-D", filepath.Join(dir, "data"),
		"-R", "-X", "stream", "-c", "fast")
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if c.owner != nil {
		uid, gid := ids(c.owner)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pg_basebackup: %v\n%s", err, out)
	}
	for try := 0; ; try++ {
		if sb.Port, err = FreePort(); err == nil {
			if err = sb.start(); err == nil {
				break
			}
		}
		if try == 2 {
			t.Fatalf("starting the standby: %v", err)
		}
	}
	c.WaitStandby(t, name, "")
	return sb
}

// Query runs sql on c's postgres database and returns the first column
// of its first row as text ("" for a statement without rows).
func (c *PG) Query(t testing.TB, sql string, args ...any) string {
	t.Helper()
	v, err := c.query(sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}

func (c *PG) query(sql string, args ...any) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	v := ""
	if rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return "", err
		}
		if len(vals) > 0 && vals[0] != nil {
			v = fmt.Sprint(vals[0])
		}
	}
	for rows.Next() {
	}
	return v, rows.Err()
}

// WaitStandby waits until c lists the standby named name in
// pg_stat_replication as streaming, with sync_state syncState (any, if
// empty): the state a change of synchronous_standby_names reaches once
// the server has reloaded it and the standby has reported.
func (c *PG) WaitStandby(t testing.TB, name, syncState string) {
	t.Helper()
	c.waitFor(t, fmt.Sprintf("standby %s streaming (sync_state %q)", name, syncState),
		`SELECT count(*) FROM pg_stat_replication WHERE application_name = $1 AND state = 'streaming' AND ($2 = '' OR sync_state = $2)`,
		name, syncState)
}

// SetSynchronousStandbys sets synchronous_standby_names on c (ALTER
// SYSTEM, then a reload).
func (c *PG) SetSynchronousStandbys(t testing.TB, names string) {
	t.Helper()
	c.Query(t, `ALTER SYSTEM SET synchronous_standby_names = `+quoteLiteral(names))
	c.Query(t, `SELECT pg_reload_conf()`)
	c.waitFor(t, "synchronous_standby_names reloaded", `SELECT count(*) FROM pg_settings WHERE name = 'synchronous_standby_names' AND setting = $1`, names)
}

// Promote promotes a standby and waits until it takes writes.
func (c *PG) Promote(t testing.TB) {
	t.Helper()
	c.Query(t, `SELECT pg_promote(true, 60)`)
	c.waitFor(t, "the promoted standby out of recovery", `SELECT count(*) FROM (SELECT 1 WHERE NOT pg_is_in_recovery()) x`)
}

// waitFor polls sql (a count) until it is positive, for up to 60 s.
func (c *PG) waitFor(t testing.TB, what, sql string, args ...any) {
	t.Helper()
	var v string
	var err error
	for deadline, delay := time.Now().Add(60*time.Second), 5*time.Millisecond; time.Now().Before(deadline); delay = min(2*delay, 200*time.Millisecond) {
		if v, err = c.query(sql, args...); err == nil && v != "" && v != "0" {
			return
		}
		time.Sleep(delay)
	}
	t.Fatalf("waiting for %s: %q %v", what, v, err)
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// MultiHostURL is a URL of database db that lists every cluster's host,
// in order, with target_session_attrs=read-write: pgx tries each and
// keeps the one that takes writes (the primary).
func MultiHostURL(db string, cs ...*PG) string {
	hosts := make([]string, len(cs))
	for i, c := range cs {
		hosts[i] = fmt.Sprintf("127.0.0.1:%d", c.Port)
	}
	return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable&target_session_attrs=read-write", strings.Join(hosts, ","), db)
}
