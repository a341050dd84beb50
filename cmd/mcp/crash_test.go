package mcp_test

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"
)

// waitCalls waits until the counting server has counted n lines.
func (r *mcpRig) waitCalls(n int) []countLine {
	r.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if c := r.calls(r.count, ""); len(c) >= n {
			return c
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the server did not count %d calls", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// killMidCall starts a client whose slow call the server is running when
// victims (the server, or idemkey and then its orphaned server) are killed
// with SIGKILL, and returns the client's steps.
func (r *mcpRig) killMidCall(flags []string, slow map[string]any, victims func(c countLine) []int) ([]mcpStep, countLine) {
	r.t.Helper()
	before := len(r.calls(r.count, ""))
	c := r.startClient(mcpPlan{Command: r.bin, Args: proxy(flags, r.counting()), Steps: []map[string]any{
		call("slow", slow, "async", true, "tag", "s"),
		step("await", "tag", "s"),
	}})
	started := r.waitCalls(before + 1)[before]
	if started.Phase != "start" {
		r.t.Fatalf("the server counted %+v", started)
	}
	for _, pid := range victims(started) {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			r.t.Fatal(err)
		}
	}
	steps, _ := c.wait()
	return steps, started
}

func (r *mcpRig) show(key string) map[string]any {
	r.t.Helper()
	out, errOut, code := r.idemkey("ledger", "show", key, "--json")
	if code != 0 {
		r.t.Fatalf("ledger show: exit %d: %s", code, errOut)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(out), &rec); err != nil {
		r.t.Fatal(err)
	}
	return rec
}

// afterCrash checks what a new proxy does with the call after a crash:
// with --recover fail, a tool error saying the outcome is unknown and how
// to settle it, nothing sent; with --recover retry, the next attempt with
// the same key.
func (r *mcpRig) afterCrash(t *testing.T, slow map[string]any, started countLine) {
	key := *started.Key
	if rec := r.show(key); rec["state"] != "unknown" && rec["state"] != "running" {
		// running: idemkey died with the record so (its lock is free:
		// the next claim reads it as unknown).
		t.Fatalf("after the crash the record is %v, want unknown", rec)
	}
	n := len(r.calls(r.count, ""))
	steps, _ := r.client(proxy([]string{"--task", "t-crash"}, r.counting()), call("slow", slow))
	res := steps[0].tool(t)
	if !res.IsError || !strings.Contains(res.text(), "unknown") || !strings.Contains(res.text(), "idemkey ledger resolve "+key) ||
		res.Meta["com.github.idemkey/outcome"] != "unknown" {
		t.Fatalf("the same call after the crash: %+v, want a tool error: outcome unknown, how to settle it", res)
	}
	if c := r.calls(r.count, ""); len(c) != n {
		t.Fatalf("the call was sent again without --recover retry: %+v", c[n:])
	}
	r.write("release", "")
	steps, _ = r.client(proxy([]string{"--task", "t-crash", "--recover", "retry"}, r.counting()), call("slow", slow))
	if res := steps[0].tool(t); res.IsError || !strings.Contains(res.text(), "slow done") {
		t.Fatalf("--recover retry: %+v", res)
	}
	r.sentAgain(t, "--recover retry", key, n)
}

// sentAgain checks that the server got the call (after its first n
// calls) as attempt 2 with the same key, run to its end, and that the
// record says it succeeded at attempt 2.
func (r *mcpRig) sentAgain(t *testing.T, after, key string, n int) {
	t.Helper()
	again := r.calls(r.count, "")[n:]
	if len(again) != 2 || *again[0].Key != key || *again[0].Attempt != 2 || again[1].Phase != "done" {
		t.Fatalf("after %s the server got %+v, want attempt 2 with key %s", after, again, key)
	}
	if rec := r.show(key); rec["state"] != "succeeded" || rec["recorded_state"] != "succeeded" || rec["attempt"] != 2.0 {
		t.Fatalf("after %s: %v", after, rec)
	}
}

// TestMCPServerKilledMidCall: kill -9 of the server mid-call: the proxy records the call unknown and
// says so to the client; a new proxy and the same call: unknown, or one
// more attempt with the same key under --recover retry.
func TestMCPServerKilledMidCall(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	slow := map[string]any{"until": r.path("release")}
	steps, started := r.killMidCall([]string{"--task", "t-crash"}, slow, func(c countLine) []int { return []int{c.Pid} })
	res := steps[1].tool(t)
	if !res.IsError || !strings.Contains(res.text(), "outcome of this call is unknown") || !strings.Contains(res.text(), "the server") {
		t.Fatalf("the call whose server died: %+v", res)
	}
	r.afterCrash(t, slow, started)
}

// TestMCPProxyKilledMidCall: kill -9 of idemkey itself mid-call: its lock dies with it; a new proxy
// finds the attempt unknown.
func TestMCPProxyKilledMidCall(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	slow := map[string]any{"until": r.path("release")}
	steps, started := r.killMidCall([]string{"--task", "t-crash"}, slow, func(c countLine) []int { return []int{c.Ppid, c.Pid} })
	if steps[1].Error == "" {
		t.Fatalf("the client got %s from a killed proxy", steps[1].Result)
	}
	r.afterCrash(t, slow, started)
}

// TestMCPCancelledAfterSent: a call cancelled after it was sent (notifications/cancelled) may have
// taken effect: unknown; the cancellation reaches the server.
func TestMCPCancelledAfterSent(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	slow := map[string]any{"until": r.path("release"), "note": "cancel me"}
	steps, stderr := r.client(proxy([]string{"--task", "t-cancel"}, r.counting()),
		call("slow", slow, "async", true, "tag", "s"),
		step("waitFile", "path", r.count),
		step("cancel", "tag", "s"),
		step("waitFile", "path", r.count, "lines", 2),
		call("slow", slow),
	)
	if steps[2].Error != "" {
		t.Fatal(steps[2].Error)
	}
	res := steps[4].tool(t)
	if !res.IsError || !strings.Contains(res.text(), "cancelled by the client after it was sent") {
		t.Fatalf("the call again after its cancellation: %+v\n%s", res, stderr)
	}
	c := r.calls(r.count, "slow")
	if len(c) != 2 || c[1].Phase != "done" {
		t.Fatalf("the server counted %+v: want the cancelled call started and ended (by its abort signal), and nothing more", c)
	}
}
