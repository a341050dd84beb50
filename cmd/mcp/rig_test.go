package mcp_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd"
	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the tests run idemkey: the test binary, called by the
// name idemkey (a symlink in each rig), is idemkey.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"idemkey": func() { os.Exit(cmd.Run()) }})
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

type runningClient struct {
	r      *mcpRig
	cmd    *exec.Cmd
	out    bytes.Buffer
	errOut bytes.Buffer
}

func (r *mcpRig) startClient(plan mcpPlan) *runningClient {
	r.t.Helper()
	b, err := json.Marshal(plan)
	if err != nil {
		r.t.Fatal(err)
	}
	f, err := os.CreateTemp(r.dir, "plan-*.json")
	if err != nil {
		r.t.Fatal(err)
	}
	f.Write(b)
	f.Close()
	c := &runningClient{r: r, cmd: exec.Command(r.node, r.script("client.mjs"), f.Name())}
	c.cmd.Dir = r.dir
	c.cmd.Env = r.env
	c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.errOut
	if err := c.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	return c
}

func (c *runningClient) wait() ([]mcpStep, string) {
	t := c.r.t
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("client.mjs: %v\nstdout:\n%s\nstderr:\n%s", err, c.out.String(), c.errOut.String())
		}
	case <-time.After(3 * time.Minute):
		c.cmd.Process.Kill()
		t.Fatalf("client.mjs did not end\nstdout:\n%s\nstderr:\n%s", c.out.String(), c.errOut.String())
	}
	var steps []mcpStep
	sc := bufio.NewScanner(&c.out)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var s mcpStep
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("client.mjs wrote %q: %v", sc.Text(), err)
		}
		steps = append(steps, s)
	}
	return steps, c.errOut.String()
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
