package post_test

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

	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/cmd/internal/step"
)

func TestPostLedgerReplaysWithoutNetwork(t *testing.T) {
	o := clitest.NewPlanOwner(t)
	dir := t.TempDir()
	env := map[string]string{"IDEMKEY_LEDGER": filepath.Join(dir, "ledger.db"), "HOME": dir}
	args := []string{"post", o.URL + "/pay", "--task", "t1", "--tool", "pay", "-d", `{"amount":100}`}
	out1, err1, code := clitest.Streams{Env: env}.Run(t, args...).Values()
	if code != 0 || out1 != `{"request":1,"status":201}`+"\n" || err1 != "" {
		t.Fatalf("first: exit %d, stdout %q, stderr %q", code, out1, err1)
	}
	out2, err2, code := clitest.Streams{Env: env}.Run(t, args...).Values()
	if code != 0 || out2 != out1 || o.Total() != 1 {
		t.Fatalf("second: exit %d, stdout %q, %d requests", code, out2, o.Total())
	}
	if !strings.HasPrefix(err2, "idemkey: replayed from the ledger, no request sent: HTTP 201 Created saved at ") {
		t.Fatalf("replay not said: %q", err2)
	}
	// -i shows the saved status line and headers.
	out3, _, code := clitest.Streams{Env: env}.Run(t, append(args, "-i", "-s")...).Values()
	if code != 0 || !strings.HasPrefix(out3, "HTTP/1.1 201 Created\r\n") || !strings.Contains(out3, "X-Seq: 1\r\n") || !strings.HasSuffix(out3, "\r\n\r\n"+out1) {
		t.Fatalf("-i replay: %q", out3)
	}
	// -w works on a replay.
	if out, _, code := (clitest.Streams{Env: env}).Run(t, append(args, "-s", "-o", "/dev/null", "-w", "%{http_code}")...).Values(); code != 0 || out != "201" {
		t.Fatalf("-w on a replay: exit %d, %q", code, out)
	}
	// Another body is another key: sent.
	if _, _, code := (clitest.Streams{Env: env}).Run(t, "post", o.URL+"/pay", "--task", "t1", "--tool", "pay", "-d", `{"amount":200}`).Values(); code != 0 || o.Total() != 2 {
		t.Fatalf("another call: exit %d, %d requests", code, o.Total())
	}
	// --no-ledger: sent, even with IDEMKEY_LEDGER set.
	if _, _, code := (clitest.Streams{Env: env}).Run(t, append(args, "--no-ledger")...).Values(); code != 0 || o.Total() != 3 {
		t.Fatalf("--no-ledger: exit %d, %d requests", code, o.Total())
	}
	// --ledger PATH names the file, as run's --ledger does (no = needed).
	other := filepath.Join(dir, "other.db")
	clitest.Streams{Env: env}.Run(t, append(args, "--ledger", other)...)
	if _, err := os.Stat(other); err != nil || o.Total() != 4 {
		t.Fatalf("--ledger PATH: %v, %d requests", err, o.Total())
	}
	if _, errs, code := (clitest.Streams{Env: env}).Run(t, append(args, "--ledger", other)...).Values(); code != 0 || o.Total() != 4 || !strings.Contains(errs, "replayed from the ledger") {
		t.Fatalf("--ledger PATH again: exit %d, %d requests: %s", code, o.Total(), errs)
	}
}

func TestPostLedgerRetryableNotSaved(t *testing.T) {
	for _, status := range []int{503, 500, 408, 409, 425, 429} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			o := clitest.NewPlanOwner(t, status)
			dir := t.TempDir()
			env := map[string]string{"IDEMKEY_LEDGER": filepath.Join(dir, "ledger.db")}
			args := []string{"post", o.URL, "--task", "t1", "--tool", "pay", "-d", `{"a":1}`}
			out, _, code := clitest.Streams{Env: env}.Run(t, args...).Values()
			if code != 0 || !strings.Contains(out, fmt.Sprintf(`"status":%d`, status)) {
				t.Fatalf("first: exit %d, %q", code, out)
			}
			// Not saved: the next invocation sends again, with the same key.
			out, _, code = clitest.Streams{Env: env}.Run(t, args...).Values()
			if code != 0 || out != `{"request":2,"status":201}`+"\n" || len(o.Keys) != 1 {
				t.Fatalf("second: exit %d, %q, keys %v", code, out, o.Keys)
			}
			// The 201 is saved.
			out, _, code = clitest.Streams{Env: env}.Run(t, args...).Values()
			if code != 0 || out != `{"request":2,"status":201}`+"\n" || o.Total() != 2 {
				t.Fatalf("third: exit %d, %q, %d requests", code, out, o.Total())
			}
		})
	}
}

func TestPostLedgerFinal4xxSaved(t *testing.T) {
	o := clitest.NewPlanOwner(t, 404)
	dir := t.TempDir()
	env := map[string]string{"IDEMKEY_LEDGER": filepath.Join(dir, "ledger.db")}
	args := []string{"post", o.URL, "--task", "t1", "--tool", "pay", "-d", `{"a":1}`, "-f"}
	_, _, c1 := clitest.Streams{Env: env}.Run(t, args...).Values()
	_, e2, c2 := clitest.Streams{Env: env}.Run(t, args...).Values()
	if c1 != 22 || c2 != 22 || o.Total() != 1 || !strings.Contains(e2, "HTTP 404 Not Found") {
		t.Fatalf("404: exits %d %d, %d requests, %q", c1, c2, o.Total(), e2)
	}
}

func TestPostLedgerTransferFailureNotSaved(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"IDEMKEY_LEDGER": filepath.Join(dir, "ledger.db")}
	// Nothing listens on the port of a closed server.
	o := clitest.NewPlanOwner(t)
	url := o.URL
	o.Close()
	args := []string{"post", url, "--task", "t1", "--tool", "pay", "-d", `{"a":1}`, "-s"}
	if _, _, c := (clitest.Streams{Env: env}).Run(t, args...).Values(); c != 7 {
		t.Fatalf("connection refused: exit %d, want 7", c)
	}
	out, _, c := clitest.Streams{Env: env}.Run(t, "ledger", "ls", "--json", "--ledger", env["IDEMKEY_LEDGER"]).Values()
	if c != 0 || !strings.Contains(out, `"state":"failed"`) || !strings.Contains(out, `"exit_code":7`) {
		t.Fatalf("record of a transfer failure: %s", out)
	}
}

func TestPostLedgerDeadRunningRetriedWithSameKey(t *testing.T) {
	r := clitest.NewRig(t)
	o := clitest.NewPlanOwner(t, 0) // the first request stalls
	args := []string{"post", o.URL, "--task", "t1", "--tool", "pay", "-d", `{"a":1}`, "-s"}
	c := r.Cmd(args...)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-o.Arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("the first request never arrived")
	}
	// While it is in flight, another invocation is busy (75) and sends
	// nothing.
	if res := r.Idemkey(args[:len(args)-1]...); res.Code != 75 || o.Total() != 1 || !strings.Contains(string(res.Stderr), "in flight elsewhere") {
		t.Fatalf("while in flight: exit %d, %d requests, %s", res.Code, o.Total(), res.Stderr)
	}
	// The holder dies with its request in flight: the record says running.
	_ = c.Process.Signal(syscall.SIGKILL)
	_ = c.Wait()
	ls := r.Idemkey("ledger", "ls", "--json")
	if !strings.Contains(string(ls.Stdout), `"recorded_state":"running"`) {
		t.Fatalf("record after the crash: %s", ls.Stdout)
	}
	res := r.Idemkey(args...)
	if res.Code != 0 || string(res.Stdout) != `{"request":2,"status":201}`+"\n" {
		t.Fatalf("retry: exit %d, %q, %s", res.Code, res.Stdout, res.Stderr)
	}
	if len(o.Keys) != 1 || o.Total() != 2 {
		t.Fatalf("requests by key: %v, want two with one key", o.Keys)
	}
	for k := range o.Keys {
		s := r.Show(k)
		if s.State != "succeeded" || s.Attempt != 2 {
			t.Fatalf("record: %+v", s)
		}
	}
	// And replayed from then on.
	if res := r.Idemkey(args...); res.Code != 0 || o.Total() != 2 {
		t.Fatalf("replay: exit %d, %d requests", res.Code, o.Total())
	}
}

// TestPostLedgerLargeResponseNotSaved: a response body past what the ledger keeps is not saved (a replay must
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
		for range step.MaxRecordedOutput >> 20 {
			w.Write(chunk)
		}
		w.Write([]byte("!")) // one byte past the cap
	}))
	defer srv.Close()
	dir := t.TempDir()
	env := map[string]string{"IDEMKEY_LEDGER": filepath.Join(dir, "ledger.db"), "HOME": dir}
	args := []string{"post", srv.URL + "/export", "--task", "t1", "--tool", "export", "-d", `{"all":true}`, "-o", os.DevNull}
	for i := 1; i <= 2; i++ {
		out, errs, code := clitest.Streams{Env: env}.Run(t, args...).Values()
		if code != 0 || out != "" {
			t.Fatalf("invocation %d: exit %d, stdout %q", i, code, out)
		}
		want := fmt.Sprintf("idemkey: warning: not saved: the response body (%d bytes) is larger than the ledger keeps (%d); the next invocation sends the request again, with the same key\n", step.MaxRecordedOutput+1, step.MaxRecordedOutput)
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
