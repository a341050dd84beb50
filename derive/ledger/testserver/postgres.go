package testserver

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PG is a PostgreSQL cluster of the tests' own: a data directory, a
// socket directory and a loopback port, owned by the postgres user when
// the tests run as root.
type PG struct {
	Dir  string // the cluster's directory (data/, the socket, the log)
	Port int

	bindir string
	owner  *user.User
	p      *proc
	extra  []string // more server options
	tls    bool     // TCP over TLS only
}

// pgBindir finds the directory of initdb and postgres.
func pgBindir() (string, error) {
	if d := os.Getenv("IDEMKEY_PG_BINDIR"); d != "" {
		if !isExec(filepath.Join(d, "initdb")) || !isExec(filepath.Join(d, "postgres")) {
			return "", fmt.Errorf("initdb and postgres not found in IDEMKEY_PG_BINDIR=%s", d)
		}
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
	for _, d := range append(dirs, "/usr/local/pgsql/bin") {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	initdb, err := exec.LookPath("initdb")
	if err != nil {
		return "", fmt.Errorf("initdb not found")
	}
	if real, err := filepath.EvalSymlinks(initdb); err == nil {
		initdb = real
	}
	d := filepath.Dir(initdb)
	if !isExec(filepath.Join(d, "postgres")) {
		return "", fmt.Errorf("postgres not found beside %s", initdb)
	}
	return d, nil
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// pgOwner is the user the cluster runs as: postgres when we are root.
func pgOwner() (*user.User, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root and there is no postgres user to run the cluster as")
	}
	return u, nil
}

var (
	templateOnce sync.Once
	templateDir  string // an initdb'd data directory, copied for each cluster
	templateErr  error
	pgBin        string
	pgUser       *user.User
)

// template returns an initdb'd data directory that clusters are copied
// from. It is kept in base() under a name made of this user and this
// initdb (its path, size and time), for every test binary and every run to
// share: initdb costs about a second of CPU, and a suite runs a dozen test
// binaries that start clusters. A binary that finds none runs initdb in a
// directory of its own and renames it into place; when another got there
// first, it uses that one. A directory of that name that is not one of
// ours (see ownTemplate) is left alone, and the binary keeps its own.
func template() (string, error) {
	templateOnce.Do(func() {
		if pgBin, templateErr = pgBindir(); templateErr != nil {
			return
		}
		if pgUser, templateErr = pgOwner(); templateErr != nil {
			return
		}
		initdb := filepath.Join(pgBin, "initdb")
		st, err := os.Stat(initdb)
		if err != nil {
			templateErr = err
			return
		}
		id := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%d", initdb, st.Size(), st.ModTime().UnixNano()))
		shared := filepath.Join(base(), fmt.Sprintf("pgtemplate-%d-%x", os.Geteuid(), id[:8]))
		if ownTemplate(shared) {
			templateDir = filepath.Join(shared, "data")
			return
		}
		dir, err := newDir("pgtemplate", pgUser)
		if err != nil {
			templateErr = err
			return
		}
		cmd := exec.Command(initdb, "-D", filepath.Join(dir, "data"), "-U", "postgres",
			"--auth=trust", "-E", "UTF8", "--no-locale", "--no-instructions")
		cmd.Env = append(os.Environ(), "LC_ALL=C")
		if pgUser != nil {
			uid, gid := ids(pgUser)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			os.RemoveAll(dir)
			templateErr = fmt.Errorf("initdb: %v\n%s", err, out)
			return
		}
		if err := os.WriteFile(filepath.Join(dir, templateMark), nil, 0o600); err != nil {
			os.RemoveAll(dir)
			templateErr = err
			return
		}
		if os.Rename(dir, shared) == nil || ownTemplate(shared) {
			os.RemoveAll(dir) // ours, when another binary renamed its own in first
			templateDir = filepath.Join(shared, "data")
			return
		}
		templateDir = filepath.Join(dir, "data")
		registerShared(func() { os.RemoveAll(dir) })
	})
	return templateDir, templateErr
}

// templateMark is the file a shared template's directory holds once
// initdb finished in it.
const templateMark = "initdb-done"

// ownTemplate reports whether dir is a template a binary of ours left: a
// directory (not a link) owned by the cluster's user, that no one else
// can write, with the mark of a finished initdb.
func ownTemplate(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o022 != 0 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	want := uint32(os.Geteuid())
	if pgUser != nil {
		want, _ = ids(pgUser)
	}
	if !ok || st.Uid != want {
		return false
	}
	_, err = os.Stat(filepath.Join(dir, templateMark))
	return err == nil
}

// startCluster copies the template into a new directory and starts it.
func startCluster() (*PG, error) {
	tmpl, err := template()
	if err != nil {
		return nil, err
	}
	dir, err := newDir("pg", pgUser)
	if err != nil {
		return nil, err
	}
	cp := exec.Command("cp", "-a", tmpl, filepath.Join(dir, "data"))
	if out, err := cp.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("copying the template cluster: %v: %s", err, out)
	}
	c := &PG{Dir: dir, bindir: pgBin, owner: pgUser}
	for try := 0; ; try++ {
		if c.Port, err = FreePort(); err == nil {
			if err = c.start(); err == nil {
				return c, nil
			}
		}
		if try == 2 {
			c.remove()
			return nil, err
		}
	}
}

// start runs postgres on c.Port and waits until it accepts connections.
// Durability settings are PostgreSQL's defaults (fsync on, synchronous
// commit): the restart tests rely on them.
func (c *PG) start() error {
	args := []string{
		"-D", filepath.Join(c.Dir, "data"),
		"-p", fmt.Sprint(c.Port),
		"-k", c.Dir,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "shared_buffers=16MB",
		"-c", "max_connections=400",
		"-c", "logging_collector=off",
		"-c", "log_min_messages=warning",
		"-c", "log_min_error_statement=panic",
	}
	args = append(args, c.extra...)
	p, err := start(filepath.Join(c.bindir, "postgres"), args, filepath.Join(c.Dir, "postgres.log"), c.owner,
		filepath.Join(c.Dir, "server.pid"))
	if err != nil {
		return err
	}
	c.p = p
	err = p.waitReady(30*time.Second, func(ctx context.Context) error {
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
		if err != nil {
			return err
		}
		return conn.Close(ctx)
	})
	if err != nil {
		p.stop(syscall.SIGKILL, time.Second)
	}
	return err
}

// URL is a connection URL for database db over loopback TCP.
func (c *PG) URL(db string) string {
	mode := "disable"
	if c.tls {
		mode = "require"
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=%s", c.Port, db, mode)
}

// Stop stops the cluster: SIGINT is a fast shutdown, SIGQUIT an immediate
// one, SIGKILL a crash (of the server, not of the machine).
func (c *PG) Stop(sig syscall.Signal) { c.p.stop(sig, 10*time.Second) }

// Start starts a stopped cluster again on the same port.
func (c *PG) Start(t testing.TB) {
	t.Helper()
	if err := c.start(); err != nil {
		t.Fatalf("restarting postgres: %v", err)
	}
}

func (c *PG) remove() {
	if c.p != nil {
		c.p.stop(syscall.SIGQUIT, 5*time.Second)
	}
	os.RemoveAll(c.Dir)
}

// CreateDB creates a new empty database and returns its URL.
func (c *PG) CreateDB(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d", dbSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatalf("connecting to the test cluster: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("creating database %s: %v", name, err)
	}
	return c.URL(name)
}

var dbSeq atomic.Int64

var (
	sharedOnce sync.Once
	sharedPG   *PG
	sharedErr  error
)

// Postgres returns the URL of a fresh database in the cluster the test
// binary shares between its tests (started on first use).
func Postgres(t testing.TB) string {
	t.Helper()
	sharedOnce.Do(func() {
		sharedPG, sharedErr = startCluster()
		if sharedErr == nil {
			registerShared(sharedPG.remove)
		}
	})
	if sharedErr != nil {
		missing(t, "postgresql", sharedErr)
	}
	return sharedPG.CreateDB(t)
}

// NewPostgres starts a cluster of the test's own (to stop and restart),
// removed when the test ends.
func NewPostgres(t testing.TB) *PG {
	t.Helper()
	c, err := startCluster()
	if err != nil {
		if strings.Contains(err.Error(), "not found") || strings.Contains(err.Error(), "no postgres user") {
			missing(t, "postgresql", err)
		}
		t.Fatalf("starting postgres: %v", err)
	}
	t.Cleanup(c.remove)
	return c
}

var (
	sharedMu    sync.Mutex
	sharedStops []func()
)

func registerShared(f func()) {
	sharedMu.Lock()
	sharedStops = append(sharedStops, f)
	sharedMu.Unlock()
}

func stopShared() {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	for i := len(sharedStops) - 1; i >= 0; i-- {
		sharedStops[i]()
	}
	sharedStops = nil
}
