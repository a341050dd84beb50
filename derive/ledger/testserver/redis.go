package testserver

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a redis-server of the test's own on a loopback port.
type Redis struct {
	Dir  string
	Port int

	bin  string
	args []string
	p    *proc
	tls  Cert // set for a TLS-only server
}

func itoa(n int) string { return fmt.Sprint(n) }

func redisBin() (string, error) {
	if p := os.Getenv("IDEMKEY_REDIS_SERVER"); p != "" {
		if !isExec(p) {
			return "", fmt.Errorf("IDEMKEY_REDIS_SERVER=%s is not an executable", p)
		}
		return p, nil
	}
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/bin/redis-server", "/usr/local/bin/redis-server"} {
		if isExec(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("redis-server not found")
}

// NewRedis starts a redis-server without persistence (unless extra
// arguments ask for it) and stops it when the test ends. extra are
// redis-server options, e.g. "--maxmemory-policy", "allkeys-lru".
func NewRedis(t testing.TB, extra ...string) *Redis {
	t.Helper()
	bin, err := redisBin()
	if err != nil {
		missing(t, "redis-server", err)
	}
	dir, err := newDir("redis", nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &Redis{Dir: dir, bin: bin}
	t.Cleanup(r.remove)
	for try := 0; ; try++ {
		if r.Port, err = FreePort(); err == nil {
			r.args = append([]string{
				"--port", fmt.Sprint(r.Port),
				"--bind", "127.0.0.1",
				"--dir", dir,
				"--save", "",
				"--appendonly", "no",
				"--daemonize", "no",
				"--logfile", "",
				"--databases", "4",
				// A primary starts a replica's full sync at once, not
				// after the 5 s it would wait for other replicas to
				// share the transfer.
				"--repl-diskless-sync-delay", "0",
			}, extra...)
			if err = r.start(); err == nil {
				return r
			}
		}
		if try == 2 {
			t.Fatalf("starting redis-server: %v", err)
		}
	}
}

func (r *Redis) start() error {
	p, err := start(r.bin, r.args, filepath.Join(r.Dir, "redis.log"), nil, filepath.Join(r.Dir, "server.pid"))
	if err != nil {
		return err
	}
	r.p = p
	err = p.waitReady(10*time.Second, func(ctx context.Context) error {
		o := &redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", r.Port), MaxRetries: -1}
		if r.tls.CA != "" {
			o.TLSConfig = &tls.Config{InsecureSkipVerify: true} // readiness only
		}
		c := redis.NewClient(o)
		defer c.Close()
		err := c.Ping(ctx).Err()
		if err != nil && strings.HasPrefix(err.Error(), "NOAUTH") {
			return nil // it answers; it wants a password
		}
		return err
	})
	if err != nil {
		p.stop(syscall.SIGKILL, time.Second)
	}
	return err
}

// URL is the server's redis:// URL (rediss:// for a TLS server).
func (r *Redis) URL() string {
	if r.tls.CA != "" {
		return fmt.Sprintf("rediss://127.0.0.1:%d/0", r.Port)
	}
	return fmt.Sprintf("redis://127.0.0.1:%d/0", r.Port)
}

// Stop stops the server: SIGTERM shuts it down cleanly (writing the append
// only file, if any), SIGKILL crashes it.
func (r *Redis) Stop(sig syscall.Signal) { r.p.stop(sig, 10*time.Second) }

// Start starts a stopped server again on the same port.
func (r *Redis) Start(t testing.TB) {
	t.Helper()
	if err := r.start(); err != nil {
		t.Fatalf("restarting redis-server: %v", err)
	}
}

func (r *Redis) remove() {
	if r.p != nil {
		r.p.stop(syscall.SIGKILL, time.Second)
	}
	os.RemoveAll(r.Dir)
}
