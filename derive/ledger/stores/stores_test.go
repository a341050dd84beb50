package stores

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

func TestKindOf(t *testing.T) {
	for spec, want := range map[string]Kind{
		"postgres://db/x": Postgres, "postgresql://db/x": Postgres,
		"redis://h/0": Redis, "rediss://h/0": Redis,
		"ledger.db": SQLite, "file:redis://x": SQLite, "/a/b:c": SQLite,
	} {
		if got, _, err := KindOf(spec); err != nil || got != want {
			t.Errorf("KindOf(%q) = %v, %v; want %v", spec, got, err, want)
		}
	}
	if _, path, _ := KindOf("file:redis://x"); path != "redis://x" {
		t.Errorf("file: prefix kept: %q", path)
	}
	for _, bad := range []string{"host=db password=s3cret", "mysql://u:pw@h/db", "Postgres://h/db"} {
		_, _, err := KindOf(bad)
		var se *SpecError
		if !errors.As(err, &se) || se.Hint == "" {
			t.Errorf("KindOf(%q): %v, want a SpecError with a hint", bad, err)
			continue
		}
		if strings.Contains(se.Shown, "s3cret") || strings.Contains(se.Shown, ":pw@") {
			t.Errorf("KindOf(%q) shows %q", bad, se.Shown)
		}
	}
}

func TestOpenErrorNamesTheLedgerOnce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "missing", "ledger.db")
	_, err := Open(context.Background(), path, Options{MustExist: true})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("MustExist: %v, want fs.ErrNotExist", err)
	}
	var e *Error
	if !errors.As(err, &e) || strings.Count(err.Error(), path) != 1 {
		t.Fatalf("error %q: want a *stores.Error naming %s once", err, path)
	}
	_, err = Open(context.Background(), "host=db password=s3cret", Options{})
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "keyword/value") {
		t.Fatalf("DSN: %v", err)
	}
}

func TestLocalPath(t *testing.T) {
	for spec, want := range map[string]string{"a.db": "a.db", "file:x://y": "x://y", "redis://h": "", "dbname=x": ""} {
		got, ok := LocalPath(spec)
		if got != want || ok != (want != "") {
			t.Errorf("LocalPath(%q) = %q, %v", spec, got, ok)
		}
	}
}

func TestDefaultPath(t *testing.T) {
	env := map[string]string{"XDG_STATE_HOME": "/st", "HOME": "/h"}
	if p, _ := DefaultPath(func(k string) string { return env[k] }); p != "/st/idemkey/ledger.db" {
		t.Errorf("XDG_STATE_HOME: %s", p)
	}
	env["XDG_STATE_HOME"] = "relative" // ignored, as the XDG spec says
	if p, _ := DefaultPath(func(k string) string { return env[k] }); p != "/h/.local/state/idemkey/ledger.db" {
		t.Errorf("HOME: %s", p)
	}
}
