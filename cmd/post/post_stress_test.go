package post_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/cmd/internal/curlflags"
	"github.com/idemkey/idemkey/derive/post"
)

// postWithin runs fn and fails the test if it has not returned after d: a
// hang is reported as one, not as the test binary's timeout.
func postWithin(t *testing.T, d time.Duration, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("still running after %v", d)
	}
}

// postLoopback starts an HTTP server on 127.0.0.1 with handler h.
func postLoopback(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	s := httptest.NewUnstartedServer(h)
	s.Listener.Close()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Listener = l
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// postRawServer accepts connections on 127.0.0.1 and hands each, with a
// reader positioned after the request head, to serve; it counts them.
func postRawServer(t *testing.T, serve func(c net.Conn, br *bufio.Reader)) (string, *atomic.Int32) {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil || line == "\r\n" {
						break
					}
				}
				serve(c, br)
			}()
		}
	}()
	t.Cleanup(func() { l.Close() })
	return "http://" + l.Addr().String(), &n
}

// TestPostLargeBodySpills: a response body larger than post.SpoolMem goes to a
// temporary file, not memory, and is written once, whole.
func TestPostLargeBodySpills(t *testing.T) {
	const size = 40 << 20
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096)
	s := postLoopback(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Length", fmt.Sprint(size))
		for n := 0; n < size; n += len(chunk) {
			w.Write(chunk)
		}
	})
	out := filepath.Join(t.TempDir(), "body")
	var r clitest.Output
	alloc := clitest.Allocated(func() { r = ppost(t, s.URL, "-o", out) })
	postCheckExit(t, r, 0)
	st, err := os.Stat(out)
	if err != nil || st.Size() != size {
		t.Fatalf("-o file: %v, %v; want %d bytes", st, err, size)
	}
	if alloc > 12<<20 {
		t.Errorf("a %d MiB body allocated %d MiB: it was held in memory", size>>20, alloc>>20)
	}
	t.Logf("a %d MiB body allocated %.1f MiB", size>>20, float64(alloc)/(1<<20))
}

// TestPostEndlessBodyMaxTime: an endless body is ended by --max-time with
// curl's 28, within bounded time and memory, and nothing is written.
func TestPostEndlessBodyMaxTime(t *testing.T) {
	var sent atomic.Int64
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	s := postLoopback(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
		for {
			n, err := w.Write(chunk)
			sent.Add(int64(n))
			if err != nil {
				return
			}
			time.Sleep(time.Millisecond) // at most ~64 MB/s: the temporary file stays small
		}
	})
	var r clitest.Output
	var alloc uint64
	start := time.Now()
	postWithin(t, 20*time.Second, func() {
		alloc = clitest.Allocated(func() { r = ppost(t, s.URL, "--max-time", "0.6") })
	})
	postCheckExit(t, r, post.CurlTimeout)
	if r.Stdout != "" || !strings.Contains(r.Stderr, "(28) operation timed out") {
		t.Errorf("stdout %d bytes, stderr %q", len(r.Stdout), r.Stderr)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("--max-time 0.6 ended the transfer after %v", d)
	}
	if sent.Load() < 2*post.SpoolMem {
		t.Fatalf("the server sent only %d bytes: the test did not reach the spill", sent.Load())
	}
	if alloc > 12<<20 {
		t.Errorf("%d MiB received, %d MiB allocated", sent.Load()>>20, alloc>>20)
	}
	t.Logf("%.1f MiB received in %v, %.1f MiB allocated", float64(sent.Load())/(1<<20), time.Since(start).Round(time.Millisecond), float64(alloc)/(1<<20))
}

// postEndless is an input without an end, counting what was read.
type postEndless struct{ n atomic.Int64 }

func (e *postEndless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	e.n.Add(int64(len(p)))
	return len(p), nil
}

// TestPostBodyLimit: -d @- stops reading an endless input at the limit.
func TestPostBodyLimit(t *testing.T) {
	in := &postEndless{}
	var o clitest.Output
	postWithin(t, 30*time.Second, func() {
		o = clitest.Streams{In: in}.Run(t, "post", "http://127.0.0.1:9/", "--task", "t1", "--tool", "pay", "-d", "@-")
	})
	if o.Code != cli.ExitUsage || o.Stdout != "" || !strings.Contains(o.Stderr, "<stdin>: the body is larger than post's limit of 64 MiB") {
		t.Errorf("exit %d, stdout %q, stderr %q", o.Code, o.Stdout, o.Stderr)
	}
	if n := in.n.Load(); n > curlflags.MaxBody+1<<20 {
		t.Errorf("read %d bytes of an endless input, limit %d", n, curlflags.MaxBody)
	}
}
