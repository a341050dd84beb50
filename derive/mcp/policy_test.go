package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/derive"
	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/idemkey/idemkey/derive/ledger/sqlite"
	"github.com/idemkey/idemkey/derive/ledger/testserver"
)

// countLine is one effect testdata/mcp/counting-server.mjs saw.
type countLine struct {
	Tool    string         `json:"tool"`
	Args    map[string]any `json:"args"`
	Key     *string        `json:"key"`
	Attempt *int64         `json:"attempt"`
	Phase   string         `json:"phase"`
}

// countingServer starts testdata/mcp/counting-server.mjs on node over
// stdio and returns its upstream and its count file. Without node or the
// MCP npm packages the test is skipped (it fails under CI=true, where
// scripts/services.sh installs them).
func countingServer(t *testing.T) (*Stdio, *exec.Cmd, string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		testserver.Unavailable(t, "node not found (%v)", err)
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(repo, "testdata/npm/mcp/node_modules/@modelcontextprotocol/sdk/package.json")); err != nil {
		testserver.Unavailable(t, "the MCP npm packages are not installed")
	}
	count := filepath.Join(t.TempDir(), "calls.jsonl")
	c := exec.Command(node, filepath.Join(repo, "testdata/mcp/counting-server.mjs"))
	c.Env = append(os.Environ(), "COUNT_FILE="+count)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	in, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("counting-server's stderr:\n%s", stderr.String())
		}
	})
	return NewStdio(in, out, nil), c, count
}

// counted waits up to 30s for the count file to hold a line that match
// accepts, and returns the lines.
func counted(t *testing.T, file string, match func(countLine) bool) []countLine {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var lines []countLine
		found := false
		b, _ := os.ReadFile(file)
		for _, l := range bytes.Split(b, []byte("\n")) {
			if len(l) == 0 {
				continue
			}
			var c countLine
			if err := json.Unmarshal(l, &c); err != nil {
				t.Fatalf("%v in %s", err, l)
			}
			lines = append(lines, c)
			found = found || match(c)
		}
		if found {
			return lines
		}
		if time.Now().After(deadline) {
			t.Fatalf("no matching line in the count file in 30s: %s", b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// resultMeta is the _meta of a tools/call answer's result.
func resultMeta(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	r, ok := m["result"].(map[string]any)
	if !ok {
		t.Fatalf("not a result: %v", m)
	}
	meta, _ := r["_meta"].(map[string]any)
	return meta
}

// TestToolPolicyTable: each tool's policy is a value in Options.Tools,
// against the counting server (testdata/mcp/counting-server.mjs, node)
// over pipes. lookup (read only) passes through: never keyed, run each
// time. echo_meta is made once, its key also in its idempotency_key
// argument, derived as idemkey key --from mcp --omit /note with the
// Keying's format: its repeat is replayed, and a call with another note
// (the same key, other arguments) is refused with the difference. slow is a write by its annotations (the default policy's
// ModeAuto) with recover retry: after the client cancelled it (unknown),
// its repeat is sent again as attempt 2 with the same key.
func TestToolPolicyTable(t *testing.T) {
	up, server, count := countingServer(t)
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	format := derive.Format{Name: "uuid", Prefix: "k-"}
	p := New(Options{
		Task: "t", Store: st, Locker: sqliteLocks{st}, Lease: 30 * time.Second, Holder: "test",
		Key:     Keying{Scheme: canon.JS, Format: format},
		Default: ToolPolicy{Recover: ledger.RecoverFail},
		Tools: map[string]ToolPolicy{
			"lookup":    {Mode: ModePass},
			"echo_meta": {Mode: ModeOnce, KeyArg: "idempotency_key", Select: derive.Selection{Omit: []string{"/note"}}},
			"slow":      {Recover: ledger.RecoverRetry},
		},
	})
	cinR, cinW := pipe(t)
	coutR, coutW := pipe(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Serve(ctx, cinR, coutW, up); close(done) }()
	t.Cleanup(func() { cancel(); cinW.Close(); <-done; server.Wait() })
	s := &session{w: cinW, lr: newLineReader(coutR)}
	s.send(t, initLine)
	s.recv(t)
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	call := func(id int, tool, args string) map[string]any {
		t.Helper()
		s.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args))
		for {
			m := s.recv(t)
			if got, _ := m["id"].(float64); int(got) == id {
				return m
			}
			if m["id"] == nil {
				continue // a notification of the server's
			}
			t.Fatalf("an answer to another request while waiting for %d: %v", id, m)
		}
	}

	// lookup: passed through twice, never keyed.
	for id := 1; id <= 2; id++ {
		m := call(id, "lookup", `{"q":"a"}`)
		if text, isErr := resultText(t, m); isErr || text != "found a" {
			t.Fatalf("lookup %d: %q (isError %v)", id, text, isErr)
		}
		if k, ok := resultMeta(t, m)[MetaKey]; ok {
			t.Errorf("lookup %d: passed through, yet its answer carries the key %v", id, k)
		}
	}
	lines := counted(t, count, func(c countLine) bool { return c.Tool == "lookup" })
	var lookups int
	for _, c := range lines {
		if c.Tool == "lookup" {
			lookups++
			if c.Key != nil {
				t.Errorf("lookup reached the server with the key %s", *c.Key)
			}
		}
	}
	if lookups != 2 {
		t.Errorf("the server ran lookup %d times, want 2 (passed through)", lookups)
	}

	// echo_meta: once, its key in the argument too, --omit /note.
	args, err := canon.Parse([]byte(`{"amount":5}`), canon.JS)
	if err != nil {
		t.Fatal(err)
	}
	want := string(format.Append(nil, derive.Call{Task: "t", Tool: "echo_meta", Args: args.Root()}.Key()))
	first := call(3, "echo_meta", `{"amount":5,"note":"first"}`)
	if k := resultMeta(t, first)[MetaKey]; k != want {
		t.Errorf("echo_meta's key %v, want %s (idemkey key --from mcp --omit /note, uuid, prefix k-)", k, want)
	}
	text, _ := resultText(t, first)
	var echoed struct {
		Meta map[string]any `json:"meta"`
		Args map[string]any `json:"args"`
	}
	if err := json.Unmarshal([]byte(text), &echoed); err != nil {
		t.Fatalf("%v in %s", err, text)
	}
	if echoed.Args["idempotency_key"] != want || echoed.Meta[MetaKey] != want {
		t.Errorf("the server got the argument idempotency_key %v and _meta key %v, want %s in both", echoed.Args["idempotency_key"], echoed.Meta[MetaKey], want)
	}
	again := call(4, "echo_meta", `{"amount":5,"note":"first"}`)
	if meta := resultMeta(t, again); meta[MetaReplayed] != true || meta[MetaKey] != want {
		t.Errorf("echo_meta again: _meta %v, want replayed under %s", meta, want)
	}
	if text2, _ := resultText(t, again); text2 != text {
		t.Errorf("the replay's text %q, want the recorded %q", text2, text)
	}
	other := call(7, "echo_meta", `{"amount":5,"note":"second"}`)
	if text, isErr := resultText(t, other); !isErr || resultMeta(t, other)[MetaOutcome] != "mismatch" ||
		!strings.Contains(text, `arguments differ at /note: recorded "first", now "second"`) {
		t.Errorf("echo_meta with another note: %q (isError %v, _meta %v), want a mismatch at /note", text, isErr, resultMeta(t, other))
	}
	lines = counted(t, count, func(c countLine) bool { return c.Tool == "echo_meta" })
	var echoes int
	for _, c := range lines {
		if c.Tool == "echo_meta" {
			echoes++
		}
	}
	if echoes != 1 {
		t.Errorf("the server ran echo_meta %d times, want 1", echoes)
	}

	// slow: cancelled after it was sent (unknown), then sent again as
	// attempt 2 (recover retry).
	until := filepath.Join(t.TempDir(), "go")
	slowArgs := fmt.Sprintf(`{"until":%q}`, until)
	s.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow","arguments":%s}}`, slowArgs))
	lines = counted(t, count, func(c countLine) bool { return c.Tool == "slow" && c.Phase == "start" })
	var slowKey string
	for _, c := range lines {
		if c.Tool == "slow" && c.Key != nil {
			slowKey = *c.Key
		}
	}
	if !strings.HasPrefix(slowKey, "k-") {
		t.Fatalf("slow reached the server with the key %q, want a write's key", slowKey)
	}
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`)
	// The file is written once the server has the cancellation (slow's
	// first attempt ends without it): written before, it could let the
	// first attempt finish and answer ahead of the cancellation.
	counted(t, count, func(c countLine) bool { return c.Tool == "slow" && c.Phase == "done" })
	if err := os.WriteFile(until, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	retried := call(6, "slow", slowArgs)
	if text, isErr := resultText(t, retried); isErr || !strings.HasPrefix(text, "slow done") {
		t.Fatalf("slow again: %q (isError %v), want it sent again and done", text, isErr)
	}
	if meta := resultMeta(t, retried); meta[MetaKey] != slowKey || meta[MetaAttempt] != float64(2) {
		t.Errorf("slow again: _meta %v, want key %s, attempt 2", meta, slowKey)
	}
	counted(t, count, func(c countLine) bool {
		return c.Tool == "slow" && c.Phase == "start" && c.Attempt != nil && *c.Attempt == 2 && c.Key != nil && *c.Key == slowKey
	})
	rec, _, err := st.Get(context.Background(), slowKey)
	if err != nil || rec == nil || rec.State != ledger.Succeeded || rec.Attempt != 2 {
		t.Errorf("slow's record: %+v (%v), want succeeded at attempt 2", rec, err)
	}
}
