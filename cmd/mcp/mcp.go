// Package mcp is the face of 'idemkey mcp': an MCP proxy that makes each
// tools/call happen once per key (the library: derive/mcp). Its
// end-to-end tests are the package mcp_test beside it.
package mcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/keyflags"
	"github.com/idemkey/idemkey/cmd/internal/ledgeropts"
	"github.com/idemkey/idemkey/cmd/internal/proc"
	"github.com/idemkey/idemkey/cmd/internal/settings"
	"github.com/idemkey/idemkey/cmd/internal/step"
	"github.com/idemkey/idemkey/derive"
	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/idemkey/idemkey/derive/ledger/sqlite"
	"github.com/idemkey/idemkey/derive/ledger/stores"
	"github.com/idemkey/idemkey/derive/mcp"
	"github.com/spf13/cobra"
)

// Options are idemkey mcp's settings, resolved.
type Options struct {
	f        *cli.Factory
	Command  []string // the stdio server, or
	URL      string   // the Streamable HTTP server
	Headers  []string // -H for the HTTP server
	Task     string
	TaskMeta string
	// SessionTask: no task id was given, Task is this session's own.
	SessionTask bool
	// Default is the policy of a tool without settings of its own
	// (--key-arg, --only, --omit, --recover, --reconcile,
	// --replay-note); Tools are those of the tools with some (--once,
	// --pass, the config file's tools sections), each whole.
	Default mcp.ToolPolicy
	Tools   map[string]mcp.ToolPolicy
	// Keying is how a write call's key is derived (--scheme,
	// --allow-missing, --format, --prefix, --max-len, --secret-env).
	Keying mcp.Keying
	Ledger string
	Wait   time.Duration
	Lease  time.Duration
	Retain time.Duration
	Log    string
	// MaxMessage caps one message from either side (--max-message).
	MaxMessage int64
	// PassEnv are the IDEMKEY_* variables passed on to the server (--env).
	PassEnv []string
	Verbose bool
}

// exitMCPFailed: idemkey mcp could not start or serve (the ledger, the
// log file); as run's 125.
const exitMCPFailed = cli.ExitRunFailed

// long is mcp's help.
const long = `Proxy the Model Context Protocol between a client (on idemkey's standard
input and output, as any stdio server) and a server: a command started as a
child (its command and arguments after idemkey's flags, or after --), or a
Streamable HTTP endpoint (--url, with -H headers). Over HTTP a session the
server ends (404, or a 400 that says so) is started again with the client's
initialize; a 2026-07-28 client is spoken for without a session, each POST
with the headers that mirror its request; a call's stream the server closes
is resumed (Last-Event-ID) until its answer comes; redirects are followed to
the URL's origin only, at most 3; a server of the 2024-11-05 HTTP+SSE
transport is found as the spec says (its initialize POST refused with 400,
404 or 405).

Every message passes through as it was written, in order, except the
tools/call requests of write tools and their answers. A tool is a write
unless its tools/list annotations say readOnlyHint: true; --once NAME,
--pass NAME and the config file's tools: {NAME: {mcp: once|pass}} decide
instead. A write call's key is derived from (task, tool, arguments) exactly
as 'idemkey key --from mcp' derives it (--scheme, --only, --omit, --format,
--prefix, --secret-env, and each tool's own settings in the config file), and
sent in params._meta["com.github.idemkey/idempotency-key"], the attempt in
"com.github.idemkey/attempt" (--key-arg NAME also sets that argument; the key
never covers it). The task id is --task (IDEMKEY_TASK), or, with --task-meta
NAME, each request's params._meta[NAME] (a call without it is refused);
without either, each session is a task of its own: a random task id, shown
on stderr at start and in --log's records, so that a write is made once in
the session (a client's retries, a model's repeats) and a new session's
identical write is a new write. A keyed call's result carries its key and
attempt in _meta, forwarded or replayed; over HTTP the key is also sent as
an Idempotency-Key header.

The ledger is run's (--ledger: SQLite by default, PostgreSQL or Redis):
  first call   claimed, then sent; a result with isError false is recorded
               succeeded, whole; isError true or a JSON-RPC error: failed
               (the next identical call is sent again)
  succeeded    answered from the ledger, not sent: the first result under
               the new id, _meta "com.github.idemkey/replayed": true (with
               --replay-note, and a text item saying it is a replay)
  in flight    the identical call made by another, or by this client again
               before the first answered: its outcome waited for up to
               --wait (60s: longer than a client's own retry of a slow
               call), then a tool error result
  unknown      the server, idemkey or the machine died, or the client
               cancelled the call after it was sent: --recover fail
               (default) answers a tool error result saying how to settle it
               (idemkey ledger resolve KEY); --recover retry sends it again
               as the next attempt, with the same key
  other args   the key recorded with other arguments: a tool error result
               showing the difference

--reconcile COMMAND (per tool: tools.NAME.reconcile) asks the owner about an
unknown outcome before --recover applies, under the key's claim: a shell
command line with IDEMPOTENCY_KEY, IDEMPOTENCY_ATTEMPT, IDEMKEY_TASK and
IDEMKEY_TOOL in its environment and the call's canonical arguments on its
standard input. Exit 0: the call took effect, recorded succeeded, answered
with its standard output (a CallToolResult as it is, other text as a text
content) and not sent; 1: it did not, sent as the next attempt with the
same key; other (or --reconcile-timeout, or a signal): still unknown,
--recover decides, the answer says what the reconcile said.

--log FILE appends one JSON Lines record per tools/call (time, task, tool,
args, request_id, key, attempt, action: passed, forwarded, replayed, waited
or refused) that 'idemkey drift FILE' reads as it is.

Exit codes: 0 the client closed its input; the server's own exit code (or
128+N for signal N) when it ended first (1 for a --url server whose
2024-11-05 event stream ended); 2 usage (no task id, bad flags);
125 idemkey failed (the ledger, the log file); 126 cannot execute the
server; 127 not found.`

// NewCmd builds 'idemkey mcp': its options, its flags, and run; with
// runF, runF instead of runMCP, once the options are read (a test's seam
// for the flags and settings).
func NewCmd(f *cli.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{f: f}
	cmd := &cobra.Command{
		Use:   "mcp [flags] (SERVER_COMMAND [ARG...] | --url URL)",
		Short: "Put between an MCP client and server: every write tool call keyed, and made once",
		Long:  long,
		Example: `  idemkey mcp --replay-note mcp-server-filesystem /srv/notes
  idemkey mcp --task "$TASK_ID" -- npx -y @modelcontextprotocol/server-memory
  idemkey mcp --task-meta com.example/task-id --ledger postgres://idemkey@db/ops ./server --port 0
  idemkey mcp --task t-42 --url https://mcp.example.com/mcp -H "Authorization: Bearer $TOKEN"
  client config: {"command": "idemkey", "args": ["mcp", "--replay-note", "mcp-server-filesystem", "/srv/notes"]}`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.setup(cmd, args); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return runMCP(opts)
		},
	}
	fl := cmd.Flags()
	fl.SetInterspersed(false)
	fl.String("task", "", "the task id of every call (IDEMKEY_TASK; default: a new one per session)")
	fl.String("task-meta", "", "read each call's task id from this params._meta member (set by the harness)")
	fl.String("scheme", "js", "canonical form: js (the reference harness) or jcs (RFC 8785)")
	settings.OneOf(fl, "scheme", canon.SchemeNames...)
	fl.StringArray("only", nil, "derive keys from just this part of the arguments (an RFC 6901 `POINTER`; repeatable; per tool in the config)")
	fl.StringArray("omit", nil, "drop this part of the arguments before deriving (an RFC 6901 `POINTER`; repeatable; per tool in the config)")
	fl.Bool("allow-missing", false, "let --only pointers that match nothing be ignored")
	keyflags.AddFormatFlags(fl)
	ledgeropts.AddFlag(fl)
	fl.String("url", "", "a Streamable HTTP server's URL (or a 2024-11-05 HTTP+SSE server's), instead of a command")
	fl.StringArrayP("header", "H", nil, "a `HEADER` for the HTTP server, \"Name: value\" (repeatable)")
	fl.StringArray("once", nil, "make the calls of `TOOL` once, whatever its annotations say (repeatable)")
	fl.StringArray("pass", nil, "pass the calls of `TOOL` through untouched, never recorded (repeatable)")
	fl.String("key-arg", "", "also set the key in this argument of each write call (per tool: tools.NAME.key-arg)")
	fl.String("log", "", "append one JSON Lines record per tools/call to this file (read by idemkey drift)")
	step.AddReconcileFlags(fl, "a write call")
	fl.String("recover", "fail", "an unknown outcome: fail (a tool error saying how to settle it) or retry (send again, same key); per tool: tools.NAME.recover")
	ledgeropts.AddHoldFlags(fl, ledgeropts.Wait.Default("60s").Help("wait up to this long for the outcome of an identical call in flight (a client's retry of a slow call gets its result)"))
	fl.Bool("replay-note", false, "end a replayed result with a text item telling the model it is a replay (per tool: tools.NAME.replay-note)")
	fl.String("max-message", "256MiB", "the cap on one message from either side: past it, that stream is dropped and its calls are unknown")
	fl.BoolP("verbose", "v", false, "a line on stderr for each tools/call idemkey handles")
	ledgeropts.AddHoldFlags(fl, ledgeropts.Lease.Help("lease of a call in flight on shared stores (renewed every third)"), ledgeropts.Retain)
	// Per tool only (tools: {NAME: {mcp: once|pass}}): a flag so that the
	// config file's vetting knows the name; not for the command line.
	fl.String("mcp", "", "per tool in the config file: once or pass")
	_ = fl.MarkHidden("mcp")
	fl.StringArray("env", nil, "pass idemkey's variable `NAME` (an IDEMKEY_* setting, dropped by default) on to the server (repeatable)")
	settings.CommandLineOnly(fl, "header", "url", "once", "pass", "env")
	settings.ReadPerTool(fl, "only", "omit", "recover", "key-arg", "mcp", "replay-note")
	return cmd
}

func (opts *Options) setup(cmd *cobra.Command, args []string) error {
	f := opts.f
	v := f.Config
	opts.Command = args
	opts.URL = v.GetString("url")
	opts.Headers = v.GetStringSlice("header")
	switch {
	case opts.URL == "" && len(args) == 0:
		return &cli.UsageError{Err: errors.New("no server: give its command (after idemkey's flags) or its --url"),
			HintText: "idemkey mcp npx -y @modelcontextprotocol/server-memory"}
	case opts.URL != "" && len(args) > 0:
		return cli.Usagef("give the server's command or its --url, not both")
	case opts.URL == "" && len(opts.Headers) > 0:
		return cli.Usagef("-H is for a --url server")
	}
	if err := opts.setupTask(); err != nil {
		return err
	}
	if v.IsSet("mcp") {
		return &cli.UsageError{Err: fmt.Errorf("%s: mcp is a per-tool setting", v.Source("mcp")),
			HintText: "set it in the config file's tools section, tools: {NAME: {mcp: once}}, or give --once NAME / --pass NAME"}
	}
	sels, err := opts.setupKeying()
	if err != nil {
		return err
	}
	key, err := keyflags.KeyFrom(f)
	if err != nil {
		return err
	}
	opts.Keying.Format, opts.Keying.Secret = *key.Format, key.Secret
	if opts.Ledger, err = ledgeropts.Spec(f); err != nil {
		return err
	}
	def := &opts.Default
	def.Select = derive.Selection{Only: v.GetStringSlice("only"), Omit: v.GetStringSlice("omit")}
	if def.Recover, err = ledgeropts.RecoverPolicy(f, cmd, ""); err != nil {
		return err
	}
	if def.Reconcile, err = opts.reconciler(cmd, ""); err != nil {
		return err
	}
	def.KeyArg = v.GetString("key-arg")
	def.ReplayNote = v.GetBool("replay-note")
	once, pass := v.GetStringSlice("once"), v.GetStringSlice("pass")
	for _, n := range once {
		if slices.Contains(pass, n) {
			return cli.Usagef("--once %s and --pass %s contradict each other", n, n)
		}
	}
	if opts.Tools, err = opts.toolPolicies(cmd, sels, once, pass); err != nil {
		return err
	}
	return opts.setupDurations()
}

// setupTask resolves the task id: --task / IDEMKEY_TASK, or --task-meta.
func (opts *Options) setupTask() error {
	v := opts.f.Config
	opts.Task, opts.TaskMeta = v.GetString("task"), v.GetString("task-meta")
	switch {
	case opts.Task == "" && opts.TaskMeta == "":
		// A client started from a configuration file (a desktop app, an
		// editor) sets no task id: the session is the task.
		opts.Task, opts.SessionTask = sessionTask(), true
	case opts.Task != "" && opts.TaskMeta != "":
		return cli.Usagef("give --task or --task-meta, not both")
	}
	if opts.Task != "" {
		if err := validateTask(opts.Task); err != nil {
			return err
		}
	}
	return nil
}

// sessionTask is a new random task id for one session: "session-" and
// 128 random bits in hex, so that no two sessions share one.
func sessionTask() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return "session-" + hex.EncodeToString(b[:])
}

func validateTask(task string) error {
	if err := (derive.Call{Task: task, Tool: "x"}).Validate(); err != nil {
		return &cli.UsageError{Err: fmt.Errorf("--task: %v", err)}
	}
	return nil
}

// setupKeying reads how every call's key is derived, as idemkey key
// --from mcp reads it (--scheme, --only, --omit, --allow-missing), and
// returns the selections of the tools whose config file sections set
// only or omit.
func (opts *Options) setupKeying() (map[string]derive.Selection, error) {
	f := opts.f
	v := f.Config
	k := &opts.Keying
	k.AllowMissing = v.GetBool("allow-missing")
	var err error
	if k.Scheme, err = keyflags.Scheme(f); err != nil {
		return nil, err
	}
	if err := keyflags.CheckPointers(v.Source("only"), v.Source("omit"), v.GetStringSlice("only"), v.GetStringSlice("omit")); err != nil {
		return nil, err
	}
	sels, err := keyflags.ToolSelections(f)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var mu sync.Mutex
	k.Warn = func(dw derive.Warning) {
		// A proxy sees the same call shape again and again: each warning
		// once.
		mu.Lock()
		defer mu.Unlock()
		if !seen[dw.Msg] {
			seen[dw.Msg] = true
			f.PrintWarning(dw)
		}
	}
	return sels, nil
}

// toolPolicies is the policy table: each tool with settings of its own
// (its only and omit, sels; a tools section that sets mcp, key-arg,
// recover, reconcile, reconcile-timeout or replay-note; --once, --pass,
// which decide over its mcp) gets the default policy with those over it.
// A tool's recover and replay-note give way to the flags given on the
// command line.
func (opts *Options) toolPolicies(cmd *cobra.Command, sels map[string]derive.Selection, once, pass []string) (map[string]mcp.ToolPolicy, error) {
	v := opts.f.Config
	m := map[string]mcp.ToolPolicy{}
	at := func(tool string) mcp.ToolPolicy {
		if t, ok := m[tool]; ok {
			return t
		}
		return opts.Default
	}
	for tool, sel := range sels {
		t := at(tool)
		t.Select = sel
		m[tool] = t
	}
	for _, tool := range v.ToolNames() {
		if !v.ToolSets(tool, "mcp") && !v.ToolSets(tool, "key-arg") && !v.ToolSets(tool, "recover") &&
			!v.ToolSets(tool, "reconcile") && !v.ToolSets(tool, "reconcile-timeout") && !v.ToolSets(tool, "replay-note") {
			continue
		}
		ts, err := v.ForTool(tool)
		if err != nil {
			return nil, err
		}
		t := at(tool)
		switch ts.GetString("mcp") {
		case "":
		case "once":
			t.Mode = mcp.ModeOnce
		case "pass":
			t.Mode = mcp.ModePass
		default:
			return nil, ts.Invalid("mcp", "want once or pass")
		}
		t.KeyArg = ts.GetString("key-arg")
		if v.ToolSets(tool, "replay-note") && !changedFlag(opts.f, "replay-note") {
			t.ReplayNote = ts.GetBool("replay-note")
		}
		rec := ledger.Policy(ts.GetString("recover"))
		if !rec.Valid() {
			return nil, ts.Invalid("recover", "want fail or retry")
		}
		if !changedFlag(opts.f, "recover") {
			t.Recover = rec
		}
		if t.Reconcile, err = opts.reconciler(cmd, tool); err != nil {
			return nil, err
		}
		m[tool] = t
	}
	for _, tool := range once {
		t := at(tool)
		t.Mode = mcp.ModeOnce
		m[tool] = t
	}
	for _, tool := range pass {
		t := at(tool)
		t.Mode = mcp.ModePass
		m[tool] = t
	}
	return m, nil
}

// setupDurations reads --wait, --lease (durations, or seconds) and
// --retain (which may be in days), and the output settings.
func (opts *Options) setupDurations() error {
	v := opts.f.Config
	hold, err := ledgeropts.HoldSettings(v, ledgeropts.Wait, ledgeropts.Lease, ledgeropts.Retain)
	if err != nil {
		return err
	}
	opts.Wait, opts.Lease, opts.Retain = hold.Wait, hold.Lease, hold.Retain
	opts.Log = v.GetString("log")
	opts.PassEnv = v.GetStringSlice("env")
	for _, n := range opts.PassEnv {
		if n == "" || strings.ContainsAny(n, "=\x00") {
			return &cli.UsageError{Err: fmt.Errorf("invalid --env %q: want the name of one of idemkey's variables", n),
				HintText: "--env IDEMKEY_LEDGER passes idemkey's own value on; to give the server another value, start it as: env NAME=VALUE COMMAND"}
		}
	}
	if opts.MaxMessage, err = cli.ParseSize(v.GetString("max-message")); err != nil || opts.MaxMessage <= 0 {
		return v.OutOfRange("max-message", "a size in bytes above 0, such as 256MiB")
	}
	opts.Verbose = v.GetBool("verbose")
	return nil
}

// reconciler is a tool's reconcile (tools.NAME.reconcile, or
// --reconcile's with its reconcile-timeout; tool "": --reconcile's), nil
// for none: the command is told the canonical arguments the record keeps
// ({"args":…}, as run's; derive/mcp fills in those of a call too large
// to keep).
func (opts *Options) reconciler(cmd *cobra.Command, tool string) (ledger.Reconciler, error) {
	rc, err := step.ReconcileSettings(opts.f, cmd.Flags(), tool)
	if rc == nil || err != nil {
		return nil, err
	}
	rc.Args = step.RequestArgs
	return rc.Reconciler(), nil
}

// changedFlag reports whether the running command's flag was given on the
// command line.
func changedFlag(f *cli.Factory, name string) bool {
	fl := f.Config.Lookup(name)
	return fl != nil && fl.Changed
}

func runMCP(opts *Options) error {
	f := opts.f
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	// A client that went away must not kill idemkey with SIGPIPE between
	// an outcome and the next: writes to it fail instead. (Caught, not
	// ignored: the server gets the default disposition.)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	if len(opts.Command) > 0 {
		if err := step.LookCommand(opts.Command[0]); err != nil {
			return err
		}
	}
	store, err := ledgeropts.Open(ctx, f, opts.Ledger)
	if err != nil {
		return &cli.CodeError{Code: exitMCPFailed, Err: err}
	}
	defer store.Close()
	po := mcp.Options{
		Task: opts.Task, TaskMeta: opts.TaskMeta,
		Default: opts.Default, Tools: opts.Tools, Key: opts.Keying,
		Store: store, Lease: opts.Lease, Wait: opts.Wait, Retain: opts.Retain, Holder: stores.Holder(), MaxMessage: opts.MaxMessage,
		HolderAlive: stores.HolderCheck(store), ServerURL: opts.URL,
		Diag: func(msg string) { fmt.Fprintf(f.IO.Err, "idemkey: %s\n", cli.DiagLine(msg)) },
	}
	if l, ok := store.(stores.KeyLocker); ok {
		po.Locker = stores.FileLocker{KL: l}
	}
	if opts.Log != "" {
		// Opened as the ledger is: a log another user could write or
		// point elsewhere is refused (drift trusts its records).
		lf, err := sqlite.OpenAppend(opts.Log, "log file")
		if err != nil {
			return &cli.CodeError{Code: exitMCPFailed, Err: fmt.Errorf("--log: %w", err)}
		}
		defer lf.Close()
		po.Log = lf
	}
	if opts.SessionTask {
		fmt.Fprintf(f.IO.Err, "idemkey: no task id given (--task, --task-meta): this session's writes are made once under task %s\n", opts.Task)
	}
	if opts.Verbose {
		po.Trace = po.Diag
		fmt.Fprintf(f.IO.Err, "idemkey: mcp proxy, ledger %s\n", stores.Redact(opts.Ledger))
	}
	p := mcp.New(po)
	if opts.URL != "" {
		return opts.serveHTTP(ctx, p)
	}
	return opts.serveStdio(ctx, p)
}

// serveStdio starts the server as a child and serves the client through
// it. The child gets idemkey's standard error and environment (as a step
// of run gets it: without IDEMKEY_*); its standard input and output are
// pipes of idemkey's own (not exec's copying ones, which Wait would close
// before the last message is read).
func (opts *Options) serveStdio(ctx context.Context, p *mcp.Proxy) error {
	f := opts.f
	c := exec.Command(opts.Command[0], opts.Command[1:]...)
	c.Stderr = f.IO.Err
	// The environment a step of run gets: no IDEMKEY_* (a ledger URL's
	// password, a key secret), but those --env names.
	c.Env = step.Env(os.Environ(), opts.PassEnv)
	inR, inW, err := os.Pipe()
	if err != nil {
		return &cli.CodeError{Code: exitMCPFailed, Err: err}
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return &cli.CodeError{Code: exitMCPFailed, Err: err}
	}
	c.Stdin, c.Stdout = inR, outW
	// A group of its own: the stop signals reach a wrapper's children
	// (npx, sh -c) too, and none goes on holding the server's output.
	proc.SetGroup(c)
	err = c.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return &cli.CodeError{Code: cli.ExitCannotExec, Err: fmt.Errorf("%s: %v", opts.Command[0], err)}
	}
	defer outR.Close()
	exited := make(chan struct{})
	var werr error
	go func() {
		werr = c.Wait()
		close(exited)
	}()
	// The server is done when it has exited and its output has ended (a
	// child of its may hold it).
	served, done := make(chan struct{}), make(chan struct{})
	go func() { <-served; <-exited; close(done) }()
	var stopOnce sync.Once
	stopServer := func() {
		// MCP basic/transports, stdio shutdown: the input closed, then
		// SIGTERM if the server has not exited, then SIGKILL; at once when
		// idemkey itself was told to stop.
		stopOnce.Do(func() { go stopChild(ctx, c, done) })
	}
	serr := p.Serve(ctx, f.IO.In, f.IO.Out, mcp.NewStdio(inW, outR, stopServer))
	close(served)
	stopServer()
	<-exited
	if !errors.Is(serr, mcp.ErrServerGone) {
		return serr
	}
	return serverExit(f, opts.Command[0], c.ProcessState, werr)
}

// serverExit is idemkey's exit when the server ended the session: the
// server's own code, or 128+N for signal N.
func serverExit(f *cli.Factory, name string, ps *os.ProcessState, werr error) error {
	code := 0
	if ps != nil {
		code = ps.ExitCode()
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	}
	why := "exited"
	if werr != nil {
		why = werr.Error()
	}
	fmt.Fprintf(f.IO.Err, "idemkey: the server %s ended (%s) before the client closed the session\n", name, why)
	if code == 0 {
		return nil
	}
	return &cli.ExitError{Code: code}
}

// stopChild ends the server (its process group) after its input was
// closed, unless it is done first: SIGTERM after a grace (at once if ctx
// ended: idemkey was told to stop), SIGKILL after another.
func stopChild(ctx context.Context, c *exec.Cmd, done <-chan struct{}) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t := time.NewTimer(5 * time.Second)
		select {
		case <-done:
			t.Stop()
			return
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		_ = proc.SignalGroup(c, sig)
		ctx = context.Background() // the next signal after a grace
	}
}

// serveHTTP serves the client through a Streamable HTTP server.
func (opts *Options) serveHTTP(ctx context.Context, p *mcp.Proxy) error {
	f := opts.f
	h := http.Header{}
	for _, line := range opts.Headers {
		name, value, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t\r\n") || strings.ContainsAny(value, "\r\n") {
			return cli.Usagef("-H %s: want \"Name: value\"", strconv.Quote(line))
		}
		h.Add(name, strings.TrimSpace(value))
	}
	redact := mcp.Redactor(opts.URL)
	up, err := mcp.NewHTTP(opts.URL, h, nil, func(msg string) { fmt.Fprintf(f.IO.Err, "idemkey: %s\n", cli.DiagLine(redact(msg))) })
	if err != nil {
		return &cli.UsageError{Err: fmt.Errorf("--url: %v", err)}
	}
	err = p.Serve(ctx, f.IO.In, f.IO.Out, up)
	if errors.Is(err, mcp.ErrServerGone) {
		// Only a server of the 2024-11-05 HTTP+SSE transport ends a
		// session so (its event stream ended); it has no exit code.
		why := strings.TrimPrefix(err.Error(), mcp.ErrServerGone.Error()+" ")
		fmt.Fprintf(f.IO.Err, "idemkey: the server at %s ended the session before the client closed it %s\n", mcp.RedactURL(opts.URL), cli.DiagLine(redact(why)))
		return &cli.ExitError{Code: cli.ExitNegative}
	}
	return err
}
