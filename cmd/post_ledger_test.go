package cmd

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/ledgerflags"
)

// planOwner answers requests with the statuses of its plan, in order (201
// beyond it), and counts them per Idempotency-Key. A stall in the plan (0)
// holds the request until release is closed.
type planOwner struct {
	*httptest.Server
	mu      sync.Mutex
	plan    []int
	keys    map[string]int
	arrived chan struct{}
	release chan struct{}
}

func newPlanOwner(t *testing.T, plan ...int) *planOwner {
	o := &planOwner{plan: plan, keys: map[string]int{}, arrived: make(chan struct{}, 16), release: make(chan struct{})}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.keys[r.Header.Get("Idempotency-Key")]++
		n := 0
		for _, c := range o.keys {
			n += c
		}
		status := http.StatusCreated
		if n <= len(o.plan) {
			status = o.plan[n-1]
		}
		o.mu.Unlock()
		o.arrived <- struct{}{}
		if status == 0 {
			<-o.release
			status = http.StatusCreated
		}
		w.Header().Set("X-Seq", fmt.Sprint(n))
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"request":%d,"status":%d}`+"\n", n, status)
	}))
	t.Cleanup(func() {
		select {
		case <-o.release:
		default:
			close(o.release)
		}
		o.Close()
	})
	return o
}

func (o *planOwner) count(key string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.keys[key]
}

func (o *planOwner) total() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, c := range o.keys {
		n += c
	}
	return n
}

// postMain runs idemkey in-process with buffers.
func postMain(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	ios := &cli.IOStreams{In: strings.NewReader(""), Out: &out, Err: &errb, Getenv: func(k string) string { return env[k] }}
	code := Main(args, ios)
	return code, out.String(), errb.String()
}

func TestPostLedgerReplaysWithoutNetwork(t *testing.T) {
	o := newPlanOwner(t)
	dir := t.TempDir()
	env := map[string]string{"IDEMKEY_LEDGER": filepath.Join(dir, "ledger.db"), "HOME": dir}
	args := []string{"post", o.URL + "/pay", "--task", "t1", "--tool", "pay", "-d", `{"amount":100}`}
	code, out1, err1 := postMain(t, env, args...)
	if code != 0 || out1 != `{"request":1,"status":201}`+"\n" || err1 != "" {
		t.Fatalf("first: exit %d, stdout %q, stderr %q", code, out1, err1)
	}
	code, out2, err2 := postMain(t, env, args...)
	if code != 0 || out2 != out1 || o.total() != 1 {
		t.Fatalf("second: exit %d, stdout %q, %d requests", code, out2, o.total())
	}
	if !strings.HasPrefix(err2, "idemkey: replayed from the ledger, no request sent: HTTP 201 Created saved at ") {
		t.Fatalf("replay not said: %q", err2)
	}
	// -i shows the saved status line and headers.
	code, out3, _ := postMain(t, env, append(args, "-i", "-s")...)
	if code != 0 || !strings.HasPrefix(out3, "HTTP/1.1 201 Created\r\n") || !strings.Contains(out3, "X-Seq: 1\r\n") || !strings.HasSuffix(out3, "\r\n\r\n"+out1) {
		t.Fatalf("-i replay: %q", out3)
	}
	// -w works on a replay.
	if code, out, _ := postMain(t, env, append(args, "-s", "-o", "/dev/null", "-w", "%{http_code}")...); code != 0 || out != "201" {
		t.Fatalf("-w on a replay: exit %d, %q", code, out)
	}
	// Another body is another key: sent.
	if code, _, _ := postMain(t, env, "post", o.URL+"/pay", "--task", "t1", "--tool", "pay", "-d", `{"amount":200}`); code != 0 || o.total() != 2 {
		t.Fatalf("another call: exit %d, %d requests", code, o.total())
	}
	// --no-ledger: sent, even with IDEMKEY_LEDGER set.
	if code, _, _ := postMain(t, env, append(args, "--no-ledger")...); code != 0 || o.total() != 3 {
		t.Fatalf("--no-ledger: exit %d, %d requests", code, o.total())
	}
	// --ledger PATH names the file, as run's --ledger does (no = needed).
	other := filepath.Join(dir, "other.db")
	postMain(t, env, append(args, "--ledger", other)...)
	if _, err := os.Stat(other); err != nil || o.total() != 4 {
		t.Fatalf("--ledger PATH: %v, %d requests", err, o.total())
	}
	if code, _, errs := postMain(t, env, append(args, "--ledger", other)...); code != 0 || o.total() != 4 || !strings.Contains(errs, "replayed from the ledger") {
		t.Fatalf("--ledger PATH again: exit %d, %d requests: %s", code, o.total(), errs)
	}
}

func TestPostLedgerRetryableNotSaved(t *testing.T) {
	for _, status := range []int{503, 500, 408, 409, 425, 429} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			o := newPlanOwner(t, status)
			dir := t.TempDir()
			env := map[string]string{"IDEMKEY_LEDGER": filepath.Join(dir, "ledger.db")}
			args := []string{"post", o.URL, "--task", "t1", "--tool", "pay", "-d", `{"a":1}`}
			code, out, _ := postMain(t, env, args...)
			if code != 0 || !strings.Contains(out, fmt.Sprintf(`"status":%d`, status)) {
				t.Fatalf("first: exit %d, %q", code, out)
			}
			// Not saved: the next invocation sends again, with the same key.
			code, out, _ = postMain(t, env, args...)
			if code != 0 || out != `{"request":2,"status":201}`+"\n" || len(o.keys) != 1 {
				t.Fatalf("second: exit %d, %q, keys %v", code, out, o.keys)
			}
			// The 201 is saved.
			code, out, _ = postMain(t, env, args...)
			if code != 0 || out != `{"request":2,"status":201}`+"\n" || o.total() != 2 {
				t.Fatalf("third: exit %d, %q, %d requests", code, out, o.total())
			}
		})
	}
}

func TestPostLedgerFinal4xxSaved(t *testing.T) {
	o := newPlanOwner(t, 404)
	dir := t.TempDir()
	env := map[string]string{"IDEMKEY_LEDGER": filepath.Join(dir, "ledger.db")}
	args := []string{"post", o.URL, "--task", "t1", "--tool", "pay", "-d", `{"a":1}`, "-f"}
	c1, _, _ := postMain(t, env, args...)
	c2, _, e2 := postMain(t, env, args...)
	if c1 != 22 || c2 != 22 || o.total() != 1 || !strings.Contains(e2, "HTTP 404 Not Found") {
		t.Fatalf("404: exits %d %d, %d requests, %q", c1, c2, o.total(), e2)
	}
}

func TestPostLedgerTransferFailureNotSaved(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"IDEMKEY_LEDGER": filepath.Join(dir, "ledger.db")}
	// Nothing listens on the port of a closed server.
	o := newPlanOwner(t)
	url := o.URL
	o.Close()
	args := []string{"post", url, "--task", "t1", "--tool", "pay", "-d", `{"a":1}`, "-s"}
	if c, _, _ := postMain(t, env, args...); c != 7 {
		t.Fatalf("connection refused: exit %d, want 7", c)
	}
	c, out, _ := postMain(t, env, "ledger", "ls", "--json", "--ledger", env["IDEMKEY_LEDGER"])
	if c != 0 || !strings.Contains(out, `"state":"failed"`) || !strings.Contains(out, `"exit_code":7`) {
		t.Fatalf("record of a transfer failure: %s", out)
	}
}

func TestPostLedgerDeadRunningRetriedWithSameKey(t *testing.T) {
	r := newRig(t)
	o := newPlanOwner(t, 0) // the first request stalls
	args := []string{"post", o.URL, "--task", "t1", "--tool", "pay", "-d", `{"a":1}`, "-s"}
	c := r.cmd(args...)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-o.arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("the first request never arrived")
	}
	// While it is in flight, another invocation is busy (75) and sends
	// nothing.
	if res := r.idemkey(args[:len(args)-1]...); res.code != 75 || o.total() != 1 || !strings.Contains(string(res.stderr), "in flight elsewhere") {
		t.Fatalf("while in flight: exit %d, %d requests, %s", res.code, o.total(), res.stderr)
	}
	// The holder dies with its request in flight: the record says running.
	_ = c.Process.Signal(syscall.SIGKILL)
	_ = c.Wait()
	ls := r.idemkey("ledger", "ls", "--json")
	if !strings.Contains(string(ls.stdout), `"recorded_state":"running"`) {
		t.Fatalf("record after the crash: %s", ls.stdout)
	}
	res := r.idemkey(args...)
	if res.code != 0 || string(res.stdout) != `{"request":2,"status":201}`+"\n" {
		t.Fatalf("retry: exit %d, %q, %s", res.code, res.stdout, res.stderr)
	}
	if len(o.keys) != 1 || o.total() != 2 {
		t.Fatalf("requests by key: %v, want two with one key", o.keys)
	}
	for k := range o.keys {
		s := r.show(k)
		if s.State != "succeeded" || s.Attempt != 2 {
			t.Fatalf("record: %+v", s)
		}
	}
	// And replayed from then on.
	if res := r.idemkey(args...); res.code != 0 || o.total() != 2 {
		t.Fatalf("replay: exit %d, %d requests", res.code, o.total())
	}
}

// A response body past what the ledger keeps is not saved (a replay must
// give the whole body): the next invocation sends the request again, with
// the same key, and the owner dedupes it.
func TestPostLedgerLargeResponseNotSaved(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 128 MiB twice")
	}
	keys := map[string]int{}
	var mu sync.Mutex
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys[r.Header.Get("Idempotency-Key")]++
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		for range ledgerflags.MaxRecordedOutput >> 20 {
			w.Write(chunk)
		}
		w.Write([]byte("!")) // one byte past the cap
	}))
	defer srv.Close()
	dir := t.TempDir()
	env := map[string]string{"IDEMKEY_LEDGER": filepath.Join(dir, "ledger.db"), "HOME": dir}
	args := []string{"post", srv.URL + "/export", "--task", "t1", "--tool", "export", "-d", `{"all":true}`, "-o", os.DevNull}
	for i := 1; i <= 2; i++ {
		code, out, errs := postMain(t, env, args...)
		if code != 0 || out != "" {
			t.Fatalf("invocation %d: exit %d, stdout %q", i, code, out)
		}
		want := fmt.Sprintf("idemkey: warning: not saved: the response body (%d bytes) is larger than the ledger keeps (%d); the next invocation sends the request again, with the same key\n", ledgerflags.MaxRecordedOutput+1, ledgerflags.MaxRecordedOutput)
		if errs != want {
			t.Fatalf("invocation %d: stderr %q, want %q", i, errs, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 1 {
		t.Fatalf("requests by key: %v, want two requests with one key", keys)
	}
	for _, n := range keys {
		if n != 2 {
			t.Fatalf("requests by key: %v, want two requests with one key", keys)
		}
	}
}
