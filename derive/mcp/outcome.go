package mcp

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/idemkey/idemkey/derive/ledger"
)

// outcome.go is about the answers to a held tools/call that do not end
// it. A call's outcome comes only from its final answer; until then its
// attempt stays open (its hold renewed), and a repeat of the call belongs
// to it:
//
//   - a result with resultType "input_required" (MCP 2026-07-28,
//     basic/patterns/mrtr) asks the client for input: the client sends the
//     call again, under a new id, with inputResponses or requestState
//     beside the same arguments (the same key). That request continues the
//     open attempt: it is sent on, not replayed nor refused as in flight;
//   - a task handle (2025-11-25 basic/utilities/tasks, a CreateTaskResult
//     {"task":{...}} answering a request with params.task; 2026-07-28's
//     tasks extension, resultType "task") says the server runs the call as
//     a task: a repeat of the call while the task lives gets the same
//     handle, and the task's end, read from the tasks/get, tasks/result
//     and tasks/cancel answers and the status notifications that pass
//     (idemkey asks tasks/get itself when the client does not), is the
//     call's outcome: completed → the task's result, failed or cancelled
//     → failed (the next identical call runs again). The handle is kept
//     with the record (Record.Meta), so that a replay to a client that
//     asked for a task is the handle, and a tasks/* request about it that
//     the server no longer knows is answered from the record;
//   - a user who declines or cancels an elicitation the server asked for
//     during the call (the client's elicitation/create answer, or its
//     inputResponses) did not let it do what was asked: the call is
//     recorded failed ("declined by the user"), whatever the server says.
//
// A stream broken before the final answer is the upstream's to report
// (Sink.Unanswered): until it gives up (an HTTP upstream resumes a polled
// event stream first), the attempt stays open.

// taskReq is a client's request about a task: which, and, for a handle
// idemkey replayed, the record it came from.
type taskReq struct {
	taskID, method string
	replayed       *ledger.Record
}

// answered reports whether result is the held call's final answer; if
// not, the attempt stays open for what follows.
func (p *Proxy) answered(c *call, result []byte) bool {
	rt, _ := stringValue(objectMember(result, "resultType"))
	switch id := taskHandle(result); {
	case rt == "input_required":
		p.keepOpen(c)
		p.trace(c, "input required: the attempt stays open for the call sent again with the input")
		return false
	case id != "":
		c.taskID, c.handle = id, clone(result)
		p.mu.Lock()
		p.tasks[id] = c
		p.recount()
		p.mu.Unlock()
		p.keepOpen(c)
		p.trace(c, "answered with task "+id+": its end is the outcome")
		if !p.taskStatus(c, taskObject(result)) {
			go p.pollTask(c)
		}
		return false
	}
	return true // "complete", or a revision without resultType
}

// keepOpen keeps an answered attempt open under its key (ended at once
// when the session has ended meanwhile).
func (p *Proxy) keepOpen(c *call) {
	p.mu.Lock()
	c.sent = false
	p.open[c.key] = c
	closed := p.closed
	p.mu.Unlock()
	if closed {
		p.endOpen("the session ended")
	}
}

// final is the outcome o of the call's final answer, as recorded: a
// success the user declined is a failure, and a task's handle is kept.
func (p *Proxy) final(c *call, o ledger.Outcome) ledger.Outcome {
	p.mu.Lock()
	declined := c.declined
	p.mu.Unlock()
	if declined && o.State == ledger.Succeeded {
		o.State, o.ExitCode = ledger.Failed, 1
		o.Reason = "declined by the user: the client answered the server's request for confirmation (elicitation) with decline or cancel"
	}
	if c.handle != nil && len(c.handle) <= ledger.MaxKeptRequest {
		o.Meta = append(append([]byte(`{"task":`), c.handle...), '}')
	}
	return o
}

// reopen handles a repeat of a call whose attempt is open: an input
// required continues it (sent on under the same attempt), a task that
// lives is answered with its handle. done is false when the key has no
// open attempt.
func (p *Proxy) reopen(c *call, m *message, answer func([]byte)) (fwd []byte, done bool) {
	p.mu.Lock()
	o := p.open[c.key]
	if o == nil || p.closed {
		p.mu.Unlock()
		return nil, false
	}
	if o.taskID != "" {
		p.mu.Unlock()
		c.attempt = o.attempt
		p.logCall(c, "replayed")
		marks := []kv{{MetaReplayed, []byte("true")}, {MetaKey, quoted(c.key)}, {MetaAttempt, number(o.attempt)}}
		answer(response(c.id, setMembers(o.handle, kv{"_meta", setMembers(objectMember(o.handle, "_meta"), marks...)})))
		return nil, true
	}
	delete(p.open, c.key)
	c.hold, c.attempt, c.sent, c.sentAt = o.hold, o.attempt, true, time.Now()
	c.declined = o.declined || declines(objectMember(m.value(m.params), "inputResponses"))
	p.calls[c.idKey] = c
	p.recount()
	p.mu.Unlock()
	p.logCall(c, "forwarded")
	return rewriteCall(m, c.key, c.attempt, c.keyArg), true
}

// declines reports whether the inputResponses of a call sent again (MCP
// 2026-07-28 basic/patterns/mrtr) decline or cancel an elicitation.
func declines(responses []byte) bool {
	if len(responses) == 0 || responses[0] != '{' {
		return false
	}
	for _, r := range members(responses, 0) {
		if declined(responses[r.val:r.end]) {
			return true
		}
	}
	return false
}

// declined reports whether an elicitation's result (client/elicitation:
// ElicitResult) declines or cancels.
func declined(result []byte) bool {
	a, _ := stringValue(objectMember(result, "action"))
	return a == "decline" || a == "cancel"
}

// taskHandle is the task id of a CreateTaskResult ("" if result is not
// one): 2026-07-28's {"resultType":"task","taskId":…}, or 2025-11-25's
// {"task":{"taskId":…}}.
func taskHandle(result []byte) string {
	if rt, _ := stringValue(objectMember(result, "resultType")); rt == "task" {
		id, _ := stringValue(objectMember(result, "taskId"))
		return id
	}
	if objectMember(result, "content") != nil {
		return ""
	}
	id, _ := stringValue(objectMember(objectMember(result, "task"), "taskId"))
	return id
}

// taskObject is the Task in a CreateTaskResult.
func taskObject(result []byte) []byte {
	if t := objectMember(result, "task"); len(t) > 0 && t[0] == '{' {
		return t
	}
	return result
}

// taskRequest notes a client's tasks/get, tasks/result or tasks/cancel
// about a task idemkey follows, so that its answer is read.
func (p *Proxy) taskRequest(m *message, k string) {
	id, ok := stringValue(objectMember(m.value(m.params), "taskId"))
	if !ok {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.tasks[id]; c != nil {
		c.seen = time.Now()
		p.taskReqs[k] = taskReq{taskID: id, method: m.method}
	} else if rec := p.replayedTasks[id]; rec != nil {
		p.taskReqs[k] = taskReq{taskID: id, method: m.method, replayed: rec}
	}
}

// taskAnswer reads the server's answer to a client's request about a
// task, and reports whether idemkey answered in its place (a handle it
// replayed that the server no longer knows).
func (p *Proxy) taskAnswer(tr taskReq, m *message) bool {
	var errv, result []byte
	if m.err != nil && m.result == nil {
		errv = m.value(m.err)
	} else {
		result = m.value(m.result)
	}
	if tr.replayed != nil {
		if errv == nil {
			return false
		}
		p.o.Diag(fmt.Sprintf("the server does not know task %s, whose handle idemkey replayed: answered from the record of %s", tr.taskID, tr.replayed.Key))
		p.toClient(replayedTaskAnswer(m.idRaw(), tr, m.value(m.err)))
		return true
	}
	p.mu.Lock()
	c := p.tasks[tr.taskID]
	p.mu.Unlock()
	if c != nil {
		p.taskRead(c, tr.method, errv, result)
	}
	return false
}

// taskRead acts on an answer about c's task: to tasks/result, the call's
// final answer; to tasks/get or tasks/cancel, its status.
func (p *Proxy) taskRead(c *call, method string, errv, result []byte) {
	switch {
	case errv != nil && unknownTask(errv):
		p.taskEnd(c, ledger.Outcome{State: ledger.Unknown, ExitCode: ledger.NoExit,
			Reason: "the server no longer knows the call's task " + c.taskID + ": " + shorten(string(errv), 200)})
	case method == "tasks/result" && (errv != nil || result != nil):
		p.taskEnd(c, finalOutcome(errv, result))
	case result != nil:
		p.taskStatus(c, result)
	}
}

// unknownTask reports whether a JSON-RPC error says that the task is not
// known (Invalid params, as the tasks utility answers a taskId it does
// not have), rather than being the task's own failure.
func unknownTask(errv []byte) bool {
	code, _ := strconv.Atoi(string(objectMember(errv, "code")))
	return code == codeInvalidParams
}

// taskStatus acts on a Task object's status, and reports whether the
// task ended: completed with its result (2026-07-28 tasks/get carries
// it; otherwise idemkey asks tasks/result), failed, or cancelled.
func (p *Proxy) taskStatus(c *call, task []byte) bool {
	status, _ := stringValue(objectMember(task, "status"))
	switch status {
	case "completed":
		if r := objectMember(task, "result"); r != nil {
			p.taskEnd(c, finalOutcome(nil, r))
			return true
		}
		go p.fetchResult(c)
		return false
	case "failed":
		o := finalOutcome(objectMember(task, "error"), task)
		if o.State != ledger.Failed {
			o.State, o.ExitCode, o.Reason = ledger.Failed, 1, "the task failed"
		}
		if msg, ok := stringValue(objectMember(task, "statusMessage")); ok {
			o.Reason += ": " + shorten(msg, 200)
		}
		p.taskEnd(c, o)
		return true
	case "cancelled":
		p.taskEnd(c, ledger.Outcome{State: ledger.Failed, ExitCode: 1, Stdout: output(task), Reason: "the task was cancelled"})
		return true
	}
	return false
}

// taskNotice reads a task status notification of the server's.
func (p *Proxy) taskNotice(m *message) {
	params := m.value(m.params)
	id, _ := stringValue(objectMember(params, "taskId"))
	p.mu.Lock()
	c := p.tasks[id]
	p.mu.Unlock()
	if c != nil {
		p.taskStatus(c, params)
	}
}

// taskEnd records the end of c's task as its outcome.
func (p *Proxy) taskEnd(c *call, o ledger.Outcome) {
	p.mu.Lock()
	live := p.tasks[c.taskID] == c
	if live {
		delete(p.tasks, c.taskID)
		if p.open[c.key] == c {
			delete(p.open, c.key)
		}
		p.recount()
	}
	p.mu.Unlock()
	if live {
		p.trace(c, fmt.Sprintf("task %s ended: %s", c.taskID, o.State))
		p.finish(c, p.final(c, o))
	}
}

// taskLive reports whether c's task is one idemkey still follows.
func (p *Proxy) taskLive(c *call) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tasks[c.taskID] == c && !p.closed
}

// Polling: the interval the server suggests, within these bounds.
const (
	minPoll     = 100 * time.Millisecond
	defaultPoll = time.Second
	maxPoll     = 30 * time.Second
)

// pollTask follows c's task while it lives: when the client has not
// asked about it for a poll interval, idemkey asks tasks/get itself.
func (p *Proxy) pollTask(c *call) {
	every := defaultPoll
	t := taskObject(c.handle)
	for _, name := range []string{"pollInterval", "pollIntervalMs"} {
		if ms, err := strconv.ParseFloat(string(objectMember(t, name)), 64); err == nil {
			every = time.Duration(ms * float64(time.Millisecond))
		}
	}
	every = min(max(every, minPoll), maxPoll)
	for p.taskLive(c) {
		select {
		case <-time.After(every):
		case <-p.ctx.Done():
			return
		}
		p.mu.Lock()
		idle := time.Since(c.seen) >= every
		p.mu.Unlock()
		if !idle || !p.taskLive(c) {
			continue
		}
		if errv, result, ok := p.ask(c, "tasks/get"); ok {
			p.taskRead(c, "tasks/get", errv, result)
		}
	}
}

// fetchResult asks tasks/result of c's completed task (2025-11-25: the
// result is not in tasks/get), unless the client asked it meanwhile.
func (p *Proxy) fetchResult(c *call) {
	if !p.taskLive(c) {
		return
	}
	if errv, result, ok := p.ask(c, "tasks/result"); ok {
		p.taskRead(c, "tasks/result", errv, result)
	}
}

// ask sends a request of idemkey's own about c's task, with the
// revision's _meta members of the call, and returns its answer.
func (p *Proxy) ask(c *call, method string) (errv, result []byte, ok bool) {
	params := []byte(`{"taskId":` + string(quoted(c.taskID)) + `}`)
	if len(c.meta) > 0 {
		params = setMembers(params, kv{"_meta", setMembers([]byte("{}"), c.meta...)})
	}
	return p.request(method, params, taskAskTimeout)
}

// taskAskTimeout bounds the wait for the answer to idemkey's own tasks/*
// request (tasks/result blocks until the task ends, which it has).
const taskAskTimeout = 30 * time.Second

// revisionMeta are the io.modelcontextprotocol/ members of a request's
// _meta (2026-07-28: the protocol version, the client's info and
// capabilities on every request).
func revisionMeta(meta []byte) []kv {
	if len(meta) == 0 || meta[0] != '{' {
		return nil
	}
	var out []kv
	at := map[string]int{}
	for _, m := range members(meta, 0) {
		n := m.name()
		if !strings.HasPrefix(n, "io.modelcontextprotocol/") {
			continue
		}
		if i, ok := at[n]; ok {
			out[i].raw = clone(meta[m.val:m.end]) // the last of a repeated name
			continue
		}
		at[n] = len(out)
		out = append(out, kv{n, clone(meta[m.val:m.end])})
	}
	return out
}

// replay is the answer to a repeat of a succeeded call: its recorded
// result, or, for a request that asks for a task where the call's was a
// task, the recorded handle (tasks/* requests about it are then answered
// from the record if the server no longer knows it).
func (p *Proxy) replay(c *call, rec *ledger.Record) []byte {
	handle := objectMember(rec.Meta, "task")
	id := taskHandle(handle)
	if !c.taskAug || id == "" || rec.Stdout.Truncated {
		return p.replayed(c, rec)
	}
	p.mu.Lock()
	p.replayedTasks[id] = rec
	p.recount()
	p.mu.Unlock()
	marks := []kv{{MetaReplayed, []byte("true")}, {MetaKey, quoted(rec.Key)}, {MetaAttempt, number(rec.Attempt)}, {MetaRecorded, quoted(stamp(rec.EndedAt))}}
	return setMembers(handle, kv{"_meta", setMembers(objectMember(handle, "_meta"), marks...)})
}

// replayedTaskAnswer answers a client's request about a task whose
// handle idemkey replayed and the server no longer knows: tasks/result
// with the recorded result, tasks/get and tasks/cancel with the task,
// completed (and its result, in the revision whose tasks/get has it).
func replayedTaskAnswer(id []byte, tr taskReq, errv []byte) []byte {
	rec := tr.replayed
	if rec.State != ledger.Succeeded {
		return errorResponse(id, codeInvalidParams, "idemkey: the server does not know this task, and its outcome is unknown: "+shorten(string(errv), 200))
	}
	result := replayResult(rec)
	if tr.method == "tasks/result" {
		return response(id, result)
	}
	handle := objectMember(rec.Meta, "task")
	task := setMembers(taskObject(handle), kv{"status", quoted("completed")}, kv{"_meta", nil})
	if rt, _ := stringValue(objectMember(handle, "resultType")); rt == "task" {
		task = setMembers(task, kv{"result", result})
	}
	return response(id, task)
}

// serverRequest reads a request of the server's to the client: an
// elicitation during a held call is tied to it (by its related task, or
// as the only call in flight), so that the user's answer is seen.
func (p *Proxy) serverRequest(m *message) {
	if m.method != "elicitation/create" {
		return
	}
	related, _ := stringValue(objectMember(objectMember(objectMember(m.value(m.params), "_meta"), "io.modelcontextprotocol/related-task"), "taskId"))
	p.mu.Lock()
	defer p.mu.Unlock()
	var c *call
	if related != "" {
		c = p.tasks[related]
	} else {
		for _, h := range p.calls {
			if !h.sent {
				continue
			}
			if c != nil {
				// More than one write in flight: which one asks is not
				// known, so none is judged by the answer.
				return
			}
			c = h
		}
	}
	if c != nil {
		p.elicits[m.idKey()] = c
	}
}

// clientAnswer reads the client's answer to a request of the server's.
func (p *Proxy) clientAnswer(m *message) {
	k := m.idKey()
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.elicits[k]
	if c == nil {
		return
	}
	delete(p.elicits, k)
	if m.result != nil && declined(m.value(m.result)) {
		c.declined = true
	}
}

// endOpen ends the open attempts when the session ends: a task that
// lives has an unknown outcome (the server may finish it); an input the
// client did not send leaves the call not done (failed: the next
// identical call runs again).
func (p *Proxy) endOpen(why string) {
	p.mu.Lock()
	var open []*call
	for k, c := range p.open {
		delete(p.open, k)
		if c.taskID != "" {
			delete(p.tasks, c.taskID)
		}
		open = append(open, c)
	}
	p.recount()
	p.mu.Unlock()
	for _, c := range open {
		if c.taskID != "" {
			p.finish(c, p.final(c, ledger.Outcome{State: ledger.Unknown, ExitCode: ledger.NoExit,
				Reason: fmt.Sprintf("the session ended while the call's task %s had not ended (%s): the server may finish it", c.taskID, why)}))
			continue
		}
		p.finish(c, ledger.Outcome{State: ledger.Failed, ExitCode: 1,
			Reason: "the server asked for input (input_required) and the session ended before the call was sent again with it"})
	}
}

// trace says what idemkey did with a held call (Options.Trace).
func (p *Proxy) trace(c *call, what string) {
	if p.o.Trace != nil {
		p.o.Trace(fmt.Sprintf("tools/call %s (id %s): key %s, attempt %d: %s", c.tool, c.id, c.key, c.attempt, what))
	}
}
