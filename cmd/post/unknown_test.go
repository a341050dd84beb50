package post_test

import (
	"strings"
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
)

func unknownPostArgs(o *owner, extra ...string) []string {
	return append([]string{"post", "--task", "t1", "--tool", "charge", o.url(), "-d", `{"amount":100}`}, extra...)
}

// TestPostEmptyReplyIsUnknown: a request the owner read whole and then
// closed on without a reply (curl's 52) may have taken effect: recorded
// unknown, never failed. With --recover fail the next post sends nothing
// and exits 76; --reconcile settles it (exit 3: happened more than
// once, replayed without sending, with a warning).
func TestPostEmptyReplyIsUnknown(t *testing.T) {
	r := clitest.NewProcs(t)
	o := newOwner(t, "close")
	p := r.Run(unknownPostArgs(o)...)
	if p.Code != 52 || o.count() != 1 {
		t.Fatalf("exit %d, %d effects:\n%s", p.Code, o.count(), p.Stderr.String())
	}
	if !strings.Contains(p.Stderr.String(), "recorded as unknown: no answer after the request was sent, it may have reached the server: (52) empty reply from server") {
		t.Fatalf("not said:\n%s", p.Stderr.String())
	}
	key := r.OnlyKey()
	if m := r.Show(key); m["state"] != "unknown" {
		t.Fatalf("record %v", m)
	}
	o.set(`{"id":"ch_1"}`)
	p = r.Run(unknownPostArgs(o, "--recover", "fail")...)
	if p.Code != 76 || o.count() != 1 || !strings.Contains(p.Stderr.String(), "outcome unknown, no request sent: "+key) {
		t.Fatalf("--recover fail: exit %d, %d effects:\n%s", p.Code, o.count(), p.Stderr.String())
	}
	// The owner's reconciler finds two charges (exit 3): settled as
	// succeeded, not sent again, and said.
	p = r.Run(unknownPostArgs(o, "--recover", "fail", "--reconcile", `echo '{"id":"ch_1"}'; exit 3`)...)
	if p.Code != 0 || o.count() != 1 || p.Stdout.String() != "{\"id\":\"ch_1\"}\n" {
		t.Fatalf("--reconcile: exit %d, %d effects, stdout %q:\n%s", p.Code, o.count(), p.Stdout.String(), p.Stderr.String())
	}
	if !strings.Contains(p.Stderr.String(), "idemkey: warning: "+key+": the owner says the effect happened more than once (duplicated)") {
		t.Fatalf("not warned:\n%s", p.Stderr.String())
	}
	if m := r.Show(key); m["state"] != "succeeded" {
		t.Fatalf("reconciled record %v", m)
	}
}

// TestPostRetryAfterUnknownSendsAgain: the default policy, retry, sends
// an unknown request again with the same key; a refused connection
// (nothing sent) is failed, not unknown.
func TestPostRetryAfterUnknownSendsAgain(t *testing.T) {
	r := clitest.NewProcs(t)
	o := newOwner(t, "close")
	r.Run(unknownPostArgs(o)...)
	o.set(`{"id":"ch_2"}`)
	p := r.Run(unknownPostArgs(o)...)
	if p.Code != 0 || o.count() != 2 || p.Stdout.String() != `{"id":"ch_2"}` {
		t.Fatalf("retry: exit %d, %d effects, %q:\n%s", p.Code, o.count(), p.Stdout.String(), p.Stderr.String())
	}
	closed := "http://" + o.ln.Addr().String()
	o.ln.Close()
	p = r.Run("post", "--task", "t1", "--tool", "charge", closed+"/other", "-d", `{"amount":7}`)
	if p.Code != 7 {
		t.Fatalf("refused: exit %d:\n%s", p.Code, p.Stderr.String())
	}
	for _, rec := range r.Records() {
		if rec["tool"] == "charge" && rec["state"] != "succeeded" && rec["state"] != "failed" {
			t.Fatalf("record %v", rec)
		}
		if rec["exit_code"] == float64(7) && rec["state"] != "failed" {
			t.Fatalf("a refused connection recorded %v", rec["state"])
		}
	}
}

// TestPostKilledMidRequestIsUnknown: post killed (-9) while the owner
// holds its request: the next post with --recover fail sends nothing
// (76) and the owner saw one request.
func TestPostKilledMidRequestIsUnknown(t *testing.T) {
	r := clitest.NewProcs(t)
	o := newOwner(t, "hold")
	p := r.Start(unknownPostArgs(o)...)
	select {
	case <-o.got:
	case <-time.After(60 * time.Second):
		t.Fatal("the request did not arrive")
	}
	if err := p.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.Wait(t)
	o.set(`{"id":"ch_3"}`)
	q := r.Run(unknownPostArgs(o, "--recover", "fail")...)
	if q.Code != 76 || o.count() != 1 {
		t.Fatalf("after kill -9: exit %d, %d effects:\n%s", q.Code, o.count(), q.Stderr.String())
	}
}
