package mcp_test

import (
	"encoding/json"
	"os"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemkey/idemkey/derive/ledger/testserver"
)

// The reconcile of an unknown outcome through idemkey mcp: a
// call whose server was killed mid-call, then the same call through a new
// proxy with --reconcile (or the tool's tools.NAME.reconcile) whose
// command answers 0, 1, 2, or hangs past --reconcile-timeout. The effects
// are counted on the counting server; the records read with ledger show.

// reconcileScript writes a reconcile command to the rig: it appends what
// it was told (its environment and standard input) to rc.jsonl, then
// prints OUT on its standard output and NOTE on its standard error and
// exits CODE (its arguments are CODE OUT NOTE [PATTERN]), or, for CODE
// "hang", sleeps in a child (its pid in rc.pid) until killed. With
// PATTERN, it answers once the counting server's file has a line with it.
func (r *mcpRig) reconcileScript() string {
	return r.write("rc.sh", `stdin=$(cat)
printf '{"key":"%s","attempt":"%s","task":"%s","tool":"%s","stdin":%s}\n' "$IDEMPOTENCY_KEY" "$IDEMPOTENCY_ATTEMPT" "$IDEMKEY_TASK" "$IDEMKEY_TOOL" "$stdin" >> `+r.path("rc.jsonl")+`
if [ "$1" = hang ]; then
	sleep 600 & echo $! > `+r.path("rc.pid")+`
	wait
fi
if [ -n "$4" ]; then
	while ! grep -q "$4" "$COUNT_FILE"; do sleep 0.05; done
fi
printf '%s' "$2"
printf '%s' "$3" >&2
exit "$1"
`)
}

// alive reports whether pid is a process that has not ended (a zombie,
// killed and not yet reaped by init, has ended).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !strings.Contains(string(stat), ") Z ")
}

// reconcileRun is one run of the reconcile command, as it logged it.
type reconcileRun struct {
	Key     string         `json:"key"`
	Attempt string         `json:"attempt"`
	Task    string         `json:"task"`
	Tool    string         `json:"tool"`
	Stdin   map[string]any `json:"stdin"`
}

func (r *mcpRig) reconcileRuns() []reconcileRun {
	r.t.Helper()
	var runs []reconcileRun
	r.jsonLines(r.path("rc.jsonl"), func(line []byte) error {
		var run reconcileRun
		err := json.Unmarshal(line, &run)
		runs = append(runs, run)
		return err
	})
	return runs
}

// reconcileCall makes the same slow call through a new proxy with flags
// and checks that the reconcile command ran once more, told the call's
// key, attempt, task, tool and canonical arguments.
func (r *mcpRig) reconcileCall(t *testing.T, flags []string, slow map[string]any, started countLine) (toolResult, string) {
	t.Helper()
	before := len(r.reconcileRuns())
	steps, stderr := r.client(proxy(append([]string{"--task", "t-crash"}, flags...), r.counting()), call("slow", slow))
	r.reconciledOnce(t, before, slow, started, stderr)
	return steps[0].tool(t), stderr
}

// reconciledOnce checks that the reconcile command ran once after its
// first runs, told the slow call's key, attempt, task, tool and canonical
// arguments.
func (r *mcpRig) reconciledOnce(t *testing.T, runs int, slow map[string]any, started countLine, stderr string) {
	t.Helper()
	all := r.reconcileRuns()
	if len(all) != runs+1 {
		t.Fatalf("the reconcile command ran %d times, want once\n%s", len(all)-runs, stderr)
	}
	want := reconcileRun{Key: *started.Key, Attempt: "1", Task: "t-crash", Tool: "slow", Stdin: slow}
	if got := all[runs]; !reflect.DeepEqual(got, want) {
		t.Fatalf("the reconcile command was told %+v, want %+v", got, want)
	}
}

// TestMCPReconcileUnknown: the server killed mid-call; then a reconcile that hangs past
// --reconcile-timeout, one that exits 2 (both: still unknown, nothing
// sent, the reconcile's result in the tool error), and one that exits 0
// once a later call of the client's has reached the server (the client's
// other messages pass while a reconcile runs): succeeded, its output the
// call's answer, nothing sent, and later calls replayed without asking
// again.
func TestMCPReconcileUnknown(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	rc := r.reconcileScript()
	slow := map[string]any{"until": r.path("release")}
	_, started := r.killMidCall([]string{"--task", "t-crash"}, slow, func(c countLine) []int { return []int{c.Pid} })
	key := *started.Key
	n := len(r.calls(r.count, ""))

	t0 := time.Now()
	res, stderr := r.reconcileCall(t, []string{"--reconcile", "sh " + rc + " hang", "--reconcile-timeout", "500ms"}, slow, started)
	if !res.IsError || res.Meta["com.github.idemkey/outcome"] != "unknown" ||
		!strings.Contains(res.text(), "could not tell: the reconcile command timed out after 500ms") {
		t.Fatalf("a reconcile past its timeout: %+v\n%s", res, stderr)
	}
	if d := time.Since(t0); d > 30*time.Second {
		t.Fatalf("the hanging reconcile held the call for %s", d)
	}
	pid, err := os.ReadFile(r.path("rc.pid"))
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(string(pid)))
	if err != nil {
		t.Fatal(err)
	}
	if alive(child) {
		t.Fatalf("the reconcile's child %d outlived its timeout", child)
	}
	if rec := r.show(key); rec["recorded_state"] != "unknown" || rec["attempt"] != 1.0 {
		t.Fatalf("after a reconcile that timed out: %v", rec)
	}

	res, stderr = r.reconcileCall(t, []string{"--reconcile", "sh " + rc + " 2 '' 'no idea'"}, slow, started)
	if !res.IsError || res.Meta["com.github.idemkey/outcome"] != "unknown" ||
		!strings.Contains(res.text(), "could not tell: the reconcile command exited 2: no idea") ||
		!strings.Contains(stderr, "could not tell: the reconcile command exited 2: no idea") {
		t.Fatalf("a reconcile that exits 2: %+v\n%s", res, stderr)
	}
	if rec := r.show(key); rec["recorded_state"] != "unknown" {
		t.Fatalf("after a reconcile that exits 2: %v", rec)
	}

	runs := len(r.reconcileRuns())
	steps, stderr := r.client(proxy([]string{"--task", "t-crash", "--reconcile-timeout", "20s",
		"--reconcile", "sh " + rc + ` 0 'charge ch_1 exists' 'found it' '"tool":"charge"'`}, r.counting()),
		call("slow", slow, "async", true, "tag", "s"),
		step("waitFile", "path", r.path("rc.jsonl"), "lines", runs+1),
		step("ping"),
		call("charge", map[string]any{"amount": 1, "currency": "EUR"}),
		step("await", "tag", "s"))
	r.reconciledOnce(t, runs, slow, started, stderr)
	if steps[2].Error != "" || steps[3].tool(t).IsError {
		t.Fatalf("the ping and the charge while the reconcile ran: %+v", steps)
	}
	if c := r.calls(r.count, ""); len(c) != n+1 || c[n].Tool != "charge" {
		t.Fatalf("the server got %+v, want the charge alone", c[n:])
	}
	n++
	res = steps[4].tool(t)
	if res.IsError || res.text() != "charge ch_1 exists" || res.Meta["com.github.idemkey/replayed"] != true ||
		!strings.Contains(stderr, "the owner says the effect happened: found it") {
		t.Fatalf("a reconcile that exits 0: %+v\n%s", res, stderr)
	}
	rec := r.show(key)
	if rec["recorded_state"] != "succeeded" || rec["attempt"] != 1.0 ||
		!strings.Contains(rec["reason"].(string), "reconciled as succeeded: the owner says the effect happened: found it") {
		t.Fatalf("after a reconcile that exits 0: %v", rec)
	}
	// Settled: the next call is replayed, the owner not asked again.
	steps, _ = r.client(proxy([]string{"--task", "t-crash", "--reconcile", "sh " + rc + " 1"}, r.counting()), call("slow", slow))
	if res := steps[0].tool(t); res.text() != "charge ch_1 exists" || res.Meta["com.github.idemkey/replayed"] != true {
		t.Fatalf("the call after it was reconciled: %+v", res)
	}
	if runs := r.reconcileRuns(); len(runs) != 3 {
		t.Fatalf("the reconcile ran %d times, want 3", len(runs))
	}
	if c := r.calls(r.count, ""); len(c) != n {
		t.Fatalf("calls were sent to the server: %+v", c[n:])
	}
}

// TestMCPReconcileNotHappened: idemkey itself killed mid-call (its record running, its holder dead);
// the tool's reconcile from the config file (tools.slow.reconcile) exits
// 1: the call is sent again as attempt 2 with the same key.
func TestMCPReconcileNotHappened(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	rc := r.reconcileScript()
	slow := map[string]any{"until": r.path("release")}
	_, started := r.killMidCall([]string{"--task", "t-crash"}, slow, func(c countLine) []int { return []int{c.Ppid, c.Pid} })
	key := *started.Key
	if rec := r.show(key); rec["recorded_state"] != "running" {
		t.Fatalf("after idemkey was killed: %v", rec)
	}
	if err := os.MkdirAll(r.path("config/idemkey"), 0o755); err != nil {
		t.Fatal(err)
	}
	r.write("config/idemkey/config.yaml", "tools:\n  slow:\n    reconcile: sh "+rc+" 1 '' 'no such charge'\n")
	r.write("release", "")
	n := len(r.calls(r.count, ""))
	res, stderr := r.reconcileCall(t, nil, slow, started)
	if res.IsError || !strings.Contains(res.text(), "slow done") ||
		!strings.Contains(stderr, "the owner says the effect did not happen: no such charge; sending it as attempt 2") {
		t.Fatalf("a reconcile that exits 1: %+v\n%s", res, stderr)
	}
	r.sentAgain(t, "a reconcile that exits 1", key, n)
}

// TestMCPLedgerReconcile: idemkey ledger reconcile settles an mcp record: what the command prints
// (a CallToolResult here) is the call's answer from then on.
func TestMCPLedgerReconcile(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	slow := map[string]any{"until": r.path("release")}
	_, started := r.killMidCall([]string{"--task", "t-crash"}, slow, func(c countLine) []int { return []int{c.Pid} })
	key := *started.Key
	n := len(r.calls(r.count, ""))
	result := `{"content":[{"type":"text","text":"charge ch_9"}],"structuredContent":{"id":"ch_9"}}`
	out, errOut, code := r.idemkey("ledger", "reconcile", key, "--reconcile",
		`test "$IDEMKEY_TOOL" = slow && test "$(cat)" = '{"until":"`+r.path("release")+`"}' && echo '`+result+`'`)
	if code != 0 || !strings.Contains(out, key+": the owner says the effect happened: succeeded") {
		t.Fatalf("ledger reconcile: exit %d\n%s%s", code, out, errOut)
	}
	steps, _ := r.client(proxy([]string{"--task", "t-crash"}, r.counting()), call("slow", slow))
	var got map[string]any
	if err := json.Unmarshal(steps[0].Result, &got); err != nil {
		t.Fatal(err)
	}
	if sc, _ := got["structuredContent"].(map[string]any); sc["id"] != "ch_9" || steps[0].tool(t).text() != "charge ch_9" ||
		got["_meta"].(map[string]any)["com.github.idemkey/replayed"] != true {
		t.Fatalf("the call after ledger reconcile: %s", steps[0].Result)
	}
	if c := r.calls(r.count, ""); len(c) != n {
		t.Fatalf("calls were sent to the server: %+v", c[n:])
	}
}

// TestMCPReconcileTwoProxiesPostgres: two proxies on one PostgreSQL ledger, racing one call whose outcome is
// unknown from a barrier, each with a reconcile that takes a second: the
// owner is asked once (the reconcile runs under the key's claim), and
// both answer its output; the server gets nothing.
func TestMCPReconcileTwoProxiesPostgres(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	url := testserver.Postgres(t)
	rc := r.reconcileScript()
	slow := map[string]any{"until": r.path("release"), "note": "race"}
	flags := []string{"--task", "t-crash", "--ledger", url}
	_, started := r.killMidCall(flags, slow, func(c countLine) []int { return []int{c.Pid} })
	n := len(r.calls(r.count, ""))
	var clients []*runningClient
	for i := 0; i < 2; i++ {
		clients = append(clients, r.startClient(mcpPlan{Command: r.bin,
			Args: proxy(append(flags, "--wait", "30s", "--reconcile", "sleep 1; sh "+rc+" 0 'charge ch_7 exists' 'found it'"), r.counting()),
			Steps: []map[string]any{
				step("list"),
				step("waitFile", "path", r.path("go")),
				call("slow", slow),
			}}))
	}
	for _, c := range clients { // both connected, waiting at the barrier
		c.waitSteps(1)
	}
	r.write("go", "go\n")
	for _, c := range clients {
		steps, stderr := c.wait()
		if res := steps[2].tool(t); res.IsError || res.text() != "charge ch_7 exists" || res.Meta[metaReplayed] != true {
			t.Fatalf("a racer got %+v\n%s", res, stderr)
		}
	}
	r.reconciledOnce(t, 0, slow, started, "")
	if c := r.calls(r.count, ""); len(c) != n {
		t.Fatalf("calls were sent to the server: %+v", c[n:])
	}
	out, errOut, code := r.idemkey("ledger", "show", *started.Key, "--json", "--ledger", url)
	if code != 0 || !strings.Contains(out, `"recorded_state":"succeeded"`) {
		t.Fatalf("ledger show: exit %d: %s%s", code, out, errOut)
	}
}

// TestMCPReconcileDuplicated: a reconcile that exits 3 (the effect happened more than once): the
// call is settled as succeeded with a reason that says duplicated, the
// proxy warns, nothing is sent, and the next identical call is replayed.
func TestMCPReconcileDuplicated(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	rc := r.reconcileScript()
	slow := map[string]any{"until": r.path("release")}
	_, started := r.killMidCall([]string{"--task", "t-crash"}, slow, func(c countLine) []int { return []int{c.Pid} })
	key := *started.Key
	n := len(r.calls(r.count, ""))
	res, stderr := r.reconcileCall(t, []string{"--reconcile", "sh " + rc + " 3 'charged twice' 'two charges'"}, slow, started)
	if res.IsError || res.text() != "charged twice" ||
		!strings.Contains(stderr, "warning: reconciled "+key) || !strings.Contains(stderr, "more than once (duplicated)") {
		t.Fatalf("a reconcile that exits 3: %+v\n%s", res, stderr)
	}
	rec := r.show(key)
	if rec["recorded_state"] != "succeeded" || !strings.Contains(rec["reason"].(string), "duplicated") {
		t.Fatalf("after a reconcile that exits 3: %v", rec)
	}
	steps, _ := r.client(proxy([]string{"--task", "t-crash", "--reconcile", "sh " + rc + " 1"}, r.counting()), call("slow", slow))
	if res := steps[0].tool(t); res.text() != "charged twice" || res.Meta["com.github.idemkey/replayed"] != true {
		t.Fatalf("the call after a duplicated reconcile: %+v", res)
	}
	if c := r.calls(r.count, ""); len(c) != n {
		t.Fatalf("calls were sent to the server: %+v", c[n:])
	}
}
