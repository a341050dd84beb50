package mcp_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const metaKey = "com.github.idemkey/idempotency-key"

// TestMCPWriteOnceReadPassed: a repeated write returns the first result and the server runs it once;
// a read-only tool (readOnlyHint: true) passes every time and is never
// recorded; a failed result is sent again as the next attempt, with the
// same key; the key in _meta is idemkey key's for the same call.
func TestMCPWriteOnceReadPassed(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	charge := map[string]any{"amount": 1999, "currency": "eur"}
	steps, stderr := r.client(proxy([]string{"--task", "t-42"}, r.counting()),
		step("list"),
		call("charge", charge),
		call("charge", map[string]any{"currency": "eur", "amount": 1999.0}), // the same arguments, written otherwise
		call("lookup", map[string]any{"q": "ada"}),
		call("lookup", map[string]any{"q": "ada"}),
		call("fail", map[string]any{"note": "x"}),
		call("fail", map[string]any{"note": "x"}),
		call("echo_meta", map[string]any{"q": "k"}),
	)
	first, again := steps[1].tool(t), steps[2].tool(t)
	if first.IsError || first.Meta[metaReplayed] != nil || !strings.Contains(first.text(), "call 1 of") {
		t.Fatalf("first charge: %+v", first)
	}
	if again.text() != first.text() || again.Meta[metaReplayed] != true || again.Meta["com.github.idemkey/attempt"] != 1.0 {
		t.Fatalf("repeated charge: %+v, want the first result marked replayed", again)
	}
	want := r.key("--task", "t-42", "--tool", "charge", r.write("charge.json", `{"amount":1999,"currency":"eur"}`))
	if again.Meta[metaKey] != want {
		t.Fatalf("replay's key %v, want %s", again.Meta[metaKey], want)
	}
	charges := r.calls(r.count, "charge")
	if len(charges) != 1 || *charges[0].Key != want || *charges[0].Attempt != 1 {
		t.Fatalf("the server ran charge %d times (%+v), want once with key %s, attempt 1\n%s", len(charges), charges, want, stderr)
	}
	if lookups := r.calls(r.count, "lookup"); len(lookups) != 2 || lookups[0].Key != nil {
		t.Fatalf("lookup: %+v, want two calls passed untouched", lookups)
	}
	fails := r.calls(r.count, "fail")
	if len(fails) != 2 || *fails[0].Key != *fails[1].Key || *fails[0].Attempt != 1 || *fails[1].Attempt != 2 {
		t.Fatalf("fail: %+v, want attempts 1 and 2 with one key", fails)
	}
	echo := steps[7].tool(t)
	var got struct {
		Meta map[string]any `json:"meta"`
	}
	if err := json.Unmarshal([]byte(echo.text()), &got); err != nil {
		t.Fatal(err)
	}
	if k := r.key("--task", "t-42", "--tool", "echo_meta", r.write("echo.json", `{"q":"k"}`)); got.Meta[metaKey] != k {
		t.Fatalf("the server got key %v in _meta, idemkey key says %s", got.Meta[metaKey], k)
	}
	for _, rec := range r.records() {
		if rec["tool"] == "lookup" {
			t.Fatalf("a read-only call was recorded: %v", rec)
		}
	}
}

const metaReplayed = "com.github.idemkey/replayed"

// TestMCPKeyOptions: the per-tool config: --omit applies to the key, the fingerprint covers
// the whole arguments (an omitted field that changed is refused, showing
// the difference), key-arg sets the key in an argument that the key never
// covers, and the key format is idemkey key's.
func TestMCPKeyOptions(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	cfg := r.write("config.yaml", "tools:\n  charge:\n    omit: [\"/trace_id\"]\n    key-arg: idempotency_key\n")
	a := map[string]any{"amount": 5, "currency": "eur", "trace_id": "a1"}
	steps, _ := r.client(proxy([]string{"--task", "t-1", "--config", cfg, "--format", "uuid", "--prefix", "pay-"}, r.counting()),
		call("charge", a),
		call("charge", map[string]any{"amount": 5, "currency": "eur", "trace_id": "b2"}),
		call("charge", map[string]any{"amount": 5, "currency": "eur", "trace_id": "a1", "idempotency_key": "minted-by-the-model"}),
	)
	want := r.key("--task", "t-1", "--tool", "charge", "--config", cfg, "--format", "uuid", "--prefix", "pay-",
		r.write("a.json", `{"amount":5,"currency":"eur","trace_id":"a1"}`))
	if !strings.HasPrefix(want, "pay-") {
		t.Fatalf("idemkey key: %s", want)
	}
	charges := r.calls(r.count, "charge")
	if len(charges) != 1 || *charges[0].Key != want || charges[0].Args["idempotency_key"] != want {
		t.Fatalf("the server got %+v, want one call with key %s in _meta and in idempotency_key", charges, want)
	}
	mismatch := steps[1].tool(t)
	if !mismatch.IsError || !strings.Contains(mismatch.text(), "/trace_id") || !strings.Contains(mismatch.text(), `"a1"`) ||
		mismatch.Meta["com.github.idemkey/outcome"] != "mismatch" {
		t.Fatalf("an omitted field changed: %+v, want a tool error showing /trace_id", mismatch)
	}
	if replay := steps[2].tool(t); replay.Meta[metaReplayed] != true || replay.text() != steps[0].tool(t).text() {
		t.Fatalf("the model's own idempotency_key changed the call: %+v", replay)
	}
}

// TestMCPMemoryServer: server-memory writes each entity to its file: a repeated create_entities
// adds nothing; read_graph (read-only) passes.
func TestMCPMemoryServer(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	mem := r.path("memory.jsonl")
	r.env = append(r.env, "MEMORY_FILE_PATH="+mem)
	ent := map[string]any{"entities": []any{map[string]any{"name": "ada", "entityType": "person", "observations": []any{"wrote the first program"}}}}
	obs := map[string]any{"observations": []any{map[string]any{"entityName": "ada", "contents": []any{"born 1815"}}}}
	steps, stderr := r.client(proxy([]string{"--task", "t-mem"}, []string{r.node, r.npmBin("server-memory", "dist/index.js")}),
		step("list"),
		call("create_entities", ent),
		call("add_observations", obs),
		call("add_observations", obs),
		call("create_entities", ent),
		call("read_graph", map[string]any{}),
		call("read_graph", map[string]any{}),
	)
	b, err := os.ReadFile(mem)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if n := strings.Count(string(b), "born 1815"); n != 1 {
		t.Fatalf("the memory file has the observation %d times:\n%s", n, b)
	}
	if n := strings.Count(string(b), `"type":"entity"`); n != 1 {
		t.Fatalf("the memory file has %d entities:\n%s", n, b)
	}
	if s := steps[3].tool(t); s.Meta[metaReplayed] != true || s.text() != steps[2].tool(t).text() {
		t.Fatalf("repeated add_observations: %+v", s)
	}
	if s := steps[6].tool(t); s.Meta[metaReplayed] != nil || !strings.Contains(s.text(), "born 1815") {
		t.Fatalf("read_graph: %+v", s)
	}
	for _, rec := range r.records() {
		if rec["tool"] == "read_graph" {
			t.Fatalf("read_graph was recorded: %v", rec)
		}
	}
}

// TestMCPFilesystemServer: server-filesystem: a repeated write_file is not written again (the file
// keeps a change made after the first), read_text_file passes.
func TestMCPFilesystemServer(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	root := r.path("files")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(root, "note.txt")
	w := map[string]any{"path": target, "content": "first\n"}
	steps, _ := r.client(proxy([]string{"--task", "t-fs"}, []string{r.node, r.npmBin("server-filesystem", "dist/index.js"), root}),
		step("list"),
		call("write_file", w),
		step("sleep", "ms", 10),
		call("read_text_file", map[string]any{"path": target}),
	)
	if err := os.WriteFile(target, []byte("changed by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	steps2, _ := r.client(proxy([]string{"--task", "t-fs"}, []string{r.node, r.npmBin("server-filesystem", "dist/index.js"), root}),
		call("write_file", w),
		call("read_text_file", map[string]any{"path": target}),
	)
	if s := steps2[0].tool(t); s.Meta[metaReplayed] != true || s.text() != steps[1].tool(t).text() {
		t.Fatalf("repeated write_file: %+v", s)
	}
	if got := steps2[1].tool(t).text(); got != "changed by hand\n" {
		t.Fatalf("read_text_file after the repeated write: %q (the write ran again)", got)
	}
	if got := steps[3].tool(t).text(); got != "first\n" {
		t.Fatalf("read_text_file: %q", got)
	}
}

// TestMCPReadOnlyWithoutListing: a client that calls a read-only tool without listing the tools first:
// idemkey lists them itself (its own request, never passed to the
// client), so the call still passes unrecorded.
func TestMCPReadOnlyWithoutListing(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	steps, stderr := r.client(proxy([]string{"--task", "t-nolist"}, r.counting()),
		call("lookup", map[string]any{"q": "ada"}),
		call("lookup", map[string]any{"q": "ada"}),
		call("charge", map[string]any{"amount": 1, "currency": "eur"}),
		step("ping"),
	)
	for _, s := range steps[:2] {
		if res := s.tool(t); res.text() != "found ada" || res.Meta != nil {
			t.Fatalf("lookup: %+v\n%s", res, stderr)
		}
	}
	if c := r.calls(r.count, "lookup"); len(c) != 2 || c[0].Key != nil || c[1].Key != nil {
		t.Fatalf("lookup reached the server as %+v, want twice, unkeyed", c)
	}
	if c := r.calls(r.count, "charge"); len(c) != 1 || c[0].Key == nil {
		t.Fatalf("charge reached the server as %+v, want once, keyed", c)
	}
	recs := r.records()
	if len(recs) != 1 || recs[0]["tool"] != "charge" {
		t.Fatalf("records %v, want charge's alone", recs)
	}
}
