package mcp_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// metaAttempt is the _meta member of a keyed call's attempt.
const metaAttempt = "com.github.idemkey/attempt"

// A client started from a configuration file sets no task id and puts the
// server's command right after idemkey's flags, with flags of its own:
// each session is a task of its own (a random id, on stderr and in the
// log), a repeat in the session is answered from the ledger, a new
// session's identical write runs again. The first answer carries the key
// and the attempt as the replay does; --replay-note ends the replay with
// one text item after the server's own content.
func TestMCPTaskPerSession(t *testing.T) {
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

// Without --replay-note a replay is the first answer, _meta aside: its
// content is the server's, nothing added.
func TestMCPReplayWithoutNote(t *testing.T) {
	r := newMCPRig(t)
	charge := map[string]any{"amount": 1}
	steps, _ := r.client(append([]string{"mcp"}, r.counting()...), call("charge", charge), call("charge", charge))
	first, again := steps[0].tool(t), steps[1].tool(t)
	if again.Meta[metaReplayed] != true || len(again.Content) != len(first.Content) || again.text() != first.text() {
		t.Fatalf("the replay %+v, the first %+v", again, first)
	}
}

// A client that sends the same call again while the first is still
// running (its own retry of a slow call) gets the first one's result: by
// default idemkey waits for it, and the server runs it once.
func TestMCPIdenticalCallWaits(t *testing.T) {
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
