package mcp_test

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// The answers that do not end a call, and the requests idemkey cannot
// read unambiguously, against testdata/mcp/shapes-server.mjs driven line
// by line.

func (r *mcpRig) shapes(flags ...string) *rawSession {
	r.t.Helper()
	return r.raw(proxy(append([]string{"--task", "t-shapes"}, flags...), []string{r.node, r.script("shapes-server.mjs")})...)
}

// shapesListed is a shapes session whose client read the first page of
// tools/list (id 1), and no other.
func (r *mcpRig) shapesListed() *rawSession {
	r.t.Helper()
	s := r.shapes()
	s.initialize("2025-11-25")
	s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if res := s.answer("1"); res["nextCursor"] != "page-2" {
		r.t.Fatalf("page 1: %v", res)
	}
	return s
}

// line is one JSON-RPC message idemkey wrote.
type line struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	raw string
}

func (s *rawSession) msg() line {
	s.t.Helper()
	l := s.recv()
	var m line
	if err := json.Unmarshal([]byte(l), &m); err != nil {
		s.t.Fatalf("idemkey wrote %q: %v", l, err)
	}
	m.raw = l
	return m
}

// answer is the next message, which must answer id with a result.
func (s *rawSession) answer(id string) map[string]any {
	s.t.Helper()
	m := s.msg()
	if string(m.ID) != id || m.Result == nil {
		s.t.Fatalf("want the result of id %s, got %s", id, m.raw)
	}
	var res map[string]any
	if err := json.Unmarshal(m.Result, &res); err != nil {
		s.t.Fatal(err)
	}
	return res
}

// refused is the next message, which must be an Invalid Request error.
func (s *rawSession) refused(id string) {
	s.t.Helper()
	m := s.msg()
	if string(m.ID) != id || m.Error == nil || m.Error.Code != -32600 {
		s.t.Fatalf("want Invalid Request for id %s, got %s", id, m.raw)
	}
}

func resultText(res map[string]any) string {
	var b strings.Builder
	content, _ := res["content"].([]any)
	for _, c := range content {
		if m, ok := c.(map[string]any); ok {
			b.WriteString(fmt.Sprint(m["text"]))
		}
	}
	return b.String()
}

func toolCall(id, name, args string, extra ...string) string {
	params := `"name":"` + name + `","arguments":` + args
	for _, e := range extra {
		params += "," + e
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{` + params + `}}`
}

// shapesKey is idemkey key's key of a call in the shapes sessions.
func (r *mcpRig) shapesKey(tool, args string) string {
	r.t.Helper()
	return r.key("--task", "t-shapes", "--tool", tool, r.write(fmt.Sprintf("args-%d.json", time.Now().UnixNano()), args))
}

// recordOf is the ledger's record of the call's key.
func (r *mcpRig) recordOf(key string) map[string]any {
	r.t.Helper()
	for _, rec := range r.records() {
		if rec["key"] == key {
			return rec
		}
	}
	return nil
}

// waitRecord waits until the key's record is in state.
func (r *mcpRig) waitRecord(key, state string) map[string]any {
	r.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		rec := r.recordOf(key)
		if rec != nil && rec["state"] == state {
			return rec
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the record of %s is %v, want %s", key, rec, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func keyOf(res map[string]any) string {
	meta, _ := res["_meta"].(map[string]any)
	k, _ := meta["com.github.idemkey/idempotency-key"].(string)
	return k
}

// TestMCPInputRequired: a result with resultType "input_required" (2026-07-28 multi
// round-trip requests) is not the outcome: the call sent again with the
// input, under a new id, is the same attempt, sent on; its answer is the
// outcome. A declined input leaves the call failed, asked again next time.
func TestMCPInputRequired(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	s := r.shapes()
	s.initialize("2025-11-25")
	s.send(toolCall("1", "confirm", `{"n":1}`))
	if res := s.answer("1"); res["resultType"] != "input_required" || res["requestState"] != "state-1" {
		t.Fatalf("the first answer: %v", res)
	}
	key := r.shapesKey("confirm", `{"n":1}`)
	if rec := r.recordOf(key); rec == nil || rec["state"] != "running" {
		t.Fatalf("after input_required, the record is %v, want running", rec)
	}
	s.send(toolCall("2", "confirm", `{"n":1}`, `"inputResponses":{"sure":{"action":"accept","content":{}}}`, `"requestState":"state-1"`))
	if res := s.answer("2"); resultText(res) != "confirmed" {
		t.Fatalf("the call sent again with its input: %v", res)
	}
	rec := r.waitRecord(key, "succeeded")
	if rec["attempt"] != 1.0 {
		t.Fatalf("record: %v", rec)
	}
	s.send(toolCall("3", "confirm", `{"n":1}`))
	if res := s.answer("3"); resultText(res) != "confirmed" || res["_meta"].(map[string]any)["com.github.idemkey/replayed"] != true {
		t.Fatalf("a repeat: %v", res)
	}
	if c := r.calls(r.count, "confirm"); len(c) != 1 || c[0].Key == nil || *c[0].Key != key {
		t.Fatalf("the server ran %+v, want once with key %s", c, key)
	}

	// Declined: failed, and the next identical call asks again.
	key2 := r.shapesKey("confirm", `{"n":2}`)
	s.send(toolCall("4", "confirm", `{"n":2}`))
	s.answer("4")
	s.send(toolCall("5", "confirm", `{"n":2}`, `"inputResponses":{"sure":{"action":"decline"}}`, `"requestState":"state-1"`))
	if res := s.answer("5"); resultText(res) != "not done: declined" {
		t.Fatalf("declined: %v", res)
	}
	if rec := r.waitRecord(key2, "failed"); !strings.Contains(fmt.Sprint(rec["reason"]), "declined by the user") {
		t.Fatalf("declined: %v", rec)
	}
	s.send(toolCall("6", "confirm", `{"n":2}`))
	if res := s.answer("6"); res["resultType"] != "input_required" {
		t.Fatalf("after a decline, the call is asked again: %v", res)
	}
}

// TestMCPElicitationDeclined: an elicitation the server sends during a write (2025-11-25) that the
// user declines leaves the call failed: the next identical call asks again.
func TestMCPElicitationDeclined(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	s := r.shapes()
	s.initialize("2025-11-25")
	key := r.shapesKey("ask", `{"n":1}`)
	for i, action := range []string{"decline", "cancel", "accept"} {
		id := fmt.Sprint(i + 1)
		s.send(toolCall(id, "ask", `{"n":1}`))
		m := s.msg()
		if m.Method != "elicitation/create" {
			t.Fatalf("want the server's elicitation, got %s", m.raw)
		}
		s.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"action":"` + action + `"}}`)
		res := s.answer(id)
		if action != "accept" {
			if !strings.HasPrefix(resultText(res), "not done") {
				t.Fatalf("%s: %v", action, res)
			}
			if rec := r.waitRecord(key, "failed"); !strings.Contains(fmt.Sprint(rec["reason"]), "declined by the user") {
				t.Fatalf("%s: %v", action, rec)
			}
			continue
		}
		if resultText(res) != "asked and done" {
			t.Fatalf("accepted: %v", res)
		}
	}
	r.waitRecord(key, "succeeded")
	s.send(toolCall("4", "ask", `{"n":1}`))
	if res := s.answer("4"); resultText(res) != "asked and done" {
		t.Fatalf("a repeat after the accepted one: %v", res)
	}
	if c := r.calls(r.count, "ask"); len(c) != 1 {
		t.Fatalf("the server ran %+v, want once", c)
	}
}

func taskID(t *testing.T, res map[string]any) string {
	t.Helper()
	if task, ok := res["task"].(map[string]any); ok {
		return task["taskId"].(string)
	}
	id, ok := res["taskId"].(string)
	if !ok {
		t.Fatalf("not a task handle: %v", res)
	}
	return id
}

// TestMCPTasks: a task handle is not the outcome: a repeat while the task lives gets
// the same handle; the task's end, read from the answers that pass (or
// asked by idemkey when the client does not ask), is: completed →
// succeeded with its result, failed or cancelled → failed. A replayed
// handle the server no longer knows is answered from the record.
func TestMCPTasks(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	s := r.shapes()
	s.initialize("2025-11-25")
	taskParam := `"task":{"ttl":60000}`

	// 2025-11-25, the client polls. The server suggests polling every
	// 30 s: idemkey's own polling (after an interval without the
	// client's) cannot end the task before the record is read.
	one := `{"n":1,"poll":30000}`
	key := r.shapesKey("job", one)
	s.send(toolCall("1", "job", one, taskParam))
	tid := taskID(t, s.answer("1"))
	if rec := r.recordOf(key); rec == nil || rec["state"] != "running" {
		t.Fatalf("after the task handle, the record is %v, want running", rec)
	}
	s.send(toolCall("2", "job", one, taskParam))
	if res := s.answer("2"); taskID(t, res) != tid {
		t.Fatalf("a repeat while the task lives: %v, want task %s", res, tid)
	}
	// The client polls until the task ends.
	for i := 0; ; i++ {
		id := fmt.Sprintf(`"get-%d"`, i)
		s.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tasks/get","params":{"taskId":"` + tid + `"}}`)
		res := s.answer(id)
		if res["status"] == "completed" {
			break
		}
		if res["status"] != "working" || i == 100 {
			t.Fatalf("tasks/get: %v", res)
		}
	}
	rec := r.waitRecord(key, "succeeded")
	s.send(`{"jsonrpc":"2.0","id":5,"method":"tasks/result","params":{"taskId":"` + tid + `"}}`)
	if res := s.answer("5"); resultText(res) != "job "+tid+" done" {
		t.Fatalf("tasks/result: %v", res)
	}
	if rec["attempt"] != 1.0 {
		t.Fatalf("record %v", rec)
	}

	// Cancelled: failed, and the next identical call runs.
	key2 := r.shapesKey("job", `{"n":2}`)
	s.send(toolCall("6", "job", `{"n":2}`, taskParam))
	tid2 := taskID(t, s.answer("6"))
	s.send(`{"jsonrpc":"2.0","id":7,"method":"tasks/cancel","params":{"taskId":"` + tid2 + `"}}`)
	if res := s.answer("7"); res["status"] != "cancelled" {
		t.Fatalf("tasks/cancel: %v", res)
	}
	r.waitRecord(key2, "failed")
	s.send(toolCall("8", "job", `{"n":2}`, taskParam))
	if tid3 := taskID(t, s.answer("8")); tid3 == tid2 {
		t.Fatalf("after a cancelled task, the call was not sent again (task %s)", tid3)
	}

	// 2026-07-28 extension (a handle unasked), no client polling:
	// idemkey asks; completed and failed.
	key4 := r.shapesKey("job", `{"n":4}`)
	key5 := r.shapesKey("job", `{"end":"failed","n":5}`)
	s.send(toolCall("9", "job", `{"n":4}`))
	if res := s.answer("9"); res["resultType"] != "task" {
		t.Fatalf("2026-07-28 handle: %v", res)
	}
	s.send(toolCall("10", "job", `{"end":"failed","n":5}`))
	s.answer("10")
	if rec := r.waitRecord(key4, "succeeded"); rec["attempt"] != 1.0 {
		t.Fatalf("record %v", rec)
	}
	r.waitRecord(key5, "failed")
	s.send(toolCall("11", "job", `{"n":4}`))
	if res := s.answer("11"); !strings.HasPrefix(resultText(res), "job ") || res["_meta"].(map[string]any)["com.github.idemkey/replayed"] != true {
		t.Fatalf("a repeat of a completed task: %v", res)
	}
	// The call sent again after its cancelled task: its new task, which
	// no client follows, is followed by idemkey to its end.
	if rec := r.waitRecord(key2, "succeeded"); rec["attempt"] != 2.0 {
		t.Fatalf("record %v", rec)
	}
	s.in.Close()
	s.cmd.Wait()
	if c := r.calls(r.count, "job"); len(c) != 3 {
		t.Fatalf("the server completed %+v, want 3 tasks (n 1, 2 and 4)", c)
	}

	// A new session: the server knows no task. The replayed handle's
	// tasks/result and tasks/get are answered from the record.
	s2 := r.shapes()
	s2.initialize("2025-11-25")
	s2.send(toolCall("1", "job", one, taskParam))
	if res := s2.answer("1"); taskID(t, res) != tid {
		t.Fatalf("the replayed handle: %v, want task %s", res, tid)
	}
	s2.send(`{"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":"` + tid + `"}}`)
	if res := s2.answer("2"); resultText(res) != "job "+tid+" done" {
		t.Fatalf("tasks/result of the replayed handle: %v", res)
	}
	s2.send(`{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"` + tid + `"}}`)
	if res := s2.answer("3"); res["status"] != "completed" || res["taskId"] != tid {
		t.Fatalf("tasks/get of the replayed handle: %v", res)
	}
}

// TestMCPIDsInFlight: every client request's id in flight is tracked: a tools/call reusing
// the id of a request in flight is refused, either way round, and ids 0
// and -0 are one id.
func TestMCPIDsInFlight(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	s := r.shapes()
	s.initialize("2025-11-25")
	s.send(`{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"hold://a"}}`)
	s.send(toolCall("7", "charge", `{"n":1}`))
	s.refused("7")
	s.send(`{"jsonrpc":"2.0","method":"test/release"}`)
	if res := s.answer("7"); res["contents"] == nil {
		t.Fatalf("resources/read: %v", res)
	}
	s.send(toolCall("7", "charge", `{"n":1}`))
	if res := s.answer("7"); resultText(res) != "charge done" {
		t.Fatalf("the id free again: %v", res)
	}

	// The other way round: a write held (it waits for the user), then
	// another request with its id.
	s.send(toolCall("8", "ask", `{"n":1}`))
	e := s.msg()
	s.send(`{"jsonrpc":"2.0","id":8,"method":"resources/read","params":{"uri":"hold://b"}}`)
	s.refused("8")
	s.send(`{"jsonrpc":"2.0","id":` + string(e.ID) + `,"result":{"action":"accept"}}`)
	s.answer("8")

	// -0 is 0.
	key := r.shapesKey("charge", `{"n":2}`)
	s.send(toolCall("-0", "charge", `{"n":2}`))
	if m := s.msg(); m.Result == nil {
		t.Fatalf("id -0: %s", m.raw)
	}
	r.waitRecord(key, "succeeded")
	s.send(`{"jsonrpc":"2.0","id":9,"method":"ping"}`)
	s.answer("9")
	if c := r.calls(r.count, "charge"); len(c) != 2 {
		t.Fatalf("the server ran %+v, want 2 charges", c)
	}
}

// TestMCPAmbiguousRequests: a request with a member written twice, and a batch element that is not
// an object, are refused, never sent on.
func TestMCPAmbiguousRequests(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	s := r.shapes()
	s.initialize("2025-11-25")
	for i, l := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"ping","params":{"name":"charge","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call","params":{"name":"charge","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"peek","arguments":{}},"params":{"name":"charge","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"charge","name":"peek","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"charge","arguments":{"a":1},"arguments":{"a":2}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"charge","arguments":{},"_meta":{},"_meta":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"charge","arguments":{},"\u006eame":"peek"}}`,
	} {
		s.send(l)
		m := s.msg()
		if m.Error == nil || m.Error.Code != -32600 {
			t.Fatalf("line %d: %s", i, m.raw)
		}
	}
	s.send(`{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`)
	s.refused("2")
	if c := r.calls(r.count, ""); len(c) != 0 {
		t.Fatalf("an ambiguous request reached the server: %+v", c)
	}

	b := r.raw(proxy([]string{"--task", "t-shapes"}, []string{r.node, r.script("raw-server.mjs")})...)
	b.initialize("2025-03-26")
	b.send(`[1,{"jsonrpc":"2.0","id":3,"method":"ping"}]`)
	if l := b.recv(); !strings.HasPrefix(l, "[") || !strings.Contains(l, `"code":-32600`) {
		t.Fatalf("a batch element that is not an object: %s", l)
	}
	if l := b.recv(); !strings.Contains(l, `"id":3`) {
		t.Fatalf("the batch's ping: %s", l)
	}
}

// TestMCPListChanged: notifications/tools/list_changed: what the old list said no longer
// holds, so a read-only tool that became a write is keyed.
func TestMCPListChanged(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	s := r.shapesListed()
	s.send(toolCall("2", "peek", `{}`))
	if res := s.answer("2"); resultText(res) != "peeked" || keyOf(res) != "" {
		t.Fatalf("read-only peek: %v", res)
	}
	s.send(`{"jsonrpc":"2.0","method":"test/flip"}`)
	if m := s.msg(); m.Method != "notifications/tools/list_changed" {
		t.Fatalf("want list_changed, got %s", m.raw)
	}
	for _, id := range []string{"3", "4"} {
		s.send(toolCall(id, "peek", `{}`))
		s.answer(id)
	}
	c := r.calls(r.count, "peek")
	if len(c) != 1 || c[0].Key == nil {
		t.Fatalf("the server ran peek %+v, want once with a key", c)
	}
}

// TestMCPToolsPages: a paginated tools/list: a tool on a page the client did not fetch is
// looked up before it is judged.
func TestMCPToolsPages(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	s := r.shapesListed()
	for _, id := range []string{"2", "3"} {
		s.send(toolCall(id, "late", `{}`))
		if res := s.answer(id); keyOf(res) != "" {
			t.Fatalf("read-only late: %v", res)
		}
	}
	c := r.calls(r.count, "late")
	if len(c) != 2 || c[0].Key != nil || c[1].Key != nil {
		t.Fatalf("the server ran late %+v, want twice, unkeyed", c)
	}
}

// TestMCPMessageCap: one message is capped (--max-message): a server's longer line drops
// its output, and the call waiting for it is unknown, recorded so; a
// client's longer line ends the session.
func TestMCPMessageCap(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	r.env = append(r.env, "HUGE=3145728")
	s := r.shapes("--max-message", "1MiB")
	s.initialize("2025-11-25")
	key := r.shapesKey("huge", `{}`)
	s.send(toolCall("1", "huge", `{}`))
	res := s.answer("1")
	if res["isError"] != true || res["_meta"].(map[string]any)["com.github.idemkey/outcome"] != "unknown" {
		t.Fatalf("a result past the cap: %v", res)
	}
	if rec := r.waitRecord(key, "unknown"); !strings.Contains(fmt.Sprint(rec["reason"]), "--max-message") {
		t.Fatalf("record: %v", rec)
	}

	c := r.shapes("--max-message", "1MiB")
	c.initialize("2025-11-25")
	// idemkey stops reading in the middle: the write may fail.
	io.WriteString(c.in, `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"`+strings.Repeat("a", 2<<20)+`"}}`+"\n")
	select {
	case l, ok := <-c.lines:
		if ok {
			t.Fatalf("after a line past the cap: %s", l)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("idemkey went on after a client's line past the cap; stderr:\n%s", c.errb.String())
	}
	c.cmd.Wait() // its stderr is whole
	if !strings.Contains(c.errb.String(), "--max-message") {
		t.Fatalf("stderr: %s", c.errb.String())
	}
}
