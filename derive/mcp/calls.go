package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idemkey/idemkey/derive/ledger"
)

// maxResult bounds the result a record keeps (the ledger holds a record
// in memory and in one row); a larger one keeps its length and sha256,
// and its replay says that the result was not kept.
const maxResult = 64 << 20

// completeTimeout bounds the write of an outcome.
const completeTimeout = 30 * time.Second

// toolsCall handles a tools/call request: it returns what to send on, or
// nil when idemkey answered it itself.
func (p *Proxy) toolsCall(m *message, answer func([]byte), inBatch bool) []byte {
	id := m.idRaw()
	params := m.value(m.params)
	if len(params) == 0 || params[0] != '{' {
		answer(errorResponse(id, codeInvalidParams, "Invalid params: tools/call takes a params object"))
		return nil
	}
	tool, ok := stringValue(objectMember(params, "name"))
	if !ok || tool == "" {
		answer(errorResponse(id, codeInvalidParams, "Invalid params: tools/call takes the tool's name in params.name"))
		return nil
	}
	c := &call{id: clone(id), idKey: m.idKey(), tool: tool, args: clone(objectMember(params, "arguments")), task: p.o.Task, pol: p.policy(tool)}
	if p.o.TaskMeta != "" {
		c.task, _ = stringValue(objectMember(objectMember(params, "_meta"), p.o.TaskMeta))
	}
	if p.mode(tool) == ModePass {
		p.logCall(c, "passed")
		return m.raw
	}
	if c.task == "" {
		// A write without a task scope would share its key with every
		// task's: never sent unkeyed.
		p.o.Diag(fmt.Sprintf("tools/call %s (id %s) has no task id in params._meta[%q]: answered with an error, not sent", tool, id, p.o.TaskMeta))
		answer(errorResponse(id, codeInvalidParams, fmt.Sprintf("Invalid params: idemkey needs this call's task id in params._meta[%q], set by the harness; the call was not sent", p.o.TaskMeta)))
		return nil
	}
	c.keyArg = c.pol.KeyArg
	keyMsg := m.raw
	if c.keyArg != "" && objectMember(c.args, c.keyArg) != nil {
		// The argument idemkey sets is not the model's to choose, and the
		// key never covers what idemkey inserts.
		keyMsg = setMembers(m.raw, kv{"params", setMembers(params, kv{"arguments", setMembers(c.args, kv{c.keyArg, nil})})})
		p.o.Diag(fmt.Sprintf("tools/call %s (id %s): the client's argument %q is replaced by the key, and is not part of it", tool, id, c.keyArg))
	}
	d, err := p.derive(c, keyMsg)
	if err != nil {
		p.logCall(c, "refused")
		answer(response(id, toolError("idemkey: this call was not sent: its idempotency key could not be derived: "+err.Error(), kv{MetaOutcome, quoted("unkeyed")})))
		return nil
	}
	c.d, c.key = d, d.Key
	c.taskAug = objectMember(params, "task") != nil
	c.meta = revisionMeta(objectMember(params, "_meta"))
	if fwd, done := p.reopen(c, m, answer); done {
		return fwd
	}
	if !inBatch && p.reconciler(c) != nil && p.mayReconcile(c) {
		// A reconcile may take up to its timeout: the client's other
		// messages go on meanwhile, as they do while a call waits.
		p.waitFor(c, m, false)
		return nil
	}
	held, err := p.hold(p.ctx, c, 0)
	if err != nil {
		p.ledgerDown(c, err, answer)
		return nil
	}
	if held.Action == ledger.ActBusy && p.o.Wait > 0 && !inBatch {
		p.waitFor(c, m, true)
		return nil
	}
	return p.decided(c, m, held, answer)
}

// derive is the key of the tools/call request msg (the whole message as
// the client sent it, without a KeyArg argument) for the call's task and
// its tool's selection, as idemkey key --from mcp --task TASK derives it
// from the same bytes, and the canonical whole arguments its fingerprint
// covers. It runs on the client's reader alone: p.spec's parsers are
// reused.
func (p *Proxy) derive(c *call, msg []byte) (derived, error) {
	s := &p.spec
	s.Task = c.task
	s.Only, s.Omit, s.OnlyName, s.OmitName = c.pol.Select.Only, c.pol.Select.Omit, c.pol.Select.OnlyName, c.pol.Select.OmitName
	lc, err := s.Load(msg)
	if err != nil {
		return derived{}, err
	}
	var sum [32]byte
	if k := p.o.Key; k.Secret != nil {
		sum = lc.Call.HMAC(k.Secret)
	} else {
		sum = lc.Call.Key()
	}
	req := append([]byte(`{"args":`), lc.Args.Append(nil)...)
	return derived{Key: string(p.o.Key.Format.Append(nil, sum)), Request: append(req, '}')}, nil
}

// mayReconcile reports whether the call's key is recorded unknown, or
// running (its holder may be dead: the claim reads that as unknown).
func (p *Proxy) mayReconcile(c *call) bool {
	rec, _, err := p.o.Store.Get(p.ctx, c.key)
	return err == nil && rec != nil && (rec.State == ledger.Unknown || rec.State == ledger.Running)
}

// reconciler is the call's tool's reconcile (nil for none),
// told the call's whole canonical arguments when the record did not keep
// them (Record.Request), stopped when the session ends; the output of a
// Happened answer becomes the tool's result (reconciledResult).
func (p *Proxy) reconciler(c *call) ledger.Reconciler {
	rc := c.pol.Reconcile
	if rc == nil {
		return nil
	}
	return func(ctx context.Context, rec *ledger.Record) ledger.Reconciliation {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(p.ctx, cancel)()
		r := *rec
		if len(r.Request) == 0 {
			r.Request = c.d.Request
		}
		ans := rc(ctx, &r)
		if ans.Verdict == ledger.Happened {
			ans.Output = ReconciledOutput(ans.Output)
		}
		return ans
	}
}

// ReconciledOutput is the tool result a reconcile command's standard
// output (kept whole) stands for, as a record keeps it: the output itself
// when it is a CallToolResult (a JSON object with a content array; MCP
// server/tools, "Tool Result"), else a result whose one text content is
// the output. An output too large to keep stays as it is (its replay
// says so).
func ReconciledOutput(o ledger.Output) ledger.Output {
	if o.Truncated || len(o.Data) == 0 {
		return o // its replay says that no result was kept
	}
	return output(reconciledResult(o.Data))
}

func reconciledResult(stdout []byte) []byte {
	i := skipSpace(stdout, 0)
	if i < len(stdout) && stdout[i] == '{' && validJSON(stdout) == nil {
		if content := objectMember(stdout, "content"); len(content) > 0 && content[0] == '[' {
			return clone(bytes.TrimSpace(stdout))
		}
	}
	return []byte(`{"content":[{"type":"text","text":` + string(quoted(string(stdout))) + `}]}`)
}

// sayReconciled says what a reconcile that ran for the call answered and
// what follows from it.
func (p *Proxy) sayReconciled(c *call, held *ledger.Held) {
	r := held.Reconciled
	if r == nil {
		return
	}
	note := ""
	if r.Note != "" {
		note = ": " + r.Note
	}
	what := fmt.Sprintf("reconciled %s (tools/call %s)", c.key, c.tool)
	switch {
	case r.Verdict == ledger.Happened && r.Duplicated:
		p.o.Diag(fmt.Sprintf("warning: %s: the owner says the effect happened more than once (duplicated)%s; recorded as succeeded, answered from the reconcile's output, not sent again; undo the extra effect with the owner", what, note))
	case r.Verdict == ledger.Happened:
		p.o.Diag(fmt.Sprintf("%s: the owner says the effect happened%s; recorded as succeeded, answered from the reconcile's output, not sent again", what, note))
	case r.Verdict == ledger.NotHappened && held.Action == ledger.ActRun:
		p.o.Diag(fmt.Sprintf("%s: the owner says the effect did not happen%s; sending it as attempt %d, with the same key", what, note, held.Hold.Attempt()))
	case held.Action == ledger.ActRun:
		p.o.Diag(fmt.Sprintf("the reconcile of %s (tools/call %s) could not tell%s; --recover retry: sending it as attempt %d, with the same key", c.key, c.tool, note, held.Hold.Attempt()))
	default:
		p.o.Diag(fmt.Sprintf("the reconcile of %s (tools/call %s) could not tell%s", c.key, c.tool, note))
	}
}

// hold claims the call's key through the ledger's one loop.
func (p *Proxy) hold(ctx context.Context, c *call, wait time.Duration) (*ledger.Held, error) {
	policy := c.pol.Recover
	if policy == "" {
		policy = ledger.RecoverFail
	}
	req := ledger.KeptRequest(c.d.Request)
	return ledger.Hold(ctx, p.o.Store, ledger.HoldRequest{
		Claim: ledger.ClaimRequest{
			Record: ledger.Record{
				Key: c.key, Task: c.task, Tool: c.tool, Kind: "mcp",
				Fingerprint: fingerprint(c.d.Request), Request: req, Holder: p.o.Holder,
			},
			Lease: p.o.Lease, Recover: policy, Retain: p.o.Retain, HolderAlive: p.o.HolderAlive,
		},
		Wait:      wait,
		Locker:    p.o.Locker,
		Reconcile: p.reconciler(c),
		Events: ledger.HoldEvents{
			Reconciling: func(rec *ledger.Record) {
				p.o.Diag(fmt.Sprintf("the outcome of attempt %d of %s (tools/call %s) is unknown: asking the owner (--reconcile)", rec.Attempt, c.key, c.tool))
			},
			Waiting: func(rec *ledger.Record) {
				who := ""
				if rec != nil {
					who = fmt.Sprintf(" (attempt %d, by %s)", rec.Attempt, ledger.HolderName(rec.Holder))
				}
				p.o.Diag(fmt.Sprintf("%s (tools/call %s) is in flight%s: waiting up to %s", c.key, c.tool, who, p.o.Wait))
			},
			RenewFailed: func(err error) {
				p.o.Diag(fmt.Sprintf("warning: renewing the lease of %s failed (retried): %v", c.key, err))
			},
			Lost: func(err error) {
				p.o.Diag(fmt.Sprintf("warning: the hold of %s (tools/call %s) was lost while the server works on it: %v", c.key, c.tool, err))
			},
		},
	})
}

// decided acts on the ledger's decision for a call: it returns the call
// to send (ActRun), or answers it and returns nil.
func (p *Proxy) decided(c *call, m *message, held *ledger.Held, answer func([]byte)) []byte {
	rec := held.Record
	p.sayReconciled(c, held)
	switch held.Action {
	case ledger.ActRun:
		c.hold, c.attempt = held.Hold, held.Hold.Attempt()
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			p.finish(c, ledger.Outcome{State: ledger.Failed, ExitCode: 1, Reason: "not sent: the session ended first"})
			return nil
		}
		c.sent, c.sentAt = true, time.Now()
		p.calls[c.idKey] = c
		p.recount()
		p.mu.Unlock()
		p.logCall(c, "forwarded")
		return rewriteCall(m, c.key, c.attempt, c.keyArg)
	case ledger.ActReplay:
		c.attempt = rec.Attempt
		p.logCall(c, "replayed")
		answer(response(c.id, p.replay(c, rec)))
	case ledger.ActBusy:
		action := "refused"
		if c.waited {
			action = "waited"
		}
		p.logCall(c, action)
		answer(response(c.id, toolError(busyText(c.key, rec, p.o.Wait), outcomeMeta(c.key, rec, "busy")...)))
	case ledger.ActUnknown:
		p.logCall(c, "refused")
		text := unknownText(c.key, rec.Attempt, rec.StartedAt, rec.Holder, rec.Reason)
		if r := held.Reconciled; r != nil {
			text += " The owner was asked (--reconcile) and could not tell: " + r.Note + "."
		}
		answer(response(c.id, toolError(text, outcomeMeta(c.key, rec, "unknown")...)))
	case ledger.ActMismatch:
		p.logCall(c, "refused")
		what := ledger.DescribeDifference(rec.Request, c.d.Request)
		answer(response(c.id, toolError(mismatchText(c.key, rec, what), outcomeMeta(c.key, rec, "mismatch")...)))
	}
	return nil
}

// waitFor holds the call's key in a goroutine of its own (waiting for
// it when it is in flight elsewhere, or reconciling it), then acts on
// what the ledger decides; the client's other messages go on meanwhile. A
// cancellation of the call drops it unsent; it ends a wait if
// cancellable, but never a reconcile, whose answer must be recorded.
func (p *Proxy) waitFor(c *call, m *message, cancellable bool) {
	m = readMessage(clone(m.raw)) // the line's buffer is the reader's
	ctx, cancel := context.WithCancel(p.ctx)
	if !cancellable {
		ctx = p.ctx
	}
	c.cancel = cancel
	p.mu.Lock()
	p.calls[c.idKey] = c
	p.recount()
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer cancel()
		held, err := p.hold(ctx, c, p.o.Wait)
		c.waited = err == nil && held.Waited
		p.mu.Lock()
		still := p.calls[c.idKey] == c && !p.closed
		if still {
			delete(p.calls, c.idKey)
			p.recount()
		}
		p.mu.Unlock()
		switch {
		case !still:
			// Cancelled (or the session ended) meanwhile: nothing is sent
			// and nothing answered (MCP: a cancelled request gets no
			// answer).
			if err == nil && held.Hold != nil {
				c.hold = held.Hold
				p.finish(c, ledger.Outcome{State: ledger.Failed, ExitCode: 1, Reason: "not sent: cancelled while it waited"})
			}
		case err != nil:
			p.ledgerDown(c, err, p.toClient)
		default:
			if fwd := p.decided(c, m, held, p.toClient); fwd != nil {
				p.send(fwd, c.id)
			}
		}
	}()
}

// ledgerDown answers a call that could not be claimed: it is not sent.
func (p *Proxy) ledgerDown(c *call, err error, answer func([]byte)) {
	p.logCall(c, "refused")
	p.o.Diag(fmt.Sprintf("tools/call %s (id %s) not sent: the ledger failed: %v", c.tool, c.id, err))
	answer(errorResponse(c.id, codeInternalError, "idemkey: the ledger is unavailable, so this call was not sent: "+err.Error()))
}

// cancelled handles the client's notifications/cancelled (MCP
// basic/utilities/cancellation) and reports whether to send it on. A
// call idemkey sent is recorded unknown: the server may have acted on it
// before it saw the cancellation. A call still waiting is dropped, and
// the notification with it (the server never saw the request).
func (p *Proxy) cancelled(m *message) bool {
	k, ok := idKey(objectMember(m.value(m.params), "requestId"))
	if !ok {
		return true
	}
	p.mu.Lock()
	c := p.calls[k]
	if c != nil {
		delete(p.calls, k)
	}
	delete(p.lists, k)
	delete(p.taskReqs, k)
	p.untrack(k)
	p.recount()
	p.mu.Unlock()
	switch {
	case c == nil:
		return true
	case !c.sent:
		c.cancel()
		return false
	}
	p.finish(c, ledger.Outcome{State: ledger.Unknown, ExitCode: ledger.NoExit,
		Reason: "cancelled by the client after it was sent (notifications/cancelled): the server may have acted on it"})
	return true
}

// complete records the outcome the server's response gives a held call,
// when it is the call's final answer (see answered): succeeded with the
// whole result, or failed for a result with isError true or a JSON-RPC
// error.
func (p *Proxy) complete(c *call, m *message) {
	var errv, result []byte
	if m.err != nil && m.result == nil {
		errv = m.value(m.err)
	} else {
		result = m.value(m.result)
		if !p.answered(c, result) {
			return
		}
	}
	p.finish(c, p.final(c, finalOutcome(errv, result)))
}

// finalOutcome is the outcome a final answer gives: its JSON-RPC error
// errv, or its result.
func finalOutcome(errv, result []byte) ledger.Outcome {
	o := ledger.Outcome{State: ledger.Succeeded}
	switch {
	case errv != nil:
		o.State, o.ExitCode, o.Stdout = ledger.Failed, 1, output(errv)
		o.Reason = "the server answered with a JSON-RPC error: " + shorten(string(errv), 200)
	case isTrue(objectMember(result, "isError")):
		o.State, o.ExitCode, o.Stdout = ledger.Failed, 1, output(result)
		o.Reason = "the tool's result has isError: true"
	default:
		o.Stdout = output(result)
	}
	return o
}

// lose records a sent call's outcome as unknown and answers it so.
func (p *Proxy) lose(c *call, why string) {
	p.finish(c, ledger.Outcome{State: ledger.Unknown, ExitCode: ledger.NoExit, Reason: why})
	rec := &ledger.Record{Key: c.key, Attempt: c.attempt, StartedAt: c.sentAt, Holder: p.o.Holder}
	p.toClient(response(c.id, toolError(unknownText(c.key, c.attempt, c.sentAt, p.o.Holder, why), outcomeMeta(c.key, rec, "unknown")...)))
}

// finish completes a held call's attempt.
func (p *Proxy) finish(c *call, o ledger.Outcome) {
	if c.hold == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), completeTimeout)
	defer cancel()
	comp := c.hold.Complete(ctx, o)
	if comp.Err != nil && !errors.Is(comp.Err, ledger.ErrCompleted) {
		p.o.Diag(fmt.Sprintf("warning: the outcome (%s) of attempt %d of %s (tools/call %s) was not recorded: %v", o.State, c.attempt, c.key, c.tool, comp.Err))
	}
}

// output is a result as a record keeps it.
func output(b []byte) ledger.Output {
	o := ledger.Output{Length: int64(len(b)), SHA256: fingerprint(b)}
	if len(b) > maxResult {
		o.Truncated = true
		return o
	}
	o.Data = clone(b)
	return o
}

// rewriteCall is the call as idemkey sends it: the key and the attempt in
// params._meta, and, with keyArg, the key in that argument too.
func rewriteCall(m *message, key string, attempt int64, keyArg string) []byte {
	params := m.value(m.params)
	set := []kv{{"_meta", setMembers(objectMember(params, "_meta"), kv{MetaKey, quoted(key)}, kv{MetaAttempt, number(attempt)})}}
	if keyArg != "" {
		set = append(set, kv{"arguments", setMembers(objectMember(params, "arguments"), kv{keyArg, quoted(key)})})
	}
	return setMembers(m.raw, kv{"params", setMembers(params, set...)})
}

// replayResult is a succeeded record's result, marked as replayed.
func replayResult(rec *ledger.Record) []byte {
	data := rec.Stdout.Data
	if len(data) > 0 && !rec.Stdout.Truncated && (data[0] != '{' || validJSON(data) != nil) {
		// Not a result: what a reconcile command printed, as
		// the answer's text.
		data = []byte(`{"content":[{"type":"text","text":` + string(quoted(string(data))) + `}]}`)
	}
	if len(data) == 0 || rec.Stdout.Truncated {
		why := "the ledger has none"
		if rec.Stdout.Truncated {
			why = fmt.Sprintf("it was %d bytes", rec.Stdout.Length)
		}
		text := fmt.Sprintf("idemkey: this call succeeded before (attempt %d, recorded at %s; %s), but its result was not kept (%s). It was not sent again.",
			rec.Attempt, stamp(rec.EndedAt), rec.Reason, why)
		data = []byte(`{"content":[{"type":"text","text":` + string(quoted(text)) + `}]}`)
	}
	marks := []kv{{MetaReplayed, []byte("true")}, {MetaKey, quoted(rec.Key)}, {MetaAttempt, number(rec.Attempt)}, {MetaRecorded, quoted(stamp(rec.EndedAt))}}
	return setMembers(data, kv{"_meta", setMembers(objectMember(data, "_meta"), marks...)})
}

// outcomeMeta are the _meta members of idemkey's own tool errors.
func outcomeMeta(key string, rec *ledger.Record, outcome string) []kv {
	meta := []kv{{MetaOutcome, quoted(outcome)}, {MetaKey, quoted(key)}}
	if rec != nil && rec.Attempt > 0 {
		meta = append(meta, kv{MetaAttempt, number(rec.Attempt)})
	}
	return meta
}

func busyText(key string, rec *ledger.Record, wait time.Duration) string {
	who := "another holder"
	if rec != nil && rec.State == ledger.Running {
		who = fmt.Sprintf("attempt %d, started at %s by %s", rec.Attempt, stamp(rec.StartedAt), ledger.HolderName(rec.Holder))
	}
	waited := "idemkey did not wait for it (--wait)"
	if wait > 0 {
		waited = fmt.Sprintf("idemkey waited %s for its outcome", wait)
	}
	return fmt.Sprintf("idemkey: this call is in flight (%s; key %s) and was not sent again; %s. Call it again later to get its result.", who, key, waited)
}

func unknownText(key string, attempt int64, started time.Time, holder, reason string) string {
	return fmt.Sprintf("idemkey: the outcome of this call is unknown, so it was not sent again: attempt %d (key %s), sent at %s by %s, ended without an answer: %s. "+
		"Check with the tool's owner whether it took effect, then settle it: idemkey ledger resolve %s --as succeeded (later calls get a recorded answer) or --as failed (the next call runs again); "+
		"an idemkey mcp started with --recover retry sends it again with the same key, for a server that dedupes by it.",
		attempt, key, stamp(started), ledger.HolderName(holder), reason, key)
}

func mismatchText(key string, rec *ledger.Record, what string) string {
	return fmt.Sprintf("idemkey: this call was not sent: its key %s was recorded for a call with other arguments (attempt %d, %s): %s. "+
		"One key must mean one call: if the difference does not matter, the recorded call stands; otherwise give this call its own key, or drop the record: idemkey ledger forget %s.",
		key, rec.Attempt, rec.State, what, key)
}

// stamp is a time as records show it.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

// clientBatch handles a JSON-RPC batch of the client's (JSON-RPC 2.0 §6),
// where the agreed revision has them (2025-03-26; 2025-06-18 removed
// them). Its messages are read one by one; those idemkey answers are
// answered in one batch of their own, the rest sent on as a batch (as
// written, when idemkey changed none). Another revision's batch is an
// Invalid Request, as its servers answer it: not sent on, so that no
// tools/call passes in it unkeyed.
func (p *Proxy) clientBatch(line []byte) {
	els := elements(line, skipSpace(line, 0))
	p.mu.Lock()
	version := p.version
	p.mu.Unlock()
	switch {
	case len(els) == 0:
		p.toClient(errorResponse(nil, codeInvalidRequest, "Invalid Request: an empty batch"))
		return
	case version != "2025-03-26":
		rev := "the revision agreed on (" + version + ")"
		if version == "" {
			rev = "a session before initialize"
		}
		p.toClient(errorResponse(nil, codeInvalidRequest, "Invalid Request: JSON-RPC batches are not part of "+rev+"; only MCP 2025-03-26 has them"))
		return
	}
	var local, fwd, ids [][]byte
	changed := false
	for _, e := range els {
		el := line[e[0]:e[1]]
		if el[0] != '{' {
			// Not a message: answered here, never sent on (a server that
			// reads it otherwise could run a call idemkey did not see).
			local = append(local, errorResponse(nil, codeInvalidRequest, "Invalid Request: a batch element that is not an object"))
			changed = true
			continue
		}
		f, id := p.clientMessage(readMessage(el), func(b []byte) { local = append(local, b) }, true)
		if f == nil {
			changed = true
			continue
		}
		changed = changed || len(f) != len(el) || &f[0] != &el[0]
		fwd = append(fwd, f)
		if id != nil {
			ids = append(ids, id)
		}
	}
	if len(local) > 0 {
		p.toClient(joinArray(local))
	}
	switch {
	case len(fwd) == 0:
	case !changed:
		p.sendIDs(line, ids)
	default:
		p.sendIDs(joinArray(fwd), ids)
	}
}

func joinArray(parts [][]byte) []byte {
	out := []byte{'['}
	for i, b := range parts {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, b...)
	}
	return append(out, ']')
}

// logCall appends the call's record to the log: one JSON Lines record in
// the call shape `idemkey drift` reads by default ({"task","tool","args"};
// the request id is "request_id", never "id", which drift would take for
// the model's call id), with the time, the key, the attempt and what
// idemkey did: passed, forwarded, replayed, waited or refused.
func (p *Proxy) logCall(c *call, action string) {
	if p.o.Trace != nil {
		line := fmt.Sprintf("tools/call %s (id %s, task %q): %s", c.tool, c.id, c.task, action)
		if c.key != "" {
			line += fmt.Sprintf(", key %s, attempt %d", c.key, c.attempt)
		}
		p.o.Trace(line)
	}
	if p.o.Log == nil || c.task == "" {
		return
	}
	p.logMu.Lock()
	defer p.logMu.Unlock()
	b := append(p.logBuf[:0], `{"time":`...)
	b = appendQuoted(b, p.o.Now().UTC().Format(time.RFC3339Nano))
	b = append(b, `,"task":`...)
	b = appendQuoted(b, c.task)
	b = append(b, `,"tool":`...)
	b = appendQuoted(b, c.tool)
	b = append(b, `,"args":`...)
	if c.args != nil {
		b = append(b, c.args...)
	} else {
		b = append(b, `{}`...)
	}
	b = append(b, `,"request_id":`...)
	b = append(b, c.id...)
	if c.key != "" {
		b = append(b, `,"key":`...)
		b = appendQuoted(b, c.key)
	}
	if c.attempt > 0 {
		b = append(b, `,"attempt":`...)
		b = append(b, number(c.attempt)...)
	}
	b = append(b, `,"action":`...)
	b = appendQuoted(b, action)
	b = append(b, "}\n"...)
	if _, err := p.o.Log.Write(b); err != nil {
		p.o.Diag("warning: writing the log: " + err.Error())
	}
	if cap(b) > bigLine {
		b = nil
	}
	p.logBuf = b
}
