package sqlite

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/idemkey/idemkey/derive/ledger/ledgertest"
)

func open(t *testing.T, path string, opts Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// caps are the scenarios' means on SQLite: Wipe empties the ledger as a
// restored empty file would; Vanish deletes a record by SQL, behind the
// rules' back (its trigger keeps the key's mark); Cramped is a ledger
// whose max_page_count leaves room for claims, not for a 512 KiB output.
var caps = ledgertest.Caps{
	Wipe: func(t *testing.T, s ledger.Store) {
		if _, err := s.(*Store).db.Exec(`DELETE FROM records; DELETE FROM attempts`); err != nil {
			t.Fatal(err)
		}
	},
	Vanish: func(t *testing.T, s ledger.Store, key string) {
		if _, err := s.(*Store).db.Exec(`DELETE FROM records WHERE key = ?`, key); err != nil {
			t.Fatal(err)
		}
	},
	Cramped: func(t *testing.T) (ledger.Store, int) {
		s := open(t, filepath.Join(t.TempDir(), "ledger.db"), Options{})
		var pages int
		if err := s.db.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
			t.Fatal(err)
		}
		if _, err := s.db.Exec(fmt.Sprintf(`PRAGMA max_page_count = %d`, pages+24)); err != nil {
			t.Fatal(err)
		}
		return s, 512 << 10
	},
}

func TestScenarios(t *testing.T) {
	t.Parallel()
	c := caps
	c.Isolated = true // a file per scenario
	ledgertest.Run(t, func(t *testing.T) ledger.Store {
		return open(t, filepath.Join(t.TempDir(), "state", "ledger.db"), Options{})
	}, c)
}

func TestScenariosSharedFile(t *testing.T) {
	t.Parallel()
	// Every scenario on one file, through separate handles: the records of
	// one scenario must not disturb another's.
	path := filepath.Join(t.TempDir(), "ledger.db")
	c := caps
	c.Concurrency = 16
	c.OwnStore = func(t *testing.T) ledger.Store { return open(t, filepath.Join(t.TempDir(), "ledger.db"), Options{}) }
	ledgertest.Run(t, func(t *testing.T) ledger.Store { return open(t, path, Options{}) }, c)
}

func TestFileModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "idemkey")
	path := filepath.Join(dir, "ledger.db")
	s := open(t, path, Options{})
	d := ledger.Record{Key: "k", Task: "t", Tool: "x", Kind: "run", Fingerprint: "f", State: ledger.Running, Attempt: 1, StartedAt: time.Now()}
	if _, err := s.Insert(context.Background(), &d, 0); err != nil {
		t.Fatal(err)
	}
	lf, err := s.LockKey("k")
	if err != nil {
		t.Fatal(err)
	}
	lf.Close()
	for p, want := range map[string]os.FileMode{
		dir: 0o700 | os.ModeDir, path: 0o600, path + "-wal": 0o600, path + "-shm": 0o600,
		s.LockDir(): 0o700 | os.ModeDir, s.LockPath("k"): 0o600, filepath.Join(s.LockDir(), "writer"): 0o600,
	} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode(), want)
		}
	}
}

func TestRemoteFSRefused(t *testing.T) {
	for magic, name := range map[int64]string{0x6969: "NFS", 0x65735546: "FUSE", 0xff534d42: "CIFS", 0x517b: "SMB"} {
		path := filepath.Join(t.TempDir(), "ledger.db")
		_, err := Open(context.Background(), path, Options{FSType: func(int64) int64 { return magic }})
		var re *RemoteFSError
		if !errors.As(err, &re) || re.FS != name || !strings.Contains(err.Error(), "not reliable") {
			t.Errorf("%s: %v, want a RemoteFSError", name, err)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: the ledger file was created on a refused file system", name)
		}
	}
	// The real type of a local directory passes.
	open(t, filepath.Join(t.TempDir(), "ledger.db"), Options{FSType: func(real int64) int64 { return real }})
}

// TestMustExist: with MustExist a missing ledger is not created (neither
// its directory nor its file) and the error wraps fs.ErrNotExist; a
// remote file system is still refused first; an existing ledger opens.
func TestMustExist(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "state", "ledger.db")
	if s, err := Open(ctx, path, Options{MustExist: true}); !errors.Is(err, fs.ErrNotExist) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("Open of a missing ledger: %v, want fs.ErrNotExist", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "state")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the ledger's directory was created (%v)", err)
	}
	nfs := func(int64) int64 { return 0x6969 }
	var re *RemoteFSError
	if _, err := Open(ctx, path, Options{MustExist: true, FSType: nfs}); !errors.As(err, &re) || re.Dir != filepath.Dir(path) {
		t.Fatalf("Open of a missing ledger on NFS: %v, want a RemoteFSError naming %s", err, filepath.Dir(path))
	}
	s := open(t, path, Options{})
	if _, err := s.Insert(ctx, &ledger.Record{Key: "k", State: ledger.Succeeded, Attempt: 1, StartedAt: time.Now()}, 0); err != nil {
		t.Fatal(err)
	}
	s.Close()
	r, _, err := open(t, path, Options{MustExist: true}).Get(ctx, "k")
	if err != nil || r == nil {
		t.Fatalf("Get from the existing ledger: %v, %v", r, err)
	}
}

// TestMigrate: a ledger as idemkey wrote it at schema 1 and 2 (rows with
// the columns of then, written by SQL as the older idemkey did) opens,
// is migrated to SchemaVersion, and its records keep working: a
// succeeded one replays, and a running one without a token (fenced by its
// attempt and state, as before) is found dead, completed as unknown, and
// taken over with a token; after it is forgotten, attempts continue above
// it.
func TestMigrate(t *testing.T) {
	for _, from := range []int{1, 2} {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "ledger.db")
		old, err := Open(ctx, path, Options{Version: from})
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := old.Schema(ctx); v != from {
			t.Fatalf("schema %d, want %d", v, from)
		}
		const oldCols = `key, task, tool, kind, fingerprint, request, state, attempt, holder, exit_code, reason, started_at, ended_at,
			stdout, stdout_length, stdout_sha256, stdout_truncated, stderr, stderr_length, stderr_sha256, stderr_truncated, meta`
		now := time.Now().UnixNano()
		for _, row := range [][]any{
			{"done", "t", "x", "run", "f", []byte("{}"), "succeeded", 1, "h", 0, "", now, now, []byte("out\n"), 4, "x", false, nil, 0, "", false, nil},
			{"held", "t", "x", "run", "f", []byte("{}"), "running", 3, "h", -1, "", now, 0, nil, 0, "", false, nil, 0, "", false, nil},
		} {
			if _, err := old.db.ExecContext(ctx, `INSERT INTO records (`+oldCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`, row...); err != nil {
				t.Fatal(err)
			}
		}
		old.Close()
		s := open(t, path, Options{})
		if v, _ := s.Schema(ctx); v != SchemaVersion {
			t.Fatalf("schema %d after reopening, want %d", v, SchemaVersion)
		}
		var indexes int
		if err := s.db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name LIKE 'records_%'`).Scan(&indexes); err != nil || indexes != 2 {
			t.Fatalf("indexes after migration: %d %v", indexes, err)
		}
		req := ledger.ClaimRequest{Record: ledger.Record{Key: "done", Task: "t", Tool: "x", Kind: "run", Fingerprint: "f"}}
		dd, err := ledger.Claim(ctx, s, req)
		if err != nil || dd.Action != ledger.ActReplay || string(dd.Record.Stdout.Data) != "out\n" || dd.Record.Token != "" {
			t.Fatalf("record written at version %d: %v %+v %v", from, dd.Action, dd.Record, err)
		}
		// The old running record, its holder gone: unknown, then retried.
		req.Record.Key, req.LocallyLocked, req.Recover = "held", true, ledger.RecoverRetry
		d, err := ledger.Claim(ctx, s, req)
		if err != nil || d.Action != ledger.ActRun || d.Record.Attempt != 4 || d.Record.Token == "" || d.Previous == nil || d.Previous.Token != "" {
			t.Fatalf("claim over a running record without a token: %+v %v", d, err)
		}
		if _, err := ledger.Forget(ctx, s, ledger.ForgetRequest{Key: "held", LocallyLocked: true}); err != nil {
			t.Fatal(err)
		}
		if d, err := ledger.Claim(ctx, s, req); err != nil || d.Record.Attempt != 5 {
			t.Fatalf("claim after forget: %+v %v, want attempt 5", d, err)
		}
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec(`UPDATE idemkey_schema SET version = ?`, SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = Open(ctx, path, Options{})
	if !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("open of a newer schema: %v, want ErrNewerSchema", err)
	}
}

// TestLockThroughSymlink: a ledger opened through a symbolic link to its
// file is the same ledger, with the same key locks (they were in
// link.db.locks/ beside the link, so a process holding a key through one
// name was invisible to a process using the other: a second holder
// could take the key over, or ledger resolve settle it, while the first
// still ran). A dangling link made before the ledger exists too.
func TestLockThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "ledger.db")
	a := open(t, real, Options{})
	for _, link := range []string{"link.db", "sub/link.db"} {
		p := filepath.Join(dir, link)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.Symlink(real, p); err != nil {
			t.Fatal(err)
		}
		b := open(t, p, Options{})
		f, err := a.LockKey("k")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.LockKey("k"); !errors.Is(err, ErrLocked) {
			t.Errorf("%s: the key locked through the file is free through the link (%v)", link, err)
		}
		f.Close()
		g, err := b.LockKey("k")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.LockKey("k"); !errors.Is(err, ErrLocked) {
			t.Errorf("%s: the key locked through the link is free through the file (%v)", link, err)
		}
		g.Close()
	}
	// A dangling link: Open creates the file it names; the locks are the
	// file's from the first open on.
	real2 := filepath.Join(dir, "later.db")
	link2 := filepath.Join(dir, "later-link.db")
	if err := os.Symlink(real2, link2); err != nil {
		t.Fatal(err)
	}
	c := open(t, link2, Options{})
	f, err := c.LockKey("k")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := open(t, real2, Options{}).LockKey("k"); !errors.Is(err, ErrLocked) {
		t.Errorf("dangling link: the key locked through it is free through the file (%v)", err)
	}
}

func TestLockKey(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "ledger.db"), Options{})
	f, err := s.LockKey("k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.LockKey("k"); !errors.Is(err, ErrLocked) {
		t.Fatalf("second lock: %v, want ErrLocked", err)
	}
	other, err := s.LockKey("other")
	if err != nil {
		t.Fatalf("another key: %v", err)
	}
	other.Close()
	// RemoveLock leaves a held lock file alone.
	if err := s.RemoveLock("k"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.LockPath("k")); err != nil {
		t.Fatalf("held lock file removed: %v", err)
	}
	// A child that inherits the descriptor keeps the key locked after
	// this process lets go of its copy.
	cmd := exec.Command("sh", "-c", "read x")
	cmd.ExtraFiles = []*os.File{f}
	w, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := s.LockKey("k"); !errors.Is(err, ErrLocked) {
		t.Fatalf("lock while the child holds it: %v, want ErrLocked", err)
	}
	w.Close()
	cmd.Wait()
	g, err := s.LockKey("k")
	if err != nil {
		t.Fatalf("lock after the child exited: %v", err)
	}
	g.Close()
	// Unheld: removed, and a new lock works on a new file.
	if err := s.RemoveLock("k"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.LockPath("k")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("free lock file kept: %v", err)
	}
}

func TestLockReplacedFile(t *testing.T) {
	// A process that opened a lock file which was then removed and
	// recreated must not count its lock on the removed file.
	s := open(t, filepath.Join(t.TempDir(), "ledger.db"), Options{})
	f, err := s.LockKey("k")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	stale, err := os.OpenFile(s.LockPath("k"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer stale.Close()
	if err := s.RemoveLock("k"); err != nil {
		t.Fatal(err)
	}
	held, err := s.LockKey("k") // the new file
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := lockNB(stale); err != nil { // the old file can be locked…
		t.Fatal(err)
	}
	same, err := samePath(stale, s.LockPath("k"))
	if err != nil || same {
		t.Fatalf("the removed file still counts as the lock file: %v %v", same, err)
	}
}

// TestNoCheckpointOnClose: closing the store leaves committed records in
// the WAL (no checkpoint, so no fsync of the WAL and the database at
// close), and the next open reads them from there.
func TestNoCheckpointOnClose(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := ledger.Record{Key: "k", Task: "t", Tool: "x", Kind: "run", Fingerprint: "f", State: ledger.Succeeded, Attempt: 1, StartedAt: time.Now()}
	if ok, err := s.Insert(ctx, &rec, 0); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Errorf("closing the store changed the database file (%d → %d bytes): it checkpointed", len(before), len(after))
	}
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("the WAL is gone or empty after close: %v %v", fi, err)
	}
	s = open(t, path, Options{})
	got, _, err := s.Get(ctx, "k")
	if err != nil || got == nil || got.State != ledger.Succeeded {
		t.Fatalf("the record committed before close: %+v, %v", got, err)
	}
}
