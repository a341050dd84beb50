// Package mcp is the library behind `idemkey mcp`: a raw, message-preserving
// proxy between an MCP client (on standard input and output) and an MCP
// server (a stdio child, or a Streamable HTTP endpoint) that gives every
// write tool call an idempotency key derived by the harness and makes it
// happen once, through the ledger's one claim loop (ledger.Hold).
//
// Every message passes through as it was written (MCP basic/index:
// JSON-RPC 2.0 requests, notifications and responses; basic/transports:
// one message a line on stdio), in the order of its stream, except the
// tools/call requests of write tools and their answers:
//
//   - the first call is claimed, then forwarded with the key and the
//     attempt in params._meta (MetaKey, MetaAttempt); its final answer is
//     recorded (succeeded with the whole result, or failed for isError
//     true or a JSON-RPC error) before it is passed on; an answer that
//     does not end the call (input required, a task) leaves the attempt
//     open (outcome.go);
//   - a repeat of a succeeded call is answered from the ledger, under the
//     new request's id, its result marked in _meta (MetaReplayed);
//   - a call in flight elsewhere, an unknown outcome (the server, the
//     proxy or the machine died, or the client cancelled it after it was
//     sent) and a key recorded for other arguments are answered with a
//     tool error result (isError: true) the model can read, never sent.
//
// Which tools are writes: all, except those whose tools/list annotations
// say readOnlyHint: true (tracked as tools/list results pass), unless the
// tool's ToolPolicy.Mode says otherwise. The package imports no os and no CLI
// package: the caller starts the server and opens the ledger.
package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/derive"
	"github.com/idemkey/idemkey/derive/ledger"
)

// The _meta members idemkey writes (MCP basic/index, "General fields":
// _meta keys take a reverse-DNS prefix and a slash).
const (
	MetaKey      = "com.github.idemkey/idempotency-key" // the call's key, on the forwarded request and on idemkey's answers
	MetaAttempt  = "com.github.idemkey/attempt"         // the attempt number, 1, 2, …
	MetaReplayed = "com.github.idemkey/replayed"        // true on a result answered from the ledger
	MetaRecorded = "com.github.idemkey/recorded-at"     // when a replayed result was recorded (RFC 3339)
	MetaOutcome  = "com.github.idemkey/outcome"         // on idemkey's tool errors: busy, unknown, mismatch, unkeyed
)

// Mode is how a tool's calls are handled.
type Mode int

const (
	// ModeAuto: by the tool's tools/list annotations, once unless they
	// say readOnlyHint: true.
	ModeAuto Mode = iota
	// ModeOnce: keyed, recorded, and made once.
	ModeOnce
	// ModePass: passed through untouched, never recorded.
	ModePass
)

// derived is a call's key and the text its fingerprint is computed from.
type derived struct {
	Key string
	// Request is the canonical form of what must match for a replay
	// ({"args":…}, the whole arguments), kept in the record to show a
	// mismatch.
	Request []byte
}

// ToolPolicy is how one tool's calls are handled: plain values the face
// resolves once (from its flags, environment and config file) and the
// proxy reads for every call of the tool.
type ToolPolicy struct {
	// Mode says how the tool's calls are handled (ModeAuto: by its
	// tools/list annotations).
	Mode Mode
	// KeyArg names the argument that also carries the key ("" for none);
	// the key never covers it.
	KeyArg string
	// Select is the part of the arguments the key covers (--only, then
	// --omit; none: the whole arguments), and how its lists are named in
	// messages ("": --only, --omit).
	Select derive.Selection
	// Recover is the policy for an unknown outcome ("": fail).
	Recover ledger.Policy
	// Reconcile, if set, asks the owner about an unknown outcome of the
	// tool's call before the recovery policy applies
	// (ledger.HoldRequest.Reconcile), under the key's claim. A Happened
	// answer's Output is the call's result (ReconciledOutput), replayed;
	// NotHappened sends the call as the next attempt; Undecided leaves
	// it to Recover. It is told the call's whole canonical arguments
	// when the record did not keep them.
	Reconcile ledger.Reconciler
	// ReplayNote: the tool's replayed results end with a text item
	// saying they are replays.
	ReplayNote bool
}

// Keying is how a write call's key is derived, exactly as `idemkey key
// --from mcp --task TASK` derives it from the same bytes with the tool's
// ToolPolicy.Select.
type Keying struct {
	Scheme canon.Scheme
	// AllowMissing lets --only pointers that match nothing be ignored.
	AllowMissing bool
	// Format lays out the key (the zero Format: hex, no prefix).
	Format derive.Format
	// Secret, if set, makes the key an HMAC-SHA-256 under it.
	Secret []byte
	// Warn, if set, gets the warnings about a call's key (an --omit
	// pointer that matched nothing). A function, as Diag is: how a
	// warning is shown (its hint, how often) is the face's.
	Warn func(derive.Warning)
}

// Options configure a Proxy.
type Options struct {
	// Task is the task id of every call; TaskMeta, if set instead, names
	// the params._meta member that carries each call's task id.
	Task, TaskMeta string
	// Default is the policy of a tool Tools does not name; a tool Tools
	// names has its own, whole (no field of it falls back to Default).
	Default ToolPolicy
	Tools   map[string]ToolPolicy
	// Key is how a write call's key is derived.
	Key Keying
	// The ledger: its store, its kernel lock per key (nil on a lease
	// store), the lease of a call in flight, how long a call in flight
	// elsewhere is waited for, how long a finished record counts, and
	// the holder's name (host and pid).
	Store               ledger.Store
	Locker              ledger.KeyLocker
	Lease, Wait, Retain time.Duration
	Holder              string
	// HolderAlive, if set, is asked whether the recorded holder of a
	// running record whose kernel lock is free still lives (see
	// ledger.ClaimRequest.HolderAlive). A function: it asks the
	// operating system, which this package does not touch.
	HolderAlive ledger.HolderCheck
	// ServerURL is the Streamable HTTP server's URL ("" for a stdio
	// server): its secrets (see Redactor) are taken out of every reason
	// recorded, error told to the client and diagnostic about the server.
	ServerURL string
	// Log, if set, gets one JSON Lines record per tools/call (see
	// logCall), in the shape `idemkey drift` reads: a writer, the face's
	// file.
	Log io.Writer
	// Diag gets idemkey's diagnostics, one line each (for stderr); a
	// function, since where and how they are shown is the face's.
	Diag func(msg string)
	// Trace, if set, gets a line for each tools/call idemkey handles; a
	// function, as Diag is.
	Trace func(msg string)
	// Now is the clock of the log's times (nil: time.Now); a function,
	// so that a test can set the times.
	Now func() time.Time
	// MaxMessage caps one message from either side, in bytes (0:
	// DefaultMaxMessage): past it, the stream it came on is dropped, and
	// the calls waiting for an answer on it are unknown.
	MaxMessage int64
}

// Proxy is one client's session through idemkey. Use it once.
type Proxy struct {
	o Options
	// pols are Options.Tools, each policy once; redact takes the server
	// URL's secrets out of a text (Redactor).
	pols   map[string]*ToolPolicy
	redact func(string) string
	// spec derives the keys; it runs on the client's reader alone, so
	// its parsers are reused.
	spec derive.Spec
	up   Upstream
	out  io.Writer
	ctx  context.Context

	outMu  sync.Mutex
	outBuf []byte
	outErr error

	logMu  sync.Mutex
	logBuf []byte

	mu       sync.Mutex
	calls    map[string]*call          // tools/call requests held: sent, or waiting for a holder elsewhere
	lists    map[string]bool           // tools/list requests in flight
	initID   string                    // the initialize request in flight
	version  string                    // the protocol revision agreed on
	tools    map[string]bool           // the tools listed, and whether their annotations say readOnlyHint: true
	listed   bool                      // a tools/list result was seen since the last list_changed
	listings int                       // idemkey's own listings (see listTools)
	own      map[string]chan ownAnswer // idemkey's own requests in flight: their answers
	owns     int                       // idemkey's own requests so far (their ids)
	inflight map[string]int            // the client's other requests sent and not answered, by id
	open     map[string]*call          // attempts answered but not ended, by key: input required, or a task that lives
	tasks    map[string]*call          // the attempts whose task lives, by the server's task id
	taskReqs map[string]taskReq        // the client's tasks/get, tasks/result and tasks/cancel in flight, by id
	elicits  map[string]*call          // the server's elicitation/create requests in flight, by id, and the write they are part of
	// replayedTasks are the task handles idemkey answered from the
	// ledger, by task id: what a tasks/* request about them is answered
	// with when the server no longer knows the task.
	replayedTasks map[string]*ledger.Record
	closed        bool
	watch         atomic.Int64 // len(calls) + len(lists) + (initID != ""): the server's messages are read only when > 0

	wg sync.WaitGroup // the calls waiting for a holder elsewhere
}

// call is a tools/call request idemkey holds.
type call struct {
	id, args  []byte // as the client wrote them (copies)
	idKey     string
	task      string
	tool, key string
	keyArg    string
	pol       *ToolPolicy
	d         derived
	hold      *ledger.Holding // once claimed
	attempt   int64
	sent      bool
	sentAt    time.Time
	waited    bool
	cancel    context.CancelFunc // of a wait
	// meta are the request's io.modelcontextprotocol/ _meta members
	// (2026-07-28: every request carries them), for idemkey's own
	// requests about the call's task.
	meta []kv
	// taskAug: the request asked for a task (params.task, 2025-11-25).
	taskAug bool
	// taskID and handle: the server answered with a task (its
	// CreateTaskResult), which lives until its end is learnt.
	taskID string
	handle []byte
	// declined: the user declined or cancelled an elicitation the
	// server made as part of this call.
	declined bool
	// seen is when the client last asked about the call's task.
	seen time.Time
}

// New returns a proxy with the options o.
func New(o Options) *Proxy {
	if o.Diag == nil {
		o.Diag = func(string) {}
	}
	redact := Redactor(o.ServerURL)
	diag := o.Diag
	o.Diag = func(msg string) { diag(redact(msg)) }
	if o.Trace != nil {
		trace := o.Trace
		o.Trace = func(msg string) { trace(redact(msg)) }
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	pols := make(map[string]*ToolPolicy, len(o.Tools))
	for name, t := range o.Tools {
		pols[name] = &t
	}
	return &Proxy{o: o, pols: pols, redact: redact,
		spec:  derive.Spec{From: derive.FromMCP, FromSet: true, Scheme: o.Key.Scheme, AllowMissing: o.Key.AllowMissing, Warn: o.Key.Warn},
		calls: map[string]*call{}, lists: map[string]bool{}, tools: map[string]bool{}, own: map[string]chan ownAnswer{},
		inflight: map[string]int{}, open: map[string]*call{}, tasks: map[string]*call{}, taskReqs: map[string]taskReq{},
		elicits: map[string]*call{}, replayedTasks: map[string]*ledger.Record{}}
}

// policy is the tool's policy: its own in Options.Tools, or the
// default.
func (p *Proxy) policy(tool string) *ToolPolicy {
	if t, ok := p.pols[tool]; ok {
		return t
	}
	return &p.o.Default
}

// MaxMessage is the cap on one message from either side (Options.
// MaxMessage), for the upstream's reading.
func (p *Proxy) MaxMessage() int64 {
	if p.o.MaxMessage > 0 {
		return p.o.MaxMessage
	}
	return DefaultMaxMessage
}

// ErrServerGone is returned by Serve when the server ended the session
// before the client did (its process exited, its output closed).
var ErrServerGone = errors.New("the server has gone")

// Serve passes messages between the client (it reads client, writes out)
// and up until one side ends: when the client's input ends, the calls
// waiting for a holder elsewhere end (within Options.Wait), the server is
// told (Upstream.Close) and Serve waits for it to go; when the server goes
// first, Serve returns an error wrapping ErrServerGone; when ctx ends, as
// when the client's input ends, without the waits. Calls in flight when
// the server goes are recorded unknown and answered so.
func (p *Proxy) Serve(ctx context.Context, client io.Reader, out io.Writer, up Upstream) error {
	p.ctx, p.out, p.up = ctx, out, up
	srv := make(chan error, 1)
	go func() { srv <- up.Run(ctx, p) }()
	cli := make(chan error, 1)
	go func() { cli <- p.readClient(client) }()
	select {
	case err := <-srv:
		why := "the server closed its output"
		if err != nil {
			why = "the server's output ended: " + err.Error()
		}
		p.serverGone(why)
		p.wg.Wait()
		return fmt.Errorf("%w (%s)", ErrServerGone, why)
	case err := <-cli:
		if err != nil {
			p.o.Diag("reading the client: " + err.Error())
		}
		// The client's input ended: the calls waiting for a holder
		// elsewhere end first (within --wait; their answers still go
		// out), then the server is told.
		waits := make(chan struct{})
		go func() { p.wg.Wait(); close(waits) }()
		select {
		case <-waits:
		case <-ctx.Done():
		}
	case <-ctx.Done():
		// Told to stop (a signal).
	}
	p.stopWaits()
	up.Close()
	err := <-srv
	if errors.Is(err, ErrServerGone) {
		// The server ended the session before the client's input ended
		// (a client that closed on reading the answers the server left).
		why := "the server's output ended: " + err.Error()
		p.serverGone(why)
		p.wg.Wait()
		return fmt.Errorf("%w (%s)", ErrServerGone, why)
	}
	why := "the server ended after the client went"
	if err != nil {
		why += ": " + err.Error()
	}
	p.serverGone(why)
	p.wg.Wait()
	return nil
}

// readClient reads the client's messages, one a line, until its input
// ends. A last line without its newline is a message if it is whole.
func (p *Proxy) readClient(r io.Reader) error {
	lr := newLineReaderMax(r, p.o.MaxMessage)
	for {
		line, err := lr.next()
		switch {
		case err == errCut && validJSON(line) != nil:
			p.o.Diag("the client's input ended in the middle of a message: it was not passed on")
			return nil
		case err == io.EOF:
			return nil
		case err != nil && err != errCut:
			return err
		}
		if !blank(line) {
			p.fromClient(line)
		}
		if err == errCut {
			return nil
		}
	}
}

// fromClient handles one line of the client's.
func (p *Proxy) fromClient(line []byte) {
	if err := validJSON(line); err != nil {
		// JSON-RPC 2.0 §5.1: invalid JSON is answered with a parse error
		// (id null); it is not passed on, so that no server reads into
		// it a call idemkey did not see.
		p.o.Diag(fmt.Sprintf("the client sent a line that is not JSON (%v): answered with a parse error", err))
		p.toClient(errorResponse(nil, codeParseError, "Parse error: "+err.Error()))
		return
	}
	if line[skipSpace(line, 0)] == '[' {
		p.clientBatch(line)
		return
	}
	m := readMessage(line)
	if fwd, id := p.clientMessage(m, p.toClient, false); fwd != nil {
		p.send(fwd, id)
	}
}

// clientMessage handles one message of the client's (alone, or in a
// batch) and returns what to send on (nil: nothing) and, for a request,
// its id. answer takes idemkey's own answers.
func (p *Proxy) clientMessage(m *message, answer func([]byte), inBatch bool) (fwd, id []byte) {
	if name := repeated(m.ms, "method", "id", "params"); name != "" {
		return p.ambiguous(m, answer, "the member "+name)
	}
	switch m.kind {
	case kindRequest:
		id = m.idRaw()
		k := m.idKey()
		p.mu.Lock()
		_, held := p.calls[k]
		busy := held || m.method == "tools/call" && p.inflight[k] > 0
		p.mu.Unlock()
		if busy {
			// An answer must be taken for one request only (MCP: an id is
			// never reused in a session): a tools/call idemkey holds, or a
			// tools/call whose id another request in flight has, would
			// get the other's answer recorded as its outcome.
			answer(errorResponse(id, codeInvalidRequest, "Invalid Request: the id "+string(id)+" is in use by a request in flight"))
			return nil, nil
		}
		switch m.method {
		case "tools/call":
			if m.params != nil && m.raw[m.params.val] == '{' {
				if name := repeated(members(m.raw, m.params.val), "name", "arguments", "_meta"); name != "" {
					return p.ambiguous(m, answer, "the member params."+name)
				}
			}
			if fwd = p.toolsCall(m, answer, inBatch); fwd == nil {
				return nil, nil
			}
			if len(fwd) == len(m.raw) && &fwd[0] == &m.raw[0] {
				p.track(k) // passed through: its id is in flight
			}
			return fwd, id
		case "tools/list":
			p.mu.Lock()
			p.lists[k] = true
			p.mu.Unlock()
		case "initialize":
			p.mu.Lock()
			p.initID = k
			p.mu.Unlock()
		case "tasks/get", "tasks/result", "tasks/cancel":
			p.taskRequest(m, k)
		}
		p.track(k)
		return m.raw, id
	case kindNotification:
		if m.method == "notifications/cancelled" && !p.cancelled(m) {
			return nil, nil
		}
	case kindResponse:
		p.clientAnswer(m)
	}
	return m.raw, nil
}

// ambiguous refuses a message with a member written twice: the server's
// parser may keep the first where idemkey reads the last, and run a call
// idemkey did not see. A request is answered with Invalid Request (its id
// as idemkey reads it); anything else is dropped.
func (p *Proxy) ambiguous(m *message, answer func([]byte), what string) ([]byte, []byte) {
	p.o.Diag(fmt.Sprintf("the client sent a message with %s written twice: not sent on", what))
	if m.kind == kindRequest {
		answer(errorResponse(m.idRaw(), codeInvalidRequest, "Invalid Request: "+what+" is written twice, so the message has no single meaning; it was not sent"))
	}
	return nil, nil
}

// track counts a client's request sent on as in flight until its answer.
func (p *Proxy) track(k string) {
	p.mu.Lock()
	p.inflight[k]++
	p.recount()
	p.mu.Unlock()
}

// untrack ends a request in flight; p.mu is held.
func (p *Proxy) untrack(k string) {
	if n := p.inflight[k]; n > 1 {
		p.inflight[k] = n - 1
	} else {
		delete(p.inflight, k)
	}
}

// recount updates watch; p.mu is held.
func (p *Proxy) recount() {
	n := int64(len(p.calls) + len(p.lists) + len(p.own) + len(p.inflight) + len(p.tasks) + len(p.replayedTasks))
	if p.initID != "" {
		n++
	}
	p.watch.Store(n)
}

// send sends a message of the client's on; a message that could not be
// sent is answered for its request.
func (p *Proxy) send(msg, id []byte) {
	var ids [][]byte
	if id != nil {
		ids = [][]byte{id}
	}
	p.sendIDs(msg, ids)
}

func (p *Proxy) sendIDs(msg []byte, ids [][]byte) {
	err := p.up.Send(p.ctx, msg, ids)
	if err == nil {
		return
	}
	var se *SendError
	if !errors.As(err, &se) {
		se = &SendError{Maybe: true, Msg: err.Error()}
	}
	if len(ids) == 0 {
		p.o.Diag("a message of the client's could not be sent to the server: " + se.Msg)
	}
	for _, id := range ids {
		p.Unanswered(id, se.Maybe, se.Msg)
	}
}

// toClient writes one message to the client: the message and its newline
// in one write, never a part of one.
func (p *Proxy) toClient(msg []byte) {
	p.outMu.Lock()
	defer p.outMu.Unlock()
	if p.outErr != nil {
		return
	}
	p.outBuf = append(append(p.outBuf[:0], msg...), '\n')
	if _, err := p.out.Write(p.outBuf); err != nil {
		p.outErr = err
		p.o.Diag("writing to the client: " + err.Error())
	}
	if cap(p.outBuf) > bigLine {
		p.outBuf = nil
	}
}

// Message implements Sink: one message of the server's, passed on to the
// client once idemkey has read what it needs from it (the outcome of a
// call it holds is recorded first). wantIDs: return the ids of the
// responses in it.
func (p *Proxy) Message(msg []byte, wantIDs bool) []string {
	if !wantIDs && p.watch.Load() == 0 && !bytes.Contains(msg, []byte("list_changed")) {
		p.toClient(msg)
		return nil
	}
	if validJSON(msg) != nil {
		p.toClient(msg) // passed on as it is: the client answers it
		return nil
	}
	var ids []string
	if i := skipSpace(msg, 0); msg[i] == '[' {
		for _, e := range elements(msg, i) {
			if el := msg[e[0]:e[1]]; el[0] == '{' {
				if m := readMessage(el); m.kind == kindResponse {
					k, _, _ := p.serverResponse(m)
					ids = append(ids, k)
				}
			}
		}
	} else {
		m := readMessage(msg)
		switch m.kind {
		case kindResponse:
			k, own, marked := p.serverResponse(m)
			if own {
				return []string{k} // idemkey's own listing: not the client's
			}
			if marked != nil {
				msg = marked
			}
			ids = append(ids, k)
		case kindNotification:
			switch m.method {
			case "notifications/tools/list_changed":
				// What the old list said no longer holds: until a new one
				// is read, every tool is a write (mode lists them again).
				p.mu.Lock()
				p.listed = false
				clear(p.tools)
				p.mu.Unlock()
			case "notifications/tasks/status", "notifications/tasks":
				p.taskNotice(m)
			}
		case kindRequest:
			p.serverRequest(m)
		}
	}
	p.toClient(msg)
	return ids
}

// serverResponse reads a response of the server's before it is passed
// on: the outcome of a held call is recorded, a tools/list result and an
// initialize result are read. It returns the id's identity, and whether
// it answers idemkey's own request (not passed on), and the answer of a
// held call as the client gets it (markForwarded; nil: as written).
func (p *Proxy) serverResponse(m *message) (string, bool, []byte) {
	k := m.idKey()
	p.mu.Lock()
	if ch, ok := p.own[k]; ok {
		delete(p.own, k)
		p.recount()
		p.mu.Unlock()
		a := ownAnswer{ok: true}
		if m.err != nil && m.result == nil {
			a.errv = clone(m.value(m.err))
		} else {
			a.result = clone(m.value(m.result))
		}
		ch <- a
		return k, true, nil
	}
	c := p.takeSent(k)
	list := p.lists[k]
	delete(p.lists, k)
	init := k != "" && k == p.initID
	if init {
		p.initID = ""
	}
	p.untrack(k)
	tr, isTask := p.taskReqs[k]
	delete(p.taskReqs, k)
	p.recount()
	p.mu.Unlock()
	var marked []byte
	switch {
	case c != nil:
		p.complete(c, m)
		marked = markForwarded(m, c.key, c.attempt)
	case isTask:
		return k, p.taskAnswer(tr, m), nil
	case list:
		p.trackTools(m.value(m.result))
	case init:
		if v, ok := stringValue(objectMember(m.value(m.result), "protocolVersion")); ok {
			p.mu.Lock()
			p.version = v
			p.mu.Unlock()
			p.up.SetVersion(v)
		}
	}
	return k, false, marked
}

// takeSent removes and returns the call sent with id k, or nil (a call
// still waiting stays); p.mu is held.
func (p *Proxy) takeSent(k string) *call {
	c := p.calls[k]
	if c == nil || !c.sent {
		return nil
	}
	delete(p.calls, k)
	return c
}

// trackTools reads the annotations of a tools/list result (MCP
// server/tools: ToolAnnotations.readOnlyHint).
func (p *Proxy) trackTools(result []byte) {
	tools := objectMember(result, "tools")
	if len(tools) == 0 || tools[0] != '[' {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// The list is whole with its last page (MCP server/utilities/
	// pagination: no nextCursor); a tool on a page not read yet is looked
	// up before it is judged.
	if c := objectMember(result, "nextCursor"); len(c) == 0 || c[0] != '"' {
		p.listed = true
	}
	for _, e := range elements(tools, 0) {
		t := tools[e[0]:e[1]]
		if name, ok := stringValue(objectMember(t, "name")); ok {
			p.tools[name] = isTrue(objectMember(objectMember(t, "annotations"), "readOnlyHint"))
		}
	}
}

// mode is how the tool's calls are handled.
func (p *Proxy) mode(tool string) Mode {
	if m := p.policy(tool).Mode; m != ModeAuto {
		return m
	}
	p.mu.Lock()
	ro, known := p.tools[tool]
	list := !known && !p.listed && p.listings < maxListings
	p.mu.Unlock()
	if list {
		// A tool never listed (the client called it without tools/list,
		// or the list changed since): idemkey asks the server itself.
		p.listTools()
		p.mu.Lock()
		ro = p.tools[tool]
		p.mu.Unlock()
	}
	if ro {
		return ModePass
	}
	return ModeOnce
}

// maxListings bounds idemkey's own tools/list requests in a session (a
// server that cannot list: its tools are writes).
const maxListings = 8

// listTimeout bounds the wait for one page of idemkey's own listing.
const listTimeout = 10 * time.Second

// listTools lists the server's tools with requests of idemkey's own
// (their answers are not passed on), page by page, to read their
// annotations.
func (p *Proxy) listTools() {
	cursor := []byte(nil)
	for page := 0; page < 100; page++ {
		p.mu.Lock()
		p.listings++
		p.mu.Unlock()
		var params []byte
		if cursor != nil {
			params = append(append([]byte(`{"cursor":`), cursor...), '}')
		}
		_, result, _ := p.request("tools/list", params, listTimeout)
		if result == nil {
			p.o.Diag("the server did not list its tools: a tool it did not list is taken for a write")
			return
		}
		p.trackTools(result)
		if cursor = objectMember(result, "nextCursor"); len(cursor) == 0 || cursor[0] != '"' {
			return
		}
	}
}

// ownAnswer is the answer to a request of idemkey's own: its JSON-RPC
// error or its result; ok is false when none came.
type ownAnswer struct {
	errv, result []byte
	ok           bool
}

// request sends a request of idemkey's own to the server (ids
// "com.github.idemkey/METHOD-N", never the client's; its answer is not
// passed on) and waits up to timeout for its answer.
func (p *Proxy) request(method string, params []byte, timeout time.Duration) (errv, result []byte, ok bool) {
	p.mu.Lock()
	p.owns++
	id := quoted(fmt.Sprintf("com.github.idemkey/%s-%d", method, p.owns))
	k, _ := idKey(id)
	ch := make(chan ownAnswer, 1)
	p.own[k] = ch
	p.recount()
	p.mu.Unlock()
	msg := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	msg = append(append(msg, `,"method":`...), quoted(method)...)
	if params != nil {
		msg = append(append(msg, `,"params":`...), params...)
	}
	p.sendIDs(append(msg, '}'), [][]byte{id})
	var a ownAnswer
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case a = <-ch:
	case <-t.C:
	case <-p.ctx.Done():
	}
	p.mu.Lock()
	delete(p.own, k)
	p.recount()
	p.mu.Unlock()
	return a.errv, a.result, a.ok
}

// Unanswered implements Sink: a request the server will not answer. A
// held call is recorded (unknown if the server may have acted on it,
// failed if it surely did not) and answered; any other request is
// answered with an error, so that the client does not wait for ever.
func (p *Proxy) Unanswered(id []byte, maybe bool, why string) {
	why = p.redact(why)
	k, _ := idKey(id)
	p.mu.Lock()
	if ch, ok := p.own[k]; ok {
		delete(p.own, k)
		p.recount()
		p.mu.Unlock()
		ch <- ownAnswer{}
		return
	}
	c := p.takeSent(k)
	delete(p.lists, k)
	delete(p.taskReqs, k)
	p.untrack(k)
	p.recount()
	p.mu.Unlock()
	switch {
	case c == nil:
		p.toClient(errorResponse(id, codeInternalError, "idemkey: the server did not answer: "+why))
	case maybe:
		p.lose(c, "the server's answer was lost: "+why)
	default:
		p.finish(c, ledger.Outcome{State: ledger.Failed, ExitCode: 1, Reason: "not sent: " + why})
		p.toClient(errorResponse(id, codeInternalError, "idemkey: the call could not be sent to the server (it did not run): "+why))
	}
}

// serverGone ends the session's calls: those sent are unknown, those
// waiting end.
func (p *Proxy) serverGone(why string) {
	why = p.redact(why)
	p.mu.Lock()
	p.closed = true
	var sent []*call
	for k, c := range p.calls {
		delete(p.calls, k)
		if c.sent {
			sent = append(sent, c)
		} else if c.cancel != nil {
			c.cancel()
		}
	}
	p.recount()
	p.mu.Unlock()
	for _, c := range sent {
		p.lose(c, why)
	}
	p.endOpen(why)
}

// stopWaits ends the waits for holders elsewhere (the client has gone).
func (p *Proxy) stopWaits() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, c := range p.calls {
		if !c.sent && c.cancel != nil {
			c.cancel()
			delete(p.calls, k)
		}
	}
	p.recount()
}

func fingerprint(req []byte) string {
	sum := sha256.Sum256(req)
	return hex.EncodeToString(sum[:])
}
