package mcp_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemkey/idemkey/derive/ledger/testserver"
)

// TestMCPEverythingServer: server-everything exercises every protocol feature: its progress
// notifications, its sampling request (a server-to-client request in the
// middle of a held call), its resources and the client's roots pass
// through unchanged; the write that sampled is made once (its repeat asks
// for no second sample).
func TestMCPEverythingServer(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	plan := mcpPlan{Command: r.bin, Sampling: true, Roots: true,
		Args: proxy([]string{"--task", "t-every"}, []string{r.node, r.npmBin("server-everything", "dist/index.js"), "stdio"}),
		Steps: []map[string]any{
			step("list"),
			call("trigger-long-running-operation", map[string]any{"duration": 0.2, "steps": 2}, "progress", true),
			call("trigger-sampling-request", map[string]any{"prompt": "hi", "maxTokens": 5}),
			step("notifications"),
			call("trigger-sampling-request", map[string]any{"prompt": "hi", "maxTokens": 5}),
			step("notifications"),
			step("resources"),
			call("get-roots-list", map[string]any{}),
			call("echo", map[string]any{"message": "x"}),
			step("ping"),
		}}
	steps, stderr := r.startClient(plan).wait()
	var notes1, notes2 []map[string]any
	json.Unmarshal(steps[3].Result, &notes1)
	json.Unmarshal(steps[5].Result, &notes2)
	progress, sampling := 0, 0
	for _, n := range notes1 {
		switch n["method"] {
		case "notifications/progress":
			progress++
		case "sampling/createMessage":
			sampling++
		}
	}
	// The SDK's client drops the last progress, which comes with the
	// answer (without idemkey too).
	if progress < 1 || sampling != 1 {
		t.Fatalf("progress %d, sampling requests %d (want 1 or 2, and 1): %v\n%s", progress, sampling, notes1, stderr)
	}
	first, again := steps[2].tool(t), steps[4].tool(t)
	if !strings.Contains(first.text(), "sampled: ") || again.Meta[metaReplayed] != true || again.text() != first.text() {
		t.Fatalf("the sampling write: %+v, then %+v", first, again)
	}
	for _, n := range notes2 {
		if n["method"] == "sampling/createMessage" {
			t.Fatalf("the replay asked for a sample: %v", notes2)
		}
	}
	var res struct {
		Count int `json:"count"`
		Read  struct {
			Contents []map[string]any `json:"contents"`
		} `json:"read"`
	}
	if err := json.Unmarshal(steps[6].Result, &res); err != nil || res.Count == 0 || len(res.Read.Contents) == 0 {
		t.Fatalf("resources: %s (%v)", steps[6].Result, err)
	}
	if s := steps[7].tool(t); !strings.Contains(s.text(), "file:///tmp") {
		t.Fatalf("get-roots-list (the server asks the client for its roots): %+v", s)
	}
	if s := steps[8].tool(t); s.text() != "Echo: x" {
		t.Fatalf("echo: %+v", s)
	}
	if steps[9].Error != "" {
		t.Fatalf("ping: %s", steps[9].Error)
	}
}

// TestMCPLogReadByDrift: --log writes one record per tools/call that idemkey drift reads without
// options: here a write whose trace id the model regenerates on every
// retry is found drifting, with the --omit that gives it one key.
func TestMCPLogReadByDrift(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	log := r.path("calls.log")
	var steps []map[string]any
	for i := 0; i < 4; i++ {
		for try := 0; try < 3; try++ {
			steps = append(steps, call("charge", map[string]any{
				"amount": 100 + i, "currency": "eur",
				"trace_id": fmt.Sprintf("4bf92f3577b34da6a3ce929d0e0e%04d", i*10+try),
			}))
		}
	}
	steps = append(steps, call("lookup", map[string]any{"q": "x"}))
	got, _ := r.client(proxy([]string{"--task", "t-log", "--log", log}, r.counting()), append([]map[string]any{step("list")}, steps...)...)
	got = got[1:]
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != len(got) {
		t.Fatalf("%d log records for %d calls:\n%s", len(lines), len(got), b)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"time", "task", "tool", "args", "request_id", "key", "attempt", "action"} {
		if _, ok := rec[k]; !ok {
			t.Fatalf("the log record has no %q: %s", k, lines[0])
		}
	}
	if rec["action"] != "forwarded" || !strings.Contains(lines[len(lines)-1], `"action":"passed"`) {
		t.Fatalf("actions: %s … %s", lines[0], lines[len(lines)-1])
	}
	out, errOut, code := r.idemkey("drift", log)
	if code != 1 || !strings.Contains(out, "tool charge") || !strings.Contains(out, "--omit /trace_id") {
		t.Fatalf("idemkey drift: exit %d\n%s%s", code, out, errOut)
	}
}

// TestMCPStreamableHTTP: over Streamable HTTP (the counting server on the SDK's transport, its
// answers as event streams or as JSON): a repeated write runs once, the
// server's notifications pass, the session's key in _meta is idemkey
// key's; kill -9 of the server mid-call leaves the call unknown.
func TestMCPStreamableHTTP(t *testing.T) {
	t.Parallel()
	eachHTTPMode(t, func(t *testing.T, r *mcpRig, mode, url string, srv *exec.Cmd) {
		charge := map[string]any{"amount": 7, "currency": "chf"}
		steps, stderr := r.client([]string{"mcp", "--task", "t-http", "--url", url, "-H", "X-Test: yes"},
			step("list"),
			call("charge", charge),
			call("charge", charge),
			call("notify", map[string]any{}, "progress", true),
			step("notifications"),
		)
		first, again := steps[1].tool(t), steps[2].tool(t)
		if again.Meta[metaReplayed] != true || again.text() != first.text() {
			t.Fatalf("repeated charge over HTTP: %+v\n%s", again, stderr)
		}
		c := r.calls(r.count, "charge")
		if want := r.key("--task", "t-http", "--tool", "charge", r.write("c.json", `{"amount":7,"currency":"chf"}`)); len(c) != 1 || *c[0].Key != want {
			t.Fatalf("the server ran %+v, want once with %s", c, want)
		}
		if mode == "json" {
			return // a JSON answer carries no notifications
		}
		var notes []map[string]any
		json.Unmarshal(steps[4].Result, &notes)
		methods := fmt.Sprint(notes)
		if !strings.Contains(methods, "notifications/message") || !strings.Contains(methods, "notifications/progress") {
			t.Fatalf("the server's notifications: %v", notes)
		}
		c2 := r.startClient(mcpPlan{Command: r.bin, Args: []string{"mcp", "--task", "t-http", "--url", url},
			Steps: []map[string]any{call("slow", map[string]any{"until": r.path("release")})}})
		r.waitCalls(len(r.calls(r.count, "")) + 1)
		srv.Process.Signal(syscall.SIGKILL)
		steps, _ = c2.wait()
		if s := steps[0].tool(t); !s.IsError || !strings.Contains(s.text(), "unknown") {
			t.Fatalf("the call whose HTTP server died: %+v", s)
		}
	})
}

// TestMCPLegacySSE: a server of MCP 2024-11-05's HTTP+SSE transport (the counting server
// on the SDK's SSEServerTransport: a POST of initialize to its URL gets
// 405): idemkey falls back to it, its GET stream and endpoint, as the
// later revisions tell a client to; a repeated write runs once with
// idemkey key's key, notifications pass; kill -9 of the server mid-call
// leaves the call unknown and ends the session.
func TestMCPLegacySSE(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	url, srv := r.httpServer("--sse")
	charge := map[string]any{"amount": 5, "currency": "sek"}
	steps, stderr := r.client([]string{"mcp", "--task", "t-sse", "--url", url},
		step("list"),
		call("charge", charge),
		call("charge", charge),
		call("notify", map[string]any{}, "progress", true),
		step("notifications"),
	)
	if !strings.Contains(stderr, "the server speaks MCP's 2024-11-05 HTTP+SSE transport (initialize POSTed to the URL: HTTP 405)") {
		t.Fatalf("stderr does not say which transport:\n%s", stderr)
	}
	if first, again := steps[1].tool(t), steps[2].tool(t); again.Meta[metaReplayed] != true || again.text() != first.text() {
		t.Fatalf("repeated charge over HTTP+SSE: %+v\n%s", again, stderr)
	}
	c := r.calls(r.count, "charge")
	if want := r.key("--task", "t-sse", "--tool", "charge", r.write("c.json", `{"amount":5,"currency":"sek"}`)); len(c) != 1 || *c[0].Key != want {
		t.Fatalf("the server ran %+v, want once with %s", c, want)
	}
	if methods := string(steps[4].Result); !strings.Contains(methods, "notifications/message") || !strings.Contains(methods, "notifications/progress") {
		t.Fatalf("the server's notifications: %s", methods)
	}
	c2 := r.startClient(mcpPlan{Command: r.bin, Args: []string{"mcp", "--task", "t-sse", "--url", url},
		Steps: []map[string]any{call("slow", map[string]any{"until": r.path("release")})}})
	started := r.waitCalls(len(r.calls(r.count, "")) + 1)
	srv.Process.Signal(syscall.SIGKILL)
	steps, stderr = c2.wait()
	if s := steps[0].tool(t); !s.IsError || !strings.Contains(s.text(), "HTTP+SSE event stream ended") {
		t.Fatalf("the call whose HTTP+SSE server died: %+v", s)
	}
	if !strings.Contains(stderr, "idemkey: the server at "+url+" ended the session before the client closed it (the server's output ended: the server's HTTP+SSE event stream ended") {
		t.Fatalf("stderr after the kill:\n%s", stderr)
	}
	if rec := r.show(*started[len(started)-1].Key); rec["recorded_state"] != "unknown" {
		t.Fatalf("after the kill: %v", rec)
	}
	r.legacyServerGoneExit()
}

// legacyServerGoneExit: idemkey's exit when a 2024-11-05 server's event
// stream ends first, with a client (a pipe) that stays: 1, every line it
// wrote a whole JSON-RPC message.
func (r *mcpRig) legacyServerGoneExit() {
	t := r.t
	url, srv := r.httpServer("--sse")
	c := exec.Command(r.bin, "mcp", "--task", "t-sse", "--url", url)
	c.Env = r.env
	in, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	n := len(r.calls(r.count, ""))
	fmt.Fprintf(in, "%s\n%s\n%s\n", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{"until":"`+r.path("release")+`","note":"pipe"}}}`)
	r.waitCalls(n + 1)
	srv.Process.Signal(syscall.SIGKILL)
	err = c.Wait()
	if c.ProcessState.ExitCode() != 1 {
		t.Fatalf("idemkey mcp after its HTTP+SSE server died: %v\n%s", err, errOut.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("stdout line %q is not JSON", l)
		}
	}
	if len(lines) != 2 || !strings.Contains(lines[1], `"id":2`) || !strings.Contains(lines[1], "outcome of this call is unknown") {
		t.Fatalf("stdout: %s", out.String())
	}
}

// eachHTTPMode runs f with a rig and the counting server over Streamable
// HTTP, answering with event streams ("sse") and with JSON ("json").
func eachHTTPMode(t *testing.T, f func(t *testing.T, r *mcpRig, mode, url string, srv *exec.Cmd)) {
	for _, mode := range []string{"sse", "json"} {
		t.Run(mode, func(t *testing.T) {
			r := newMCPRig(t)
			extra := []string{"--http"}
			if mode == "json" {
				extra = append(extra, "--json")
			}
			url, srv := r.httpServer(extra...)
			f(t, r, mode, url, srv)
		})
	}
}

// httpServer starts the counting server over Streamable HTTP and returns
// its URL.
func (r *mcpRig) httpServer(extra ...string) (string, *exec.Cmd) {
	r.t.Helper()
	urlFile := r.path(fmt.Sprintf("url-%d", time.Now().UnixNano()))
	c := exec.Command(r.node, append([]string{r.script("counting-server.mjs")}, extra...)...)
	c.Env = append(append([]string{}, r.env...), "URL_FILE="+urlFile)
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(urlFile); err == nil && len(b) > 0 {
			return string(b), c
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.t.Fatal("the HTTP server did not start")
	return "", nil
}

// TestMCPTwoProxiesRacePostgres: two proxies, each with its own client and server, on one PostgreSQL
// ledger, racing one call from a barrier: one effect; the other waits and
// answers the first's result.
func TestMCPTwoProxiesRacePostgres(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	url := testserver.Postgres(t)
	barrier := r.path("go")
	var clients []*runningClient
	for i := 0; i < 2; i++ {
		clients = append(clients, r.startClient(mcpPlan{Command: r.bin,
			Args: proxy([]string{"--task", "t-race", "--ledger", url, "--wait", "30s"}, r.counting()),
			Steps: []map[string]any{
				step("list"),
				step("waitFile", "path", barrier),
				call("slow", map[string]any{"ms": 300, "note": "race"}),
			}}))
	}
	for _, c := range clients { // both connected, waiting at the barrier
		c.waitSteps(1)
	}
	r.write("go", "go\n")
	var texts []string
	replayed := 0
	for _, c := range clients {
		steps, stderr := c.wait()
		res := steps[2].tool(t)
		if res.IsError {
			t.Fatalf("a racer got %+v\n%s", res, stderr)
		}
		if res.Meta[metaReplayed] == true {
			replayed++
		}
		texts = append(texts, res.text())
	}
	if c := r.calls(r.count, "slow"); len(c) != 2 || c[0].Phase != "start" || c[1].Phase != "done" {
		t.Fatalf("the server counted %+v: want one call (its start and end)", c)
	}
	if replayed != 1 || texts[0] != texts[1] {
		t.Fatalf("results %q, %d replayed: want one result, once replayed", texts, replayed)
	}
}
