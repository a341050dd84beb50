package post_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
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
	"github.com/idemkey/idemkey/cmd/internal/clitest"
)

// TestFleetPostLeaseRenewed: post --ledger on a shared store holds the key
// for as long as its request takes, past its lease: the lease is renewed,
// so a second machine that starts the same request meanwhile exits 75 and
// sends nothing, instead of taking the key over as if the first had died
// and sending the request again while the first is still in flight.
func TestFleetPostLeaseRenewed(t *testing.T) {
	clitest.EachStore(t, func(t *testing.T, s *clitest.Store) {
		o := clitest.NewPlanOwner(t, 0) // the first request stalls until released
		fl := clitest.NewFleet(t, s, nil)
		args := []string{"post", o.URL + "/pay", "--task", "t-lease", "--tool", "pay", "-d", `{"amount":100}`,
			"--ledger=" + s.URL, "--lease", "300ms"}
		a := fl.Start("a", args...)
		clitest.AwaitArrival(t, o, a)
		time.Sleep(time.Second) // more than three leases
		b := fl.Run("b", args...)
		if b.Code != cli.ExitBusy || o.Total() != 1 || !strings.Contains(b.Stderr.String(), "in flight elsewhere") {
			t.Fatalf("while the first is in flight past its lease: exit %d, %d requests:\n%s", b.Code, o.Total(), b.Stderr.String())
		}
		close(o.Release)
		if code := a.Wait(t, 30*time.Second); code != 0 || a.Stdout.String() != `{"request":1,"status":201}`+"\n" {
			t.Fatalf("first: exit %d, stdout %q:\n%s", code, a.Stdout.String(), a.Stderr.String())
		}
		c := fl.Run("c", args...)
		if c.Code != 0 || c.Stdout.String() != a.Stdout.String() || o.Total() != 1 || !strings.Contains(c.Stderr.String(), "replayed from the ledger") {
			t.Fatalf("after it: exit %d, stdout %q, %d requests:\n%s", c.Code, c.Stdout.String(), o.Total(), c.Stderr.String())
		}
	})
}

// TestPostLedgerReplayRedirectChain: a response reached through redirects
// (-L) replays as it was written the first time: -i and -D show every
// response head of the chain, and -w's url_effective, num_redirects,
// method and size_header are the final request's, not the first's.
func TestPostLedgerReplayRedirectChain(t *testing.T) {
	var mu sync.Mutex
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests++
		mu.Unlock()
		switch r.URL.Path {
		case "/temporary":
			w.Header().Set("Location", "/moved")
			w.WriteHeader(http.StatusTemporaryRedirect)
		case "/moved":
			w.Header().Set("Location", "/done")
			w.WriteHeader(http.StatusSeeOther)
		default:
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, "%s %s\n", r.Method, r.URL.Path)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	env := map[string]string{"IDEMKEY_LEDGER": filepath.Join(dir, "ledger.db"), "HOME": dir}
	dump := filepath.Join(dir, "headers")
	args := []string{"post", srv.URL + "/temporary", "--task", "t1", "--tool", "pay", "-d", `{"amount":100}`,
		"-L", "-i", "-D", dump, "-w", `%{http_code} %{url_effective} %{num_redirects} %{method} %{size_header} %{num_headers}\n`}
	first, errs, code := clitest.Streams{Env: env}.Run(t, args...).Values()
	if code != 0 || requests != 3 || !strings.HasSuffix(first, "201 "+srv.URL+"/done 2 GET "+fmt.Sprint(strings.Index(first, "GET /done"))+" 4\n") {
		t.Fatalf("first: exit %d, %d requests, stdout %q, stderr %q", code, requests, first, errs)
	}
	firstDump, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(dump)
	replay, errs, code := clitest.Streams{Env: env}.Run(t, args...).Values()
	if code != 0 || requests != 3 || !strings.Contains(errs, "replayed from the ledger") {
		t.Fatalf("replay: exit %d, %d requests, stderr %q", code, requests, errs)
	}
	if replay != first {
		t.Fatalf("replay differs from the first response:\n%s\nwant:\n%s", replay, first)
	}
	if replayDump, err := os.ReadFile(dump); err != nil || string(replayDump) != string(firstDump) {
		t.Fatalf("-D on the replay: %v\n%s\nwant:\n%s", err, replayDump, firstDump)
	}
}

// TestFleetPostLedgerInterrupted: post --ledger stopped by SIGTERM or
// SIGINT with its request in flight records the attempt as unknown and
// dies by the signal, so the next invocation retries at once with the
// same key: a record left running would stay so until its lease ran out, and
// for those 30 s every invocation exited 75, "in flight elsewhere", with
// nothing in flight.
func TestFleetPostLedgerInterrupted(t *testing.T) {
	clitest.EachStore(t, func(t *testing.T, s *clitest.Store) {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
			o := clitest.NewPlanOwner(t, 0) // the first request stalls
			fl := clitest.NewFleet(t, s, nil)
			args := []string{"post", o.URL + "/pay", "--task", "t-" + sig.String(), "--tool", "pay", "-d", `{"amount":100}`, "--ledger=" + s.URL}
			a := fl.Start("a", args...)
			clitest.AwaitArrival(t, o, a)
			a.Cmd.Process.Signal(sig)
			if code := a.Wait(t, 30*time.Second); code != 128+int(sig) {
				t.Fatalf("%v: exit %d, want %d:\n%s", sig, code, 128+int(sig), a.Stderr.String())
			}
			b := fl.Run("b", args...)
			if b.Code != 0 || b.Stdout.String() != `{"request":2,"status":201}`+"\n" {
				t.Fatalf("after %v: exit %d, stdout %q:\n%s", sig, b.Code, b.Stdout.String(), b.Stderr.String())
			}
			if len(o.Keys) != 1 {
				t.Fatalf("after %v: requests by key %v, want two with one key", sig, o.Keys)
			}
			for k := range o.Keys {
				if rec := fl.Show(k); rec["state"] != "succeeded" || rec["attempt"] != 2.0 {
					t.Fatalf("after %v: record %v", sig, rec)
				}
			}
		}
	})
}

// TestPostLedgerFingerprintAsKeyed: the request's fingerprint has the
// arguments as they enter the key, as run's does: a retry whose body
// differs only where --omit or --only says the call does not (a
// regenerated timestamp) is the same call, and replays the saved
// response instead of being refused as another request.
func TestPostLedgerFingerprintAsKeyed(t *testing.T) {
	o := clitest.NewPlanOwner(t)
	dir := t.TempDir()
	env := map[string]string{"IDEMKEY_LEDGER": filepath.Join(dir, "ledger.db"), "HOME": dir}
	for _, tc := range []struct {
		sel, first, retry string
	}{
		{"--omit=/sent_at", `{"amount":100,"sent_at":1}`, `{"amount":100,"sent_at":2}`},
		{"--only=/amount", `{"amount":200,"trace":"a"}`, `{"trace":"b","amount":200}`},
	} {
		args := []string{"post", o.URL + "/pay", "--task", "t1", "--tool", "pay", tc.sel, "-d"}
		before := o.Total()
		first, errs, code := clitest.Streams{Env: env}.Run(t, append(args, tc.first)...).Values()
		if code != 0 || o.Total() != before+1 {
			t.Fatalf("%s: first: exit %d, %q", tc.sel, code, errs)
		}
		retry, errs, code := clitest.Streams{Env: env}.Run(t, append(args, tc.retry)...).Values()
		if code != 0 || retry != first || o.Total() != before+1 || !strings.Contains(errs, "replayed from the ledger") {
			t.Fatalf("%s: retry: exit %d, stdout %q (want %q), %d requests, stderr %q", tc.sel, code, retry, first, o.Total(), errs)
		}
	}
	// A difference in what enters the key is another key, and a
	// difference in the URL or method the same key for another request:
	// refused, nothing sent.
	args := []string{"post", o.URL + "/pay", "--task", "t1", "--tool", "pay", "-d", `{"amount":300}`}
	clitest.Streams{Env: env}.Run(t, args...)
	before := o.Total()
	args[1] = o.URL + "/refund"
	out, errs, code := clitest.Streams{Env: env}.Run(t, args...).Values()
	if code != cli.ExitUsage || out != "" || o.Total() != before || !strings.Contains(errs, "recorded for another request") {
		t.Fatalf("another URL: exit %d, stdout %q, %d requests, stderr %q", code, out, o.Total()-before, errs)
	}
}

// TestPostLedgerMismatchSaysWhat: a key recorded for another request
// names what differs in a request's terms (the method, the URL), or that
// the record is run's, instead of "arguments differ at /url" (the
// arguments are the same: they make the key).
func TestPostLedgerMismatchSaysWhat(t *testing.T) {
	o := clitest.NewPlanOwner(t)
	dir := t.TempDir()
	ledgerPath := filepath.Join(dir, "ledger.db")
	env := map[string]string{"IDEMKEY_LEDGER": ledgerPath, "HOME": dir}
	args := []string{"post", o.URL + "/pay", "--task", "t1", "--tool", "pay", "-d", `{"amount":300}`}
	if _, errs, code := (clitest.Streams{Env: env}).Run(t, args...).Values(); code != 0 {
		t.Fatalf("first: exit %d, %s", code, errs)
	}
	for _, tc := range []struct {
		change []string
		want   string
	}{
		{[]string{"-X", "PUT"}, "the method differs: recorded POST, now PUT"},
		{[]string{"-X", "PATCH", o.URL + "/refund"}, fmt.Sprintf("the method differs: recorded POST, now PATCH; the URL differs: recorded %q, now %q", o.URL+"/pay", o.URL+"/refund")},
	} {
		a := append([]string{}, args...)
		a = append(a, tc.change[:2]...)
		if len(tc.change) > 2 {
			a[1] = tc.change[2]
		}
		out, errs, code := clitest.Streams{Env: env}.Run(t, a...).Values()
		if code != cli.ExitUsage || out != "" || o.Total() != 1 || !strings.Contains(errs, "was recorded for another request: "+tc.want+"\n") {
			t.Fatalf("%v: exit %d, stdout %q, %d requests, stderr %q", tc.change, code, out, o.Total(), errs)
		}
	}
	// The same key recorded by run (the same task, tool and arguments).
	other := filepath.Join(dir, "args.json")
	os.WriteFile(other, []byte(`{"amount":301}`), 0o600)
	if _, errs, code := (clitest.Streams{Env: env}).Run(t, "run", "--ledger", ledgerPath, "--task", "t1", "--tool", "pay", "--args", other, "--", "true").Values(); code != 0 {
		t.Fatalf("run: exit %d, %s", code, errs)
	}
	args[len(args)-1] = `{"amount":301}`
	_, errs, code := clitest.Streams{Env: env}.Run(t, args...).Values()
	if code != cli.ExitUsage || o.Total() != 1 || !strings.Contains(errs, `was recorded for another request: it is a record of 'idemkey run' (task "t1", tool "pay"), not of a request`) {
		t.Fatalf("a run record: exit %d, %d requests, stderr %q", code, o.Total(), errs)
	}
}

// TestPostLedgerRecordNamesTheCall: the record has the task and tool the
// key was derived with, wherever they came from (--from call takes both
// from the input, --from openai the tool), so that ledger ls --task and
// --tool find it: they were empty.
func TestPostLedgerRecordNamesTheCall(t *testing.T) {
	o := clitest.NewPlanOwner(t)
	dir := t.TempDir()
	ledgerPath := filepath.Join(dir, "ledger.db")
	env := map[string]string{"IDEMKEY_LEDGER": ledgerPath, "HOME": dir}
	for _, tc := range []struct {
		args       []string
		task, tool string
	}{
		{[]string{"--from", "call", "-d", `{"task":"t-call","tool":"refund","args":{"amount":1}}`}, "t-call", "refund"},
		{[]string{"--task", "t-openai", "--from", "openai", "-d",
			`{"id":"call_7Qx","type":"function","function":{"name":"charge","arguments":"{\"amount\":1999}"}}`}, "t-openai", "charge"},
	} {
		if _, errs, code := (clitest.Streams{Env: env}).Run(t, append([]string{"post", o.URL}, tc.args...)...).Values(); code != 0 {
			t.Fatalf("%v: exit %d, %s", tc.args, code, errs)
		}
		out, errs, code := clitest.Streams{Env: env}.Run(t, "ledger", "ls", "--ledger", ledgerPath, "--json", "--task", tc.task, "--tool", tc.tool).Values()
		if code != 0 || strings.Count(out, `"key":`) != 1 || !strings.Contains(out, `"kind":"post"`) {
			t.Fatalf("ledger ls --task %s --tool %s: exit %d, %s%s", tc.task, tc.tool, code, out, errs)
		}
	}
}

// TestPostLedgerResolvedSucceeded: a request whose outcome was unknown
// and that was settled as succeeded has no saved response: later
// invocations send nothing and exit 0, as run replays such a record,
// saying so, instead of failing for ever with "has no saved response:
// unexpected end of JSON input". ledger resolve now refuses to settle a
// post so (TestLedgerResolvePostWithoutResponse); a ledger written by an
// older idemkey can still hold such a record, made here by hand.
func TestPostLedgerResolvedSucceeded(t *testing.T) {
	r := clitest.NewRig(t)
	o := clitest.NewPlanOwner(t, 0) // the first request stalls
	args := []string{"post", o.URL, "--task", "t1", "--tool", "pay", "-d", `{"a":1}`}
	c := r.Cmd(args...)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-o.Arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("the first request never arrived")
	}
	c.Process.Signal(syscall.SIGTERM)
	c.Wait()
	var key string
	for k := range o.Keys {
		key = k
	}
	if s := r.Show(key); s.State != "unknown" {
		t.Fatalf("record after SIGTERM: %+v", s)
	}
	if res := r.Idemkey("ledger", "resolve", key, "--as", "succeeded"); res.Code != 1 {
		t.Fatalf("resolve --as succeeded of a post without a response: exit %d, want 1: %s", res.Code, res.Stderr)
	}
	r.ExecLedger(`UPDATE records SET state = 'succeeded', exit_code = 0, reason = 'resolved by hand: the charge is in the dashboard', ended_at = ? WHERE key = ?`,
		time.Now().UnixNano(), key)
	res := r.Idemkey(args...)
	want := "idemkey: no request sent: key " + key + " is recorded as succeeded with no response saved to replay (attempt 1, ended at "
	if res.Code != 0 || len(res.Stdout) != 0 || o.Total() != 1 || !strings.HasPrefix(string(res.Stderr), want) || !strings.Contains(string(res.Stderr), "the charge is in the dashboard") {
		t.Fatalf("after resolve: exit %d, stdout %q, %d requests, stderr %s", res.Code, res.Stdout, o.Total(), res.Stderr)
	}
}

// TestPostLedgerReplayEscapesReason: the replay line shows the saved
// status with the server's reason phrase escaped, as every diagnostic
// does: a reason phrase with terminal escapes was written to standard
// error raw on every replay.
func TestPostLedgerReplayEscapesReason(t *testing.T) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				http.ReadRequest(bufio.NewReader(c))
				io.WriteString(c, "HTTP/1.1 201 Created \x1b]0;owned\x07\x1b[2J\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n")
			}()
		}
	}()
	dir := t.TempDir()
	env := map[string]string{"IDEMKEY_LEDGER": filepath.Join(dir, "ledger.db"), "HOME": dir}
	args := []string{"post", "http://" + l.Addr().String() + "/pay", "--task", "t1", "--tool", "pay", "-d", `{"a":1}`}
	if out, errs, code := (clitest.Streams{Env: env}).Run(t, args...).Values(); code != 0 || out != "ok\n" {
		t.Fatalf("first: exit %d, %q, %q", code, out, errs)
	}
	// -v's line saying what was recorded, too.
	if out, errs, code := (clitest.Streams{Env: env}).Run(t, "post", args[1], "--task", "t2", "--tool", "pay", "-d", `{"a":1}`, "-v").Values(); code != 0 || out != "ok\n" || !strings.Contains(errs, "\n* ledger: saved: HTTP 201 Created \\x1b]0;owned\\a\\x1b[2J\n") {
		t.Fatalf("-v: exit %d, %q, stderr %q", code, out, errs)
	}
	out, errs, code := clitest.Streams{Env: env}.Run(t, args...).Values()
	if code != 0 || out != "ok\n" || !strings.Contains(errs, "replayed from the ledger") || strings.ContainsAny(errs, "\x1b\x07") {
		t.Fatalf("replay: exit %d, %q, stderr %q", code, out, errs)
	}
}

// TestPostLedgerWait: a second invocation of a request in flight
// elsewhere exits 75 at once, naming the holder, or with --wait waits for
// it to end and then acts on its outcome: replays its saved response, or,
// when the first ended without one, sends the request itself with the
// same key. Never two requests at once. On one machine (SQLite, the key's
// kernel lock) and on shared stores (PostgreSQL's NOTIFY, Redis polled).
func TestPostLedgerWait(t *testing.T) {
	check := func(t *testing.T, start func(name string, args ...string) *clitest.Worker, ledgerArg string) {
		o := clitest.NewPlanOwner(t, 0) // the first request stalls until released
		args := []string{"post", o.URL + "/pay", "--task", "t-wait", "--tool", "pay", "-d", `{"amount":100}`, ledgerArg}
		a := start("a", args...)
		clitest.AwaitArrival(t, o, a)
		b := start("b", args...)
		if code := b.Wait(t, 30*time.Second); code != cli.ExitBusy || !strings.Contains(b.Stderr.String(), "is in flight elsewhere") ||
			!strings.Contains(b.Stderr.String(), "hint: --wait DURATION") {
			t.Fatalf("without --wait: exit %d:\n%s", code, b.Stderr.String())
		}
		c := start("c", append(args, "--wait", "30s")...)
		time.Sleep(300 * time.Millisecond)
		select {
		case <-c.Done:
			t.Fatalf("--wait did not wait: exit %d:\n%s", c.Code, c.Stderr.String())
		default:
		}
		close(o.Release)
		if code := a.Wait(t, 30*time.Second); code != 0 {
			t.Fatalf("first: exit %d:\n%s", code, a.Stderr.String())
		}
		if code := c.Wait(t, 30*time.Second); code != 0 || c.Stdout.String() != a.Stdout.String() || o.Total() != 1 ||
			!strings.Contains(c.Stderr.String(), "replayed from the ledger") {
			t.Fatalf("--wait: exit %d, stdout %q (want %q), %d requests:\n%s", code, c.Stdout.String(), a.Stdout.String(), o.Total(), c.Stderr.String())
		}
		// The first ends without a saved response (interrupted): the
		// waiting one sends the request itself, with the same key.
		o2 := clitest.NewPlanOwner(t, 0)
		args[1] = o2.URL + "/pay"
		args[3] = "t-wait-2"
		a = start("a2", args...)
		clitest.AwaitArrival(t, o2, a)
		c = start("c2", append(args, "--wait", "30s")...)
		time.Sleep(300 * time.Millisecond)
		a.Cmd.Process.Signal(syscall.SIGTERM)
		a.Wait(t, 30*time.Second)
		if code := c.Wait(t, 30*time.Second); code != 0 || c.Stdout.String() != `{"request":2,"status":201}`+"\n" || len(o2.Keys) != 1 {
			t.Fatalf("--wait after an interrupted first: exit %d, stdout %q, requests by key %v:\n%s", code, c.Stdout.String(), o2.Keys, c.Stderr.String())
		}
	}
	t.Run("sqlite", func(t *testing.T) {
		fl := clitest.NewFleet(t, &clitest.Store{}, nil)
		ledgerPath := filepath.Join(t.TempDir(), "ledger.db")
		check(t, fl.Start, "--ledger="+ledgerPath)
	})
	clitest.EachStore(t, func(t *testing.T, s *clitest.Store) {
		fl := clitest.NewFleet(t, s, nil)
		check(t, fl.Start, "--ledger="+s.URL)
	})
}

// TestPostLedgerReplayedRefusalHint: a saved 4xx replays for as long as
// the record is kept, even after its cause (an expired token, which the
// fingerprint does not see) is fixed: its replay line says how to send the
// request again. A saved success has no hint.
func TestPostLedgerReplayedRefusalHint(t *testing.T) {
	o := clitest.NewPlanOwner(t, http.StatusUnauthorized)
	dir := t.TempDir()
	env := map[string]string{"IDEMKEY_LEDGER": filepath.Join(dir, "ledger.db"), "HOME": dir}
	args := []string{"post", o.URL, "--task", "t1", "--tool", "pay", "-d", `{"a":1}`, "-H", "Authorization: Bearer old"}
	clitest.Streams{Env: env}.Run(t, args...)
	args[len(args)-1] = "Authorization: Bearer new"
	_, errs, code := clitest.Streams{Env: env}.Run(t, args...).Values()
	if code != 0 || o.Total() != 1 || !strings.Contains(errs, "replayed from the ledger, no request sent: HTTP 401 Unauthorized") ||
		!strings.Contains(errs, "\nhint: this is the server's saved refusal; once its cause is fixed, 'idemkey ledger forget ") {
		t.Fatalf("401 replay: exit %d, %d requests, stderr %q", code, o.Total(), errs)
	}
	args[3] = "t2" // another task: the plan's next answer, a 201
	clitest.Streams{Env: env}.Run(t, args...)
	if _, errs, code := (clitest.Streams{Env: env}).Run(t, args...).Values(); code != 0 || o.Total() != 2 || !strings.Contains(errs, "replayed from the ledger") || strings.Contains(errs, "hint:") {
		t.Fatalf("201 replay: exit %d, %d requests, stderr %q", code, o.Total(), errs)
	}
}

// TestPostLedgerRetention: post reads the retention as run and ledger gc
// do (--retain, IDEMKEY_RETAIN, the config file): a saved response older
// than it is not replayed, and the request is sent again with the same
// key; without --ledger, --retain is a usage error.
func TestPostLedgerRetention(t *testing.T) {
	o := clitest.NewPlanOwner(t)
	dir := t.TempDir()
	env := map[string]string{"IDEMKEY_LEDGER": filepath.Join(dir, "ledger.db"), "HOME": dir}
	args := []string{"post", o.URL + "/pay", "--task", "t1", "--tool", "pay", "-d", `{"amount":100}`}
	if _, errs, code := (clitest.Streams{Env: env}).Run(t, args...).Values(); code != 0 || o.Total() != 1 {
		t.Fatalf("first: exit %d, %d requests, stderr %q", code, o.Total(), errs)
	}
	time.Sleep(20 * time.Millisecond)
	// Within the default retention (7d): replayed.
	if _, errs, code := (clitest.Streams{Env: env}).Run(t, args...).Values(); code != 0 || o.Total() != 1 || !strings.Contains(errs, "replayed from the ledger") {
		t.Fatalf("replay: exit %d, %d requests, stderr %q", code, o.Total(), errs)
	}
	// Older than --retain: sent again, with the same key.
	if _, errs, code := (clitest.Streams{Env: env}).Run(t, append(args, "--retain", "10ms")...).Values(); code != 0 || o.Total() != 2 || strings.Contains(errs, "replayed") {
		t.Fatalf("--retain 10ms: exit %d, %d requests, stderr %q", code, o.Total(), errs)
	}
	time.Sleep(20 * time.Millisecond)
	env["IDEMKEY_RETAIN"] = "10ms"
	if _, errs, code := (clitest.Streams{Env: env}).Run(t, args...).Values(); code != 0 || o.Total() != 3 || strings.Contains(errs, "replayed") {
		t.Fatalf("IDEMKEY_RETAIN=10ms: exit %d, %d requests, stderr %q", code, o.Total(), errs)
	}
	o.Mu.Lock()
	keys := len(o.Keys)
	o.Mu.Unlock()
	if keys != 1 {
		t.Fatalf("%d distinct keys sent, want 1", keys)
	}
	delete(env, "IDEMKEY_RETAIN")
	out, errs, code := clitest.Streams{Env: env}.Run(t, "post", o.URL, "--task", "t1", "--tool", "pay", "-d", `{}`, "--retain", "1d", "--no-ledger").Values()
	if code != 2 || out != "" || !strings.Contains(errs, "idemkey: error: --retain applies only with a ledger") {
		t.Fatalf("--retain without --ledger: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
