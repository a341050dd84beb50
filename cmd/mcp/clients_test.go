package mcp_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// metaAttempt is the _meta member of a keyed call's attempt.
const metaAttempt = "com.github.idemkey/attempt"

// TestMCPTaskPerSession: a client started from a configuration file sets no task id and puts the
// server's command right after idemkey's flags, with flags of its own:
// each session is a task of its own (a random id, on stderr and in the
// log), a repeat in the session is answered from the ledger, a new
// session's identical write runs again. The first answer carries the key
// and the attempt as the replay does; --replay-note ends the replay with
// one text item after the server's own content.
func TestMCPTaskPerSession(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	log := r.path("calls.log")
	// No --: "--task x" after the server's command is the server's, not
	// idemkey's (the counting server ignores it).
	args := append([]string{"mcp", "--log", log, "--replay-note"}, r.counting("--task", "not-idemkeys")...)
	charge := map[string]any{"amount": 5, "currency": "eur"}
	steps, stderr := r.client(args,
		call("charge", charge),
		call("charge", charge),
		step("reconnect"),
		call("charge", charge),
	)
	first, again, next := steps[0].tool(t), steps[1].tool(t), steps[3].tool(t)
	key := first.Meta[metaKey]
	if key == nil || first.Meta[metaAttempt] != 1.0 || first.Meta[metaReplayed] != nil {
		t.Fatalf("the first answer's _meta: %v", first.Meta)
	}
	if again.Meta[metaReplayed] != true || again.Meta[metaKey] != key || again.Meta[metaAttempt] != 1.0 {
		t.Fatalf("the repeat: %+v", again)
	}
	if len(again.Content) != len(first.Content)+1 || again.Content[0] != first.Content[0] ||
		!strings.Contains(again.Content[len(again.Content)-1].Text, "recorded result of an identical earlier call") {
		t.Fatalf("--replay-note: the replay's content %+v, the first's %+v", again.Content, first.Content)
	}
	if next.Meta[metaReplayed] != nil || next.Meta[metaKey] == key || next.Meta[metaKey] == nil {
		t.Fatalf("the next session's identical write: %+v (the first session's key %v)", next, key)
	}
	c := r.calls(r.count, "charge")
	if len(c) != 2 || *c[0].Key != key || *c[1].Key != next.Meta[metaKey] {
		t.Fatalf("the server ran %+v\n%s", c, stderr)
	}
	tasks := regexp.MustCompile(`this session's writes are made once under task (session-[0-9a-f]{32})`).FindAllStringSubmatch(stderr, -1)
	if len(tasks) != 2 || tasks[0][1] == tasks[1][1] {
		t.Fatalf("want two sessions' task ids on stderr:\n%s", stderr)
	}
	if want := r.key("--task", tasks[0][1], "--tool", "charge", r.write("c.json", `{"amount":5,"currency":"eur"}`)); key != want {
		t.Fatalf("the first session's key %v, idemkey key --task %s says %s", key, tasks[0][1], want)
	}
	var logged []string
	r.jsonLines(log, func(line []byte) error {
		var rec struct{ Task, Action string }
		err := json.Unmarshal(line, &rec)
		logged = append(logged, rec.Task+" "+rec.Action)
		return err
	})
	want := []string{tasks[0][1] + " forwarded", tasks[0][1] + " replayed", tasks[1][1] + " forwarded"}
	if strings.Join(logged, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the log: %q, want %q", logged, want)
	}
}

// TestMCPReplayWithoutNote: without --replay-note a replay is the first answer, _meta aside: its
// content is the server's, nothing added, and it is at most 91 bytes
// longer.
func TestMCPReplayWithoutNote(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	charge := map[string]any{"amount": 1}
	steps, _ := r.client(append([]string{"mcp"}, r.counting()...), call("charge", charge), call("charge", charge))
	first, again := steps[0].tool(t), steps[1].tool(t)
	if again.Meta[metaReplayed] != true || len(again.Content) != len(first.Content) || again.text() != first.text() {
		t.Fatalf("the replay %+v, the first %+v", again, first)
	}
	// The margin the README states: replayed and recorded-at.
	if d := len(steps[1].Result) - len(steps[0].Result); d > 91 {
		t.Fatalf("the replay is %d bytes longer than the first answer:\n%s\n%s", d, steps[0].Result, steps[1].Result)
	}
}

// TestMCPIdenticalCallWaits: a client that sends the same call again while the first is still
// running (its own retry of a slow call) gets the first one's result: by
// default idemkey waits for it, and the server runs it once.
func TestMCPIdenticalCallWaits(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	slow := map[string]any{"ms": 1500}
	steps, stderr := r.client(append([]string{"mcp", "--task", "t-wait"}, r.counting()...),
		call("slow", slow, "async", true, "tag", "a"),
		step("waitFile", "path", r.count, "lines", 1),
		call("slow", slow, "async", true, "tag", "b"),
		step("await", "tag", "a"),
		step("await", "tag", "b"),
	)
	a, b := steps[3].tool(t), steps[4].tool(t)
	if a.IsError || b.IsError || a.text() != b.text() || b.Meta[metaKey] != a.Meta[metaKey] {
		t.Fatalf("the first %+v, the retry %+v\n%s", a, b, stderr)
	}
	if c := r.calls(r.count, "slow"); len(c) != 2 || c[0].Phase != "start" || c[1].Phase != "done" {
		t.Fatalf("the server ran %+v", c)
	}
}

// TestMCPQuickStartEditFile: the README's MCP quick start, as written: its desktop configuration
// (read from the README: no task id, --replay-note, the server's command
// without --) in a session that calls edit_file twice appends one line and
// tells the model the second is a replay; its console session, run twice
// through idemkey with --task, appends one line, and straight to the
// server two.
func TestMCPQuickStartEditFile(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	readme, err := os.ReadFile(filepath.Join(r.repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	conf := regexp.MustCompile("(?s)```json\n(\\{\"mcpServers\".*?)\n```").FindSubmatch(readme)
	if conf == nil {
		t.Fatal("no mcpServers configuration in the README")
	}
	var desktop struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(conf[1], &desktop); err != nil {
		t.Fatalf("the README's configuration: %v\n%s", err, conf[1])
	}
	notes := r.path("notes")
	os.Mkdir(notes, 0o755)
	todo := filepath.Join(notes, "todo.txt")
	fs := r.npmBin("server-filesystem", "dist/index.js")
	var args []string
	for _, a := range desktop.MCPServers["notes"].Args {
		switch a {
		case "mcp-server-filesystem": // installed, in the README
			args = append(args, r.node, fs)
		case "/home/me/notes":
			args = append(args, notes)
		default:
			args = append(args, a)
		}
	}
	if desktop.MCPServers["notes"].Command != "idemkey" || len(args) < 3 {
		t.Fatalf("the README's configuration: %s", conf[1])
	}
	appendLine := map[string]any{"path": todo, "edits": []map[string]any{{"oldText": "first", "newText": "first\nsecond"}}}
	r.write("notes/todo.txt", "first\n")
	steps, stderr := r.client(args, call("edit_file", appendLine), call("edit_file", appendLine))
	again := steps[1].tool(t)
	if b, _ := os.ReadFile(todo); string(b) != "first\nsecond\n" || again.Meta[metaReplayed] != true ||
		!strings.Contains(again.Content[len(again.Content)-1].Text, "change an argument") {
		t.Fatalf("the desktop configuration: the file %q, the repeat %+v\n%s", b, again, stderr)
	}

	session, err := os.ReadFile(filepath.Join(r.repo, "testdata/mcp/edit-session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	session = bytes.ReplaceAll(session, []byte("/tmp/notes"), []byte(notes))
	for _, through := range [][]string{{r.bin, "mcp", "--task", "t-42"}, nil} {
		r.write("notes/todo.txt", "first\n")
		for i := 0; i < 2; i++ {
			argv := append(append([]string{}, through...), r.node, fs, notes)
			c := exec.Command(argv[0], argv[1:]...)
			c.Dir, c.Env, c.Stdin = r.dir, r.env, bytes.NewReader(session)
			if out, err := c.CombinedOutput(); err != nil {
				t.Fatalf("%v: %v\n%s", argv, err, out)
			}
		}
		want := "first\nsecond\n"
		if through == nil {
			want = "first\nsecond\nsecond\n"
		}
		if b, _ := os.ReadFile(todo); string(b) != want {
			t.Fatalf("the console session twice through %v: %q, want %q", through, b, want)
		}
	}
}

// everythingHTTP starts server-everything over Streamable HTTP on a free
// loopback port and returns its URL.
func (r *mcpRig) everythingHTTP() string {
	r.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		r.t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	c := exec.Command(r.node, r.npmBin("server-everything", "dist/index.js"), "streamableHttp")
	c.Env = append(append([]string{}, r.env...), fmt.Sprintf("PORT=%d", port))
	var errOut syncBuffer
	c.Stdout, c.Stderr = &errOut, &errOut
	if err := c.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(errOut.String(), "listening on port") {
			return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
		}
	}
	r.t.Fatalf("server-everything did not start:\n%s", errOut.String())
	return ""
}

// syncBuffer is a bytes.Buffer for a child's output read while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestMCPProgressBeforeAnswerHTTP: through --url (server-everything over Streamable HTTP, the TypeScript
// SDK's client on idemkey's stdio) every progress notification a call's
// stream carries before its answer reaches the client's progress handler,
// the last one too.
func TestMCPProgressBeforeAnswerHTTP(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	url := r.everythingHTTP()
	op := map[string]any{"duration": 0.3, "steps": 3}
	steps, stderr := r.client([]string{"mcp", "--task", "t-progress", "--url", url},
		call("trigger-long-running-operation", op, "progress", true),
		call("trigger-long-running-operation", op, "progress", true),
		step("notifications"),
	)
	var notes []map[string]any
	if err := json.Unmarshal(steps[2].Result, &notes); err != nil {
		t.Fatal(err)
	}
	progress := 0
	for _, n := range notes {
		if n["method"] == "notifications/progress" {
			progress++
		}
	}
	if progress != 6 {
		t.Fatalf("%d progress notifications of 2 calls of 3 steps reached the client: %v\n%s", progress, notes, stderr)
	}
}

// TestMCPStopsServerGroup: a server started through a wrapper whose child holds the server's
// output after the server exited (sh -c, npx): when the client goes,
// idemkey closes the server's input, waits, then stops the server's whole
// process group, and exits; it is not kept alive by the child.
func TestMCPStopsServerGroup(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	pidFile := r.path("child.pid")
	script := fmt.Sprintf("sleep 600 & echo $! > %s; exec %s %s", pidFile, r.node, r.script("counting-server.mjs"))
	c := exec.Command(r.bin, "mcp", "--task", "t-group", "sh", "-c", script)
	c.Dir, c.Env = r.dir, r.env
	c.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n")
	var out, errOut syncBuffer
	c.Stdout, c.Stderr = &out, &errOut
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("idemkey: %v\n%s", err, errOut.String())
		}
	case <-time.After(60 * time.Second):
		c.Process.Kill()
		t.Fatalf("idemkey did not exit after its client went: the server's child holds its output\n%s", errOut.String())
	}
	if !strings.Contains(out.String(), `"protocolVersion"`) {
		t.Fatalf("the initialize answer: %q", out.String())
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	for deadline := time.Now().Add(10 * time.Second); alive(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the server's child %d outlived the session", pid)
		}
	}
}
