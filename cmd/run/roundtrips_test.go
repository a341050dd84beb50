package run_test

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
)

// turnCounter is a TCP proxy on 127.0.0.1 in front of a store that counts
// round trips: the times a client starts sending after the server last
// spoke (or first), over every connection. Unlike bytes or packets, this
// does not depend on how the kernel splits the writes.
type turnCounter struct {
	ln     net.Listener
	mu     sync.Mutex
	turns  int
	active sync.WaitGroup // proxied connections still open
}

func newTurnCounter(t *testing.T, target string) *turnCounter {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tc := &turnCounter{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			tc.active.Add(1)
			go func() { defer tc.active.Done(); tc.pipe(c, s) }()
		}
	}()
	return tc
}

// pipe copies both ways; clientTurn is whether the client spoke last.
func (tc *turnCounter) pipe(c, s net.Conn) {
	defer c.Close()
	defer s.Close()
	var cmu sync.Mutex
	clientTurn := false
	copyDir := func(dst, src net.Conn, fromClient bool) {
		buf := make([]byte, 64<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				cmu.Lock()
				if fromClient && !clientTurn {
					tc.mu.Lock()
					tc.turns++
					tc.mu.Unlock()
				}
				clientTurn = fromClient
				cmu.Unlock()
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				if tcp, ok := dst.(*net.TCPConn); ok && err == io.EOF {
					tcp.CloseWrite()
				}
				return
			}
		}
	}
	done := make(chan struct{})
	go func() { copyDir(c, s, false); close(done) }()
	copyDir(s, c, true)
	<-done
}

// take returns the turns counted since the last take, once every proxied
// connection has closed: the last bytes of a process that has exited (a
// Terminate message) may still be on their way through the proxy.
func (tc *turnCounter) take() int {
	done := make(chan struct{})
	go func() { tc.active.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	n := tc.turns
	tc.turns = 0
	return n
}

// via returns the store URL pointed at the proxy.
func (tc *turnCounter) via(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = tc.ln.Addr().String()
	return u.String()
}

// TestFleetRoundTrips: the round trips of one idemkey run on a shared
// store, counted by a proxy (they do not depend on the machine's load): a
// fresh step connects, claims in one round trip (an insert, no read before
// it) and completes in one; a replay connects and reads (PostgreSQL: the
// insert that conflicts, then the read; Redis: one script). PostgreSQL also
// sends its Terminate message when the store closes.
func TestFleetRoundTrips(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		store         func(t *testing.T) *clitest.Store
		fresh, replay int
	}{
		// startup, claim, completion, terminate; a replay: startup, the
		// insert that conflicts, the read, terminate
		{"postgres", clitest.PGStore, 4, 4},
		// HELLO (go-redis sends it on every connection), CONFIG GET
		// maxmemory-policy, claim, completion
		{"redis", func(t *testing.T) *clitest.Store { return clitest.RedisStore(t) }, 4, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.store(t)
			u, err := url.Parse(s.URL)
			if err != nil {
				t.Fatal(err)
			}
			counter := newTurnCounter(t, u.Host)
			s.URL = counter.via(t, s.URL)
			fl := clitest.NewFleet(t, s, nil)
			// The first step creates the table and loads the scripts.
			if w := fl.Run("a", "run", "--task", "warm", "--tool", "x", "--", "true"); w.Code != 0 {
				t.Fatalf("warm-up: exit %d: %s", w.Code, w.Stderr.String())
			}
			counter.take()
			if w := fl.Run("a", "run", "--task", "t", "--tool", "x", "--", "true"); w.Code != 0 {
				t.Fatalf("fresh step: exit %d: %s", w.Code, w.Stderr.String())
			}
			if got := counter.take(); got != tc.fresh {
				t.Errorf("a fresh step made %d round trips, want %d", got, tc.fresh)
			}
			if w := fl.Run("a", "run", "-q", "--task", "t", "--tool", "x", "--", "true"); w.Code != 0 {
				t.Fatalf("replay: exit %d: %s", w.Code, w.Stderr.String())
			}
			if got := counter.take(); got != tc.replay {
				t.Errorf("a replay made %d round trips, want %d", got, tc.replay)
			}
		})
	}
}
