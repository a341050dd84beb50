package mcp_test

import (
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
)

// TestMCPHTTPSessionEnded: the HTTP server ends its session, as a server that restarted or
// expired it does (the counting server's /control/end-sessions: its
// streams close, requests with its id get 404). idemkey starts a new
// session with the client's own initialize and sends what the server
// refused again; the SDK client on stdio never notices. A call in flight
// when the session ended is unknown (its claim settled, not left
// running); a write made before is replayed from the ledger; the next
// write runs once, in the new session.
func TestMCPHTTPSessionEnded(t *testing.T) {
	t.Parallel()
	eachHTTPMode(t, func(t *testing.T, r *mcpRig, _, url string, _ *exec.Cmd) {
		slow := map[string]any{"until": r.path("release")}
		one := map[string]any{"amount": 1, "currency": "eur"}
		c := r.startClient(mcpPlan{Command: r.bin, Args: []string{"mcp", "--task", "t-session", "--url", url}, Steps: []map[string]any{
			call("charge", one),
			call("slow", slow, "async", true, "tag", "s"),
			step("waitFile", "path", r.path("ended")),
			step("await", "tag", "s"),
			call("charge", one),
			call("charge", map[string]any{"amount": 2, "currency": "eur"}, "async", true, "tag", "a"),
			call("charge", map[string]any{"amount": 3, "currency": "eur"}, "async", true, "tag", "b"),
			step("await", "tag", "a"),
			step("await", "tag", "b"),
			step("ping"),
			call("slow", slow),
			step("list"),
		}})
		started := r.waitCalls(2)[1]
		resp, err := http.Post(strings.TrimSuffix(url, "/mcp")+"/control/end-sessions", "text/plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		r.write("ended", "ended\n")
		steps, stderr := c.wait()

		first := steps[0].tool(t)
		if res := steps[3].tool(t); !res.IsError || res.Meta["com.github.idemkey/outcome"] != "unknown" {
			t.Fatalf("the call in flight when the session ended: %+v\n%s", res, stderr)
		}
		if res := steps[4].tool(t); res.Meta[metaReplayed] != true || res.text() != first.text() {
			t.Fatalf("the first write again: %+v", res)
		}
		for i, want := range []string{"charged 2 eur", "charged 3 eur"} {
			if res := steps[7+i].tool(t); res.IsError || !strings.Contains(res.text(), want) {
				t.Fatalf("a write after the session ended: %+v\n%s", res, stderr)
			}
		}
		if steps[9].Error != "" || steps[11].Error != "" || !strings.Contains(string(steps[11].Result), "charge") {
			t.Fatalf("ping and tools/list in the new session: %+v", steps[9:])
		}
		if res := steps[10].tool(t); !res.IsError || res.Meta["com.github.idemkey/outcome"] != "unknown" {
			t.Fatalf("the unknown call again: %+v", res)
		}
		// Two calls refused with 404 at once: one new session for both.
		charges := r.calls(r.count, "charge")
		if len(charges) != 3 || charges[0].Session == nil || charges[1].Session == nil || charges[2].Session == nil ||
			*charges[0].Session == *charges[1].Session || *charges[1].Session != *charges[2].Session ||
			strings.Count(stderr, "started session") != 1 {
			t.Fatalf("the server ran %s, want each charge once, the later two in one new session\n%s", fmt.Sprint(charges), stderr)
		}
		for _, s := range r.calls(r.count, "slow") {
			if s.Phase == "start" && *s.Key != *started.Key {
				t.Fatalf("the slow call was sent again: %+v", s)
			}
		}
		if rec := r.show(*started.Key); rec["recorded_state"] != "unknown" {
			t.Fatalf("the call in flight when the session ended is recorded %v", rec)
		}
		if !strings.Contains(stderr, "started session "+*charges[1].Session+" ") {
			t.Fatalf("stderr does not say a new session was started:\n%s", stderr)
		}
	})
}
