package mcp_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd"
	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/derive/ledger/testserver"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the tests run idemkey: the test binary, called by the
// name idemkey (a symlink in each rig), is idemkey; its tests wait on
// clients and servers more than they compute (testserver.WaitBound).
func TestMain(m *testing.M) {
	testserver.WaitBound()
	testscript.Main(stopsHost{m}, map[string]func(){"idemkey": func() { os.Exit(cmd.Run()) }})
}

// stopsHost runs the tests, then ends the client host (stopHost).
type stopsHost struct{ m *testing.M }

// Run runs the tests, then stops the client host.
func (s stopsHost) Run() int {
	code := s.m.Run()
	stopHost()
	return code
}

// hermeticEnv is env without the caller's idemkey settings (IDEMKEY_*,
// but the variables that steer the tests' own servers) and without the
// names given: a test sets what it wants.
func hermeticEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		drop := strings.HasPrefix(name, "IDEMKEY_") && name != "IDEMKEY_PG_BINDIR" && name != "IDEMKEY_REDIS_SERVER"
		for _, n := range names {
			drop = drop || name == n
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}

// The MCP tests drive idemkey mcp with real MCP software: the official
// TypeScript SDK's client (testdata/mcp/client.mjs), the reference servers
// and the project's own counting server (testdata/mcp/), installed by
// scripts/services.sh into testdata/npm/mcp. Without node or those
// packages they skip, except under CI=true, where they fail.

// mcpRig is a directory with an idemkey executable, a SQLite ledger, a
// file where the counting server counts its calls, and node.
type mcpRig struct {
	t      *testing.T
	dir    string
	bin    string
	ledger string
	count  string
	env    []string
	node   string
	repo   string
}

func newMCPRig(t *testing.T) *mcpRig {
	t.Helper()
	node, repo := clitest.NodeMCP(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "idemkey") // the test binary runs as idemkey by that name
	exe, err := os.Executable()
	if err == nil {
		err = os.Symlink(exe, bin)
	}
	if err != nil {
		t.Fatal(err)
	}
	r := &mcpRig{t: t, dir: dir, bin: bin, ledger: filepath.Join(dir, "state", "ledger.db"),
		count: filepath.Join(dir, "calls.jsonl"), node: node, repo: repo}
	r.env = append(hermeticEnv(os.Environ(), "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "MEMORY_FILE_PATH", "COUNT_FILE", "HOME"),
		"IDEMKEY_LEDGER="+r.ledger, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "XDG_STATE_HOME="+filepath.Join(dir, "state"),
		"HOME="+dir, "NO_COLOR=1", "COUNT_FILE="+r.count)
	return r
}

func (r *mcpRig) path(name string) string { return filepath.Join(r.dir, name) }

// script is the path of a script under testdata/mcp.
func (r *mcpRig) script(name string) string { return filepath.Join(r.repo, "testdata/mcp", name) }

// npmBin is a reference server's bin script.
func (r *mcpRig) npmBin(pkg, file string) string {
	return filepath.Join(r.repo, "testdata/npm/mcp/node_modules/@modelcontextprotocol", pkg, file)
}

// counting is the command line of the counting server over stdio.
func (r *mcpRig) counting(extra ...string) []string {
	return append([]string{r.node, r.script("counting-server.mjs")}, extra...)
}

// proxy is idemkey mcp's arguments: flags, then -- and the server.
func proxy(flags []string, server []string) []string {
	return append(append(append([]string{"mcp"}, flags...), "--"), server...)
}

// mcpStep is one step's line of client.mjs.
type mcpStep struct {
	Step   int             `json:"step"`
	Op     string          `json:"op"`
	Tag    string          `json:"tag"`
	Result json.RawMessage `json:"result"`
	Error  string          `json:"error"`
}

// toolResult is a tools/call result as the client got it.
type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool           `json:"isError"`
	Meta    map[string]any `json:"_meta"`
}

func (s mcpStep) tool(t *testing.T) toolResult {
	t.Helper()
	if s.Error != "" {
		t.Fatalf("step %d (%s): error %s", s.Step, s.Op, s.Error)
	}
	var tr toolResult
	if err := json.Unmarshal(s.Result, &tr); err != nil {
		t.Fatalf("step %d: %v in %s", s.Step, err, s.Result)
	}
	return tr
}

func (tr toolResult) text() string {
	var b strings.Builder
	for _, c := range tr.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// mcpPlan is what client.mjs does.
type mcpPlan struct {
	Command  string            `json:"command"`
	Args     []string          `json:"args"`
	Env      map[string]string `json:"env,omitempty"`
	Sampling bool              `json:"sampling,omitempty"`
	Roots    bool              `json:"roots,omitempty"`
	Steps    []map[string]any  `json:"steps"`
}

// step is one step of a plan: op, then name/value pairs.
func step(op string, kv ...any) map[string]any {
	m := map[string]any{"op": op}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func call(name string, args map[string]any, kv ...any) map[string]any {
	return step("call", append([]any{"name", name, "args", args}, kv...)...)
}

// client runs client.mjs with a plan whose command is idemkey with args,
// and returns its steps (and idemkey's and the servers' stderr).
func (r *mcpRig) client(args []string, steps ...map[string]any) ([]mcpStep, string) {
	r.t.Helper()
	c := r.startClient(mcpPlan{Command: r.bin, Args: args, Steps: steps})
	return c.wait()
}

// runningClient is a plan that the package's client host runs.
type runningClient struct {
	r    *mcpRig
	id   int64
	run  *hostRun
	done chan hostEnd
}

// hostEnd is how a plan ended: its step lines, the standard error of its
// idemkey (and its server), and the host's error when it could not run.
type hostEnd struct {
	lines  [][]byte
	stderr string
	err    string
}

// clientHost is one client.mjs --serve for the package: each plan is a
// TypeScript SDK client of its own, with its own idemkey process, started
// without paying the SDK's load once per plan.
type clientHost struct {
	mu      sync.Mutex
	in      io.WriteCloser
	ended   chan struct{} // closed when the host has exited
	next    int64
	running map[int64]*hostRun
	err     error // why the host ended
}

// hostRun is what the host (or a client of its own) has written of a
// running plan.
type hostRun struct {
	mu    sync.Mutex
	end   hostEnd
	ended bool
	done  chan hostEnd
}

// line adds a step line.
func (run *hostRun) line(b []byte) {
	run.mu.Lock()
	run.end.lines = append(run.end.lines, b)
	run.mu.Unlock()
}

// finish ends the plan: its stderr, and err when it could not run.
func (run *hostRun) finish(stderr *string, err string) {
	run.mu.Lock()
	if stderr != nil {
		run.end.stderr = *stderr
	}
	run.end.err, run.ended = err, true
	end := run.end
	run.mu.Unlock()
	run.done <- end
}

var (
	hostOnce sync.Once
	host     *clientHost
	hostErr  error
)

// clients is the package's client host, started on first use (it ends
// with the test binary: its standard input closes).
func (r *mcpRig) clients() *clientHost {
	r.t.Helper()
	hostOnce.Do(func() {
		c := exec.Command(r.node, r.script("client.mjs"), "--serve")
		c.Stderr = os.Stderr
		in, err := c.StdinPipe()
		if err != nil {
			hostErr = err
			return
		}
		out, err := c.StdoutPipe()
		if err != nil {
			hostErr = err
			return
		}
		if hostErr = c.Start(); hostErr != nil {
			return
		}
		host = &clientHost{in: in, running: map[int64]*hostRun{}, ended: make(chan struct{})}
		go host.read(out, c)
	})
	if hostErr != nil {
		r.t.Fatalf("starting client.mjs --serve: %v", hostErr)
	}
	return host
}

// read passes the host's lines to their plans; when the host ends, every
// running plan ends with its error.
func (h *clientHost) read(out io.Reader, c *exec.Cmd) {
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var m struct {
			ID     int64           `json:"id"`
			Line   json.RawMessage `json:"line"`
			Stderr *string         `json:"stderr"`
			Exit   *int            `json:"exit"`
			Error  string          `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			h.fail(fmt.Errorf("client.mjs --serve wrote %q: %v", sc.Text(), err))
			return
		}
		h.mu.Lock()
		run := h.running[m.ID]
		if m.Exit != nil {
			delete(h.running, m.ID)
		}
		h.mu.Unlock()
		switch {
		case run == nil:
		case m.Line != nil:
			run.line(m.Line)
		case m.Stderr != nil:
			run.mu.Lock()
			run.end.stderr = *m.Stderr
			run.mu.Unlock()
		case m.Exit != nil && *m.Exit != 0:
			run.finish(nil, fmt.Sprintf("exit %d: %s", *m.Exit, m.Error))
		case m.Exit != nil:
			run.finish(nil, "")
		}
	}
	err := c.Wait()
	h.fail(fmt.Errorf("client.mjs --serve ended (%v)", err))
	close(h.ended)
}

// stopHost closes the client host's input and waits (bounded) until it
// has exited: its clients and their processes are gone with the tests.
func stopHost() {
	if host == nil {
		return
	}
	host.in.Close()
	select {
	case <-host.ended:
	case <-time.After(30 * time.Second):
	}
}

// fail ends every running plan, and those started later, with err.
func (h *clientHost) fail(err error) {
	h.mu.Lock()
	h.err = err
	runs := h.running
	h.running = map[int64]*hostRun{}
	h.mu.Unlock()
	for _, run := range runs {
		run.finish(nil, err.Error())
	}
}

// send writes one request line to the host.
func (h *clientHost) send(req any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		return h.err
	}
	_, err = h.in.Write(append(b, '\n'))
	return err
}

// envMap is env (NAME=value lines) as client.mjs takes it.
func envMap(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// startClient starts plan on the client host, in the rig's directory and
// environment.
func (r *mcpRig) startClient(plan mcpPlan) *runningClient {
	r.t.Helper()
	if progress(plan) {
		return r.ownClient(plan)
	}
	h := r.clients()
	run := &hostRun{done: make(chan hostEnd, 1)}
	h.mu.Lock()
	h.next++
	id := h.next
	h.running[id] = run
	h.mu.Unlock()
	req := map[string]any{"id": id, "plan": plan, "env": envMap(r.env), "cwd": r.dir}
	if err := h.send(req); err != nil {
		r.t.Fatal(err)
	}
	return &runningClient{r: r, id: id, run: run, done: run.done}
}

// progress reports whether a step of plan asks for a call's progress
// notifications. The SDK's client runs a progress handler a moment after
// it reads the notification, and drops it when the call's answer was in
// the same read: such a plan gets a client process of its own, whose
// reads no other plan delays.
func progress(plan mcpPlan) bool {
	for _, s := range plan.Steps {
		if s["progress"] == true {
			return true
		}
	}
	return false
}

// ownClient runs plan in a client.mjs process of its own (node client.mjs
// PLAN.json), in the rig's directory and environment.
func (r *mcpRig) ownClient(plan mcpPlan) *runningClient {
	r.t.Helper()
	b, err := json.Marshal(plan)
	if err != nil {
		r.t.Fatal(err)
	}
	f := r.write(fmt.Sprintf("plan-%d.json", time.Now().UnixNano()), string(b))
	c := exec.Command(r.node, r.script("client.mjs"), f)
	c.Dir, c.Env = r.dir, r.env
	var errOut bytes.Buffer
	c.Stderr = &errOut
	out, err := c.StdoutPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		r.t.Fatal(err)
	}
	run := &hostRun{done: make(chan hostEnd, 1)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			run.line(bytes.Clone(sc.Bytes()))
		}
		werr := ""
		if err := c.Wait(); err != nil {
			werr = err.Error()
		}
		stderr := errOut.String()
		run.finish(&stderr, werr)
	}()
	r.t.Cleanup(func() { c.Process.Kill() })
	return &runningClient{r: r, run: run, done: run.done}
}

// waitSteps waits (bounded) until the plan has done its first n steps.
func (c *runningClient) waitSteps(n int) {
	c.r.t.Helper()
	clitest.WaitFor(c.r.t, time.Minute, func() bool {
		c.run.mu.Lock()
		defer c.run.mu.Unlock()
		return len(c.run.end.lines) >= n || c.run.ended
	})
}

func (c *runningClient) wait() ([]mcpStep, string) {
	t := c.r.t
	t.Helper()
	var end hostEnd
	select {
	case end = <-c.done:
	case <-time.After(3 * time.Minute):
		if c.id != 0 {
			host.send(map[string]any{"id": c.id, "abort": true})
		}
		t.Fatalf("client.mjs did not end plan %d", c.id)
	}
	var steps []mcpStep
	for _, line := range end.lines {
		var s mcpStep
		if err := json.Unmarshal(line, &s); err != nil {
			t.Fatalf("client.mjs wrote %q: %v", line, err)
		}
		steps = append(steps, s)
	}
	if end.err != "" {
		t.Fatalf("client.mjs: %s\nsteps:\n%s\nstderr:\n%s", end.err, bytes.Join(end.lines, []byte("\n")), end.stderr)
	}
	return steps, end.stderr
}

// countLine is one call the counting server (or raw-server.mjs) ran.
type countLine struct {
	Tool    string         `json:"tool"`
	Args    map[string]any `json:"args"`
	Key     *string        `json:"key"`
	Attempt *float64       `json:"attempt"`
	Pid     int            `json:"pid"`
	Ppid    int            `json:"ppid"`
	Phase   string         `json:"phase"`
	Session *string        `json:"session"` // over HTTP
}

// calls returns what the counting server counted, of tool ("" for all).
func (r *mcpRig) calls(file, tool string) []countLine {
	r.t.Helper()
	var out []countLine
	r.jsonLines(file, func(line []byte) error {
		var c countLine
		err := json.Unmarshal(line, &c)
		if tool == "" || c.Tool == tool {
			out = append(out, c)
		}
		return err
	})
	return out
}

// jsonLines calls each with each line of file (none if it does not
// exist); an error fails the test.
func (r *mcpRig) jsonLines(file string, each func(line []byte) error) {
	r.t.Helper()
	b, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return
	} else if err != nil {
		r.t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		if err := each([]byte(line)); err != nil {
			r.t.Fatalf("%s: %q: %v", file, line, err)
		}
	}
}

// idemkey runs idemkey with args in the rig's environment.
func (r *mcpRig) idemkey(args ...string) (stdout, stderr string, code int) {
	r.t.Helper()
	c := exec.Command(r.bin, args...)
	c.Dir, c.Env = r.dir, r.env
	var o, e bytes.Buffer
	c.Stdout, c.Stderr = &o, &e
	err := c.Run()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			r.t.Fatal(err)
		}
	}
	return o.String(), e.String(), c.ProcessState.ExitCode()
}

// key is idemkey key's key for a call.
func (r *mcpRig) key(args ...string) string {
	r.t.Helper()
	out, errOut, code := r.idemkey(append([]string{"key"}, args...)...)
	if code != 0 {
		r.t.Fatalf("idemkey key %v: exit %d: %s", args, code, errOut)
	}
	return strings.TrimSpace(out)
}

// records are the ledger's records, as ledger ls --json lists them.
func (r *mcpRig) records() []map[string]any {
	r.t.Helper()
	out, errOut, code := r.idemkey("ledger", "ls", "--json")
	if code != 0 {
		r.t.Fatalf("ledger ls: exit %d: %s", code, errOut)
	}
	var recs []map[string]any
	if err := json.Unmarshal([]byte(out), &recs); err != nil {
		r.t.Fatalf("ledger ls --json: %v in %s", err, out)
	}
	return recs
}

func (r *mcpRig) write(name, content string) string {
	r.t.Helper()
	p := r.path(name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
	return p
}
