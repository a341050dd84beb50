package probe

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// mcp.go probes an MCP server's write tools: whether a tools/call sent
// again with the same key (in params._meta, in an argument, or in the
// Idempotency-Key header) makes one effect, rule by rule, per tool.

// The MCP probe's rules besides Replay, Mismatch and InFlight.
const (
	LostResponse = "lost-response"
	NoKey        = "no-key"
	Description  = "description"
	Reconcile    = "reconcile"
)

// MetaKey is the _meta member that carries the key, as idemkey mcp sends
// it.
const MetaKey = "com.github.idemkey/idempotency-key"

// Said is what a reconcile command answered.
type Said int

const (
	SaidUnknown     Said = iota // another exit, a timeout, a signal
	SaidHappened                // exit 0 (or 3: more than once)
	SaidNotHappened             // exit 1
)

// Reconciler runs the reconcile command for a key: the step's tool and
// canonical arguments are what it is told besides. what says what it
// answered, for the evidence ("exit 0", "timed out after 1s").
type Reconciler func(ctx context.Context, key, tool string, args []byte) (said Said, what string)

// MCPConfig is what an MCP probe sends and how.
type MCPConfig struct {
	// Dial opens a new connection to a stdio server (a new process); nil
	// for a Streamable HTTP server at URL.
	Dial func(ctx context.Context) (io.ReadWriteCloser, error)
	// Client, URL and Header reach a Streamable HTTP server.
	Client *http.Client
	URL    string
	Header http.Header
	// Server names the server in the report.
	Server string
	// Version is the client version sent in initialize.
	Version string
	// Tools are the tools to probe; none: every tool not marked
	// readOnlyHint: true.
	Tools []string
	// Args are the arguments of a harmless test write, by tool ("" for
	// every tool): a JSON object.
	Args map[string]json.RawMessage
	// KeyIn are where the key goes: "meta", "arg:NAME", "header".
	KeyIn []string
	// Count, when not nil, counts the server's effects.
	Count Counter
	// CountTool, when set, is a read tool called with CountArgs whose
	// result's structuredContent (or first text content, as JSON) holds
	// the count at CountPointer (a number, or an array's length).
	CountTool    string
	CountArgs    json.RawMessage
	CountPointer string
	// Concurrency is the number of calls of the in-flight rule.
	Concurrency int
	// Reconcile, when not nil, is checked against a key with an effect
	// and a key never sent.
	Reconcile Reconciler
	// MaxTime bounds each call (0: no limit).
	MaxTime time.Duration
	// Rand is where keys come from (crypto/rand when nil).
	Rand io.Reader
}

// ToolReport is one tool's rules.
type ToolReport struct {
	Tool  string   `json:"tool"`
	Rules []Result `json:"rules"`
}

// MCPReport is an MCP probe's outcome.
type MCPReport struct {
	Server string       `json:"server"`
	Tools  []ToolReport `json:"tools"`
}

// Failed reports whether a rule failed.
func (r *MCPReport) Failed() bool {
	for _, t := range r.Tools {
		if (&Report{Rules: t.Rules}).Failed() {
			return true
		}
	}
	return false
}

// MCPError is a call that got no answer, or a count that failed: nothing
// can be judged from it, so the probe stops.
type MCPError struct {
	Tool, Rule string // "" before the first tool
	Sent       int    // tools/call requests sent until then (this one included)
	Err        error
}

func (e *MCPError) Error() string {
	where := ""
	if e.Tool != "" {
		where = fmt.Sprintf("%s, %s rule: ", e.Tool, e.Rule)
	}
	return where + e.Err.Error()
}
func (e *MCPError) Unwrap() error { return e.Err }

type mcpProber struct {
	cfg   MCPConfig
	keys  keys
	main  conn
	count *mcpTool
	sent  int
	mu    sync.Mutex
	conns []conn
}

// ProbePlan is the tools a probe would call and how many calls each
// costs, for a dry run.
type ProbePlan struct {
	Server string
	Tools  []PlannedTool
}

// PlannedTool is one tool of a plan.
type PlannedTool struct {
	Tool  string
	Calls int    // the most tools/call requests it gets (0: not tested)
	Why   string // why it is not tested, or its hints
	Args  json.RawMessage
}

// MCPCallsPerTool is the most tools/call requests one tool gets: for
// each key place replay 2, lost-response 2, mismatch 2, in-flight
// concurrency; no-key 2; and the count tool's calls around each.
func MCPCallsPerTool(cfg MCPConfig) int {
	return len(cfg.KeyIn)*(6+cfg.Concurrency) + 2
}

func (p *mcpProber) dial(ctx context.Context) (conn, string, error) {
	var c conn
	if p.cfg.Dial != nil {
		rw, err := p.cfg.Dial(ctx)
		if err != nil {
			return nil, "", err
		}
		c = newStdioConn(rw)
	} else {
		c = &httpConn{client: p.cfg.Client, url: p.cfg.URL, header: p.cfg.Header}
	}
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.mu.Unlock()
	ictx, cancel := p.callCtx(ctx)
	defer cancel()
	name, err := initialize(ictx, c, p.cfg.Version)
	if err != nil {
		c.cut()
		return nil, "", err
	}
	return c, name, nil
}

func (p *mcpProber) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if p.cfg.MaxTime > 0 {
		return context.WithTimeout(ctx, p.cfg.MaxTime)
	}
	return context.WithCancel(ctx)
}

func (p *mcpProber) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.close()
	}
	p.conns = nil
}

// openMCP connects, lists the tools and returns those to probe: all that
// a dry run sends.
func openMCP(ctx context.Context, cfg MCPConfig) (*mcpProber, []mcpTool, string, error) {
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	if cfg.Concurrency < 2 {
		return nil, nil, "", fmt.Errorf("probe: a concurrency of %d: want at least 2", cfg.Concurrency)
	}
	p := &mcpProber{cfg: cfg, keys: keys{cfg.Rand}}
	c, name, err := p.dial(ctx)
	if err != nil {
		p.closeAll()
		return nil, nil, "", &MCPError{Err: err}
	}
	p.main = c
	lctx, cancel := p.callCtx(ctx)
	defer cancel()
	tools, err := listTools(lctx, c)
	if err != nil {
		p.closeAll()
		return nil, nil, "", &MCPError{Err: err}
	}
	if name == "" {
		name = cfg.Server
	}
	sel, err := p.selected(tools)
	if err != nil {
		p.closeAll()
		return nil, nil, "", &MCPError{Err: err}
	}
	return p, sel, name, nil
}

// selected returns the tools to probe, in the order asked for (or
// listed), and an error for a tool the server does not have.
func (p *mcpProber) selected(tools []mcpTool) ([]mcpTool, error) {
	byName := map[string]*mcpTool{}
	for i := range tools {
		byName[tools[i].Name] = &tools[i]
	}
	if p.cfg.CountTool != "" {
		if p.count = byName[p.cfg.CountTool]; p.count == nil {
			return nil, fmt.Errorf("--count-tool %s: the server has no such tool (tools/list names %s)", p.cfg.CountTool, names(tools))
		}
	}
	if len(p.cfg.Tools) == 0 {
		var out []mcpTool
		for _, t := range tools {
			if !t.readOnly() && t.Name != p.cfg.CountTool {
				out = append(out, t)
			}
		}
		return out, nil
	}
	var out []mcpTool
	for _, n := range p.cfg.Tools {
		t := byName[n]
		if t == nil {
			return nil, fmt.Errorf("--tool %s: the server has no such tool (tools/list names %s)", n, names(tools))
		}
		out = append(out, *t)
	}
	return out, nil
}

func names(tools []mcpTool) string {
	var ns []string
	for i, t := range tools {
		if i == 20 {
			ns = append(ns, "…")
			break
		}
		ns = append(ns, t.Name)
	}
	if len(ns) == 0 {
		return "none"
	}
	return strings.Join(ns, ", ")
}

// argsOf returns the tool's test arguments, or nil.
func (p *mcpProber) argsOf(tool string) json.RawMessage {
	if a, ok := p.cfg.Args[tool]; ok {
		return a
	}
	return p.cfg.Args[""]
}

// PlanMCP connects, lists the tools and returns what Run would call; it
// sends nothing but initialize and tools/list.
func PlanMCP(ctx context.Context, cfg MCPConfig) (*ProbePlan, error) {
	p, sel, name, err := openMCP(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer p.closeAll()
	plan := &ProbePlan{Server: name}
	for _, t := range sel {
		pt := PlannedTool{Tool: t.Name, Args: p.argsOf(t.Name)}
		if pt.Args == nil {
			pt.Why = noArgs
		} else {
			pt.Calls = MCPCallsPerTool(cfg)
		}
		plan.Tools = append(plan.Tools, pt)
	}
	return plan, nil
}

const noArgs = "no --args for this tool: it is never called with made-up arguments"

// RunMCP probes the server's tools and returns the report. An error is a
// server that could not be reached or a call that got no answer
// (*MCPError), or the context's end; the calls made until then stand.
func RunMCP(ctx context.Context, cfg MCPConfig) (*MCPReport, error) {
	p, sel, name, err := openMCP(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer p.closeAll()
	rep := &MCPReport{Server: name}
	for i := range sel {
		tr, err := p.probeTool(ctx, &sel[i])
		if err != nil {
			var me *MCPError
			if errors.As(err, &me) {
				me.Tool, me.Sent = sel[i].Name, p.sent
			}
			return nil, err
		}
		rep.Tools = append(rep.Tools, tr)
	}
	return rep, nil
}

// probeTool runs every rule on one tool.
func (p *mcpProber) probeTool(ctx context.Context, t *mcpTool) (ToolReport, error) {
	tr := ToolReport{Tool: t.Name, Rules: []Result{describe(t)}}
	args := p.argsOf(t.Name)
	if args == nil {
		for _, r := range []string{Replay, LostResponse, Mismatch, InFlight, NoKey} {
			tr.Rules = append(tr.Rules, notTested(r, noArgs))
		}
		return tr, nil
	}
	for i, where := range p.cfg.KeyIn {
		kp := keyPlace(where)
		replay, first, err := p.mcpReplay(ctx, t, args, kp)
		if err != nil {
			return tr, err
		}
		tr.Rules = append(tr.Rules, replay)
		if i == 0 && p.cfg.Reconcile != nil {
			tr.Rules = append(tr.Rules, p.reconcile(ctx, t.Name, args, first))
		}
		for _, rule := range []func(context.Context, *mcpTool, json.RawMessage, keyPlace) (Result, error){p.lostResponse, p.mcpMismatch, p.mcpInFlight} {
			res, err := rule(ctx, t, args, kp)
			if err != nil {
				return tr, err
			}
			tr.Rules = append(tr.Rules, res)
		}
	}
	res, err := p.noKey(ctx, t, args)
	if err != nil {
		return tr, err
	}
	tr.Rules = append(tr.Rules, res)
	return tr, nil
}
