package mcp_test

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// rawSession is idemkey mcp driven line by line, for what an SDK client
// never sends: lines that are not JSON, batches.
type rawSession struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
	errb  strings.Builder
}

func (r *mcpRig) raw(args ...string) *rawSession {
	r.t.Helper()
	return r.rawCommand(append([]string{r.bin}, args...)...)
}

// rawCommand is raw for another command (a server without idemkey).
func (r *mcpRig) rawCommand(argv ...string) *rawSession {
	r.t.Helper()
	s := &rawSession{t: r.t, cmd: exec.Command(argv[0], argv[1:]...), lines: make(chan string, 100)}
	s.cmd.Dir, s.cmd.Env = r.dir, r.env
	s.cmd.Stderr = &s.errb
	var err error
	if s.in, err = s.cmd.StdinPipe(); err != nil {
		r.t.Fatal(err)
	}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	r.t.Cleanup(func() { s.cmd.Process.Kill(); s.cmd.Wait() })
	return s
}

func (s *rawSession) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatal(err)
	}
}

// recv is the next line idemkey writes.
func (s *rawSession) recv() string {
	s.t.Helper()
	select {
	case l, ok := <-s.lines:
		if !ok {
			s.t.Fatalf("idemkey closed its output; stderr:\n%s", s.errb.String())
		}
		return l
	case <-time.After(30 * time.Second):
		s.t.Fatalf("no line from idemkey; stderr:\n%s", s.errb.String())
	}
	return ""
}

// none checks that idemkey writes nothing for a while.
func (s *rawSession) none() {
	s.t.Helper()
	select {
	case l := <-s.lines:
		s.t.Fatalf("unexpected line %s", l)
	case <-time.After(300 * time.Millisecond):
	}
}

func (s *rawSession) initialize(version string) {
	s.t.Helper()
	s.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if l := s.recv(); !strings.Contains(l, `"protocolVersion":"`+version+`"`) {
		s.t.Fatalf("initialize: %s", l)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// TestMCPMalformedMessages: malformed input from either side: a line of the client's that is not
// JSON is answered with a parse error (id null) and not sent on; a line of
// the server's that is not JSON is passed on as it is; a message the
// server cut off when it died is never passed on in part.
func TestMCPMalformedMessages(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	s := r.raw(proxy([]string{"--task", "t-raw"}, []string{r.node, r.script("raw-server.mjs")})...)
	s.initialize("2025-11-25")
	s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"charge","arguments":{"a":1},}}`)
	if l := s.recv(); !strings.Contains(l, `"id":null`) || !strings.Contains(l, `"code":-32700`) {
		t.Fatalf("a line that is not JSON: %s", l)
	}
	s.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if l := s.recv(); l != `{"jsonrpc":"2.0","id":2,"result":{}}` {
		t.Fatalf("ping after the bad line: %s", l)
	}
	if c := r.calls(r.count, ""); len(c) != 0 {
		t.Fatalf("the bad line reached the server: %+v", c)
	}
	s.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"garbage","arguments":{}}}`)
	if l := s.recv(); l != "this is not json {" {
		t.Fatalf("the server's bad line: %q, want it passed on as it is", l)
	}
	if l := s.recv(); !strings.Contains(l, `"id":3`) || !strings.Contains(l, "garbage call 1") {
		t.Fatalf("after the server's bad line: %s", l)
	}
	s.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"cut","arguments":{}}}`)
	l := s.recv()
	var res struct {
		ID     int        `json:"id"`
		Result toolResult `json:"result"`
	}
	if err := json.Unmarshal([]byte(l), &res); err != nil || res.ID != 4 || !res.Result.IsError || !strings.Contains(res.Result.text(), "unknown") {
		t.Fatalf("the call whose answer was cut off: %s, want idemkey's tool error (outcome unknown)", l)
	}
	if l, ok := <-s.lines; ok {
		t.Fatalf("after the server died idemkey wrote %q", l)
	}
	s.cmd.Wait()
	if code := s.cmd.ProcessState.ExitCode(); code != 3 {
		t.Fatalf("idemkey exited %d, want the server's 3; stderr:\n%s", code, s.errb.String())
	}
}

// TestMCPBatches: JSON-RPC batches: in MCP 2025-03-26 their calls are keyed and made once
// like any other (idemkey's own answers in a batch of their own); in a
// revision without batches (2025-06-18 removed them) a batch is an Invalid
// Request, never sent on.
func TestMCPBatches(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	s := r.raw(proxy([]string{"--task", "t-batch"}, []string{r.node, r.script("raw-server.mjs")})...)
	s.initialize("2025-03-26")
	batch := `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"charge","arguments":{"n":1}}},{"jsonrpc":"2.0","id":2,"method":"ping"}]`
	s.send(batch)
	var got []map[string]any
	if err := json.Unmarshal([]byte(s.recv()), &got); err != nil || len(got) != 2 {
		t.Fatalf("the server's answer to the batch: %v %v", got, err)
	}
	c := r.calls(r.count, "charge")
	want := r.key("--task", "t-batch", "--tool", "charge", r.write("n.json", `{"n":1}`))
	if len(c) != 1 || *c[0].Key != want {
		t.Fatalf("the batch's call reached the server as %+v, want key %s", c, want)
	}
	s.send(strings.Replace(batch, `"id":1`, `"id":3`, 1))
	local, server := s.recv(), s.recv()
	if !strings.HasPrefix(local, `[{"jsonrpc":"2.0","id":3,"result":`) || !strings.Contains(local, `"com.github.idemkey/replayed":true`) {
		t.Fatalf("idemkey's answers in the batch: %s", local)
	}
	if server != `[{"jsonrpc":"2.0","id":2,"result":{}}]` {
		t.Fatalf("the server's answers in the batch: %s", server)
	}
	if c := r.calls(r.count, "charge"); len(c) != 1 {
		t.Fatalf("the repeated call in a batch ran again: %+v", c)
	}

	s2 := r.raw(proxy([]string{"--task", "t-batch"}, []string{r.node, r.script("raw-server.mjs")})...)
	s2.initialize("2025-06-18")
	s2.send(`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"charge","arguments":{"n":2}}}]`)
	if l := s2.recv(); !strings.Contains(l, `"id":null`) || !strings.Contains(l, `"code":-32600`) {
		t.Fatalf("a batch in 2025-06-18: %s, want Invalid Request", l)
	}
	s2.none()
	if c := r.calls(r.count, "charge"); len(c) != 1 {
		t.Fatalf("a batch in 2025-06-18 reached the server: %+v", c)
	}
}

// TestMCPReconnectAndTaskMeta: a client that reconnects (a new idemkey, a new server) and calls again
// gets the first result; the task id from params._meta (--task-meta) keeps
// two tasks' identical calls apart; a call without it is refused, unsent.
func TestMCPReconnectAndTaskMeta(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	charge := map[string]any{"amount": 3, "currency": "usd"}
	meta := func(task string) map[string]any { return map[string]any{"com.example/task": task} }
	steps, stderr := r.client(proxy([]string{"--task-meta", "com.example/task"}, r.counting()),
		call("charge", charge, "meta", meta("task-a")),
		call("charge", charge, "meta", meta("task-b")),
		step("reconnect"),
		call("charge", charge, "meta", meta("task-a")),
		call("charge", charge, "meta", meta("task-b")),
		call("charge", charge),
	)
	a, b := steps[0].tool(t), steps[1].tool(t)
	if a.text() == b.text() {
		t.Fatalf("two tasks' calls got one result: %s", a.text())
	}
	if s := steps[3].tool(t); s.Meta[metaReplayed] != true || s.text() != a.text() {
		t.Fatalf("task-a after the reconnect: %+v", s)
	}
	if s := steps[4].tool(t); s.Meta[metaReplayed] != true || s.text() != b.text() {
		t.Fatalf("task-b after the reconnect: %+v", s)
	}
	if steps[5].Error == "" || !strings.Contains(steps[5].Error, "com.example/task") {
		t.Fatalf("a call without its task id: %+v", steps[5])
	}
	args := r.write("c.json", `{"amount":3,"currency":"usd"}`)
	c := r.calls(r.count, "charge")
	if len(c) != 2 || *c[0].Key != r.key("--task", "task-a", "--tool", "charge", args) || *c[1].Key != r.key("--task", "task-b", "--tool", "charge", args) {
		t.Fatalf("the server ran %+v\n%s", c, stderr)
	}
}

// TestMCPTransparentBytes: what idemkey does not handle it passes on byte for byte, in order: the
// same session with the counting server gives the same lines through
// idemkey as without it (here the tool is passed, --pass notify).
func TestMCPTransparentBytes(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	session := func(argv ...string) []string {
		s := r.rawCommand(argv...)
		s.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{}},"clientInfo":{"name":"raw","version":"1"},"_meta":{"x-unknown":[1.0,"\u00e9"]}}}`)
		lines := []string{s.recv()}
		s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
		lines = append(lines, s.recv())
		s.send(`{"jsonrpc":"2.0","id":2.0,"method":"tools/call","params":{"name":"notify","arguments":{},"_meta":{"progressToken":"p-1"}}}`)
		for i := 0; i < 3; i++ {
			lines = append(lines, s.recv())
		}
		// One at a time: the server answers two requests in flight in
		// the order it finishes them (a ping's handler is asynchronous,
		// an unknown method's error is not), whoever sends them.
		s.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
		lines = append(lines, s.recv())
		s.send(`{"jsonrpc":"2.0","id":4,"method":"no/such/method","params":{"a":1}}`)
		return append(lines, s.recv())
	}
	direct := session(r.counting()...)
	through := session(append([]string{r.bin}, proxy([]string{"--task", "t-bytes", "--pass", "notify"}, r.counting())...)...)
	if strings.Join(direct, "\n") != strings.Join(through, "\n") {
		t.Fatalf("through idemkey:\n%s\nwithout it:\n%s", strings.Join(through, "\n"), strings.Join(direct, "\n"))
	}
	if !strings.Contains(direct[3], "notifications/progress") || !strings.Contains(direct[2], "notifications/message") {
		t.Fatalf("the session: %s", strings.Join(direct, "\n"))
	}
}
