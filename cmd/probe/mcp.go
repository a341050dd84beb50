package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/step"
	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/idemkey/idemkey/derive/post"
	"github.com/idemkey/idemkey/derive/probe"
	"github.com/spf13/pflag"
)

// mcp.go is probe --mcp: an MCP server's write tools probed with real
// tools/call requests (the library: derive/probe's RunMCP).

// MCPOptions are probe --mcp's settings.
type MCPOptions struct {
	Command      []string // a stdio server's command line
	URL          string   // or a Streamable HTTP server's
	Headers      []string
	Tools        []string
	Args         map[string]json.RawMessage
	KeyIn        []string
	CountTool    string
	CountArgs    json.RawMessage
	CountPointer string
}

// mcpOnly are the flags of probe --mcp alone.
var mcpOnly = []string{"url", "tool", "args", "key-in", "count-tool", "count-args", "count-pointer"}

// httpOnly are the HTTP probe's flags that mean nothing to an MCP server.
var httpOnly = []string{"data", "data-binary", "data-raw", "request", "key-header", "after", "require-key",
	"user-agent", "user"}

// tlsFlags are the TLS flags, for a --url server.
var tlsFlags = []string{"cacert", "cert", "key", "insecure"}

func addMCPFlags(fl *pflag.FlagSet) {
	fl.Bool("mcp", false, "probe an MCP server's write tools: its command after --, or --url")
	fl.String("url", "", "with --mcp: a Streamable HTTP server's `URL` (with -H headers)")
	fl.StringArray("tool", nil, "with --mcp: probe this tool `NAME` (repeatable; default: every tool not marked readOnlyHint)")
	fl.StringArray("args", nil, "with --mcp: a test write's arguments, `JSON|@FILE`, or NAME=JSON|@FILE for one tool (repeatable)")
	fl.StringArray("key-in", nil, "with --mcp: `WHERE` the key goes: meta (default), arg:NAME or header (repeatable: each is tried)")
	fl.String("count-tool", "", "with --mcp: count effects with this read tool `NAME` of the server")
	fl.String("count-args", "{}", "the --count-tool's arguments (`JSON`)")
	fl.String("count-pointer", "", "where the count is in the --count-tool's structuredContent (or first text content as JSON): a `/POINTER` to a number or an array")
	fl.String("reconcile", "", "check this reconcile `COMMAND` (run by sh -c, as run --reconcile runs it): exit 0 for a key with an effect, 1 for a key never sent")
	fl.String("reconcile-timeout", "30s", "stop a --reconcile command after this `DURATION` (it could not tell)")
}

// loadMCP resolves probe --mcp's options; nothing is started or sent.
func (o *Options) loadMCP(fl *pflag.FlagSet, args []string) error {
	cfg := o.f.Config
	for _, n := range httpOnly {
		if cli.Changed(fl, n) {
			return &cli.UsageError{Err: fmt.Errorf("--%s is for an HTTP endpoint, not --mcp", n),
				HintText: "a tool's arguments are --args JSON; where its key goes is --key-in"}
		}
	}
	if len(o.data) > 0 {
		return cli.Usagef("--json=DATA is for an HTTP endpoint, not --mcp")
	}
	m := &MCPOptions{Command: args, URL: cfg.GetString("url"), Headers: cfg.GetStringSlice("header")}
	o.MCP = m
	switch {
	case m.URL == "" && len(args) == 0:
		return &cli.UsageError{Err: errors.New("--mcp: no server: give its command after -- or its --url"),
			HintText: "idemkey probe --mcp --yes --tool charge --args @charge.json -- npx some-mcp-server"}
	case m.URL != "" && len(args) > 0:
		return cli.Usagef("--mcp: give the server's command or its --url, not both")
	case m.URL == "" && len(m.Headers) > 0:
		return cli.Usagef("-H is for a --url server")
	}
	for _, n := range tlsFlags {
		if m.URL == "" && cli.Changed(fl, n) {
			return cli.Usagef("--%s is for a --url server", n)
		}
	}
	t := &o.Request.Transport
	t.Insecure, t.CACert = cfg.GetBool("insecure"), cfg.GetString("cacert")
	t.Cert, t.Key = cfg.GetString("cert"), cfg.GetString("key")
	if m.URL != "" {
		u, err := url.Parse(m.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return cli.Usagef("--url %s: want an http:// or https:// URL", strconv.Quote(redactURL(m.URL)))
		}
	}
	for _, line := range m.Headers {
		name, value, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t\r\n") || strings.ContainsAny(value, "\r\n") {
			return cli.Usagef("-H: want \"Name: value\"")
		}
		if strings.EqualFold(name, "Idempotency-Key") {
			return &cli.UsageError{Err: errors.New("-H sets Idempotency-Key, which the probe sets itself, to keys made fresh for it"),
				HintText: "--key-in header sends the key in that header"}
		}
	}
	m.Tools = cfg.GetStringSlice("tool")
	var err error
	if m.Args, err = o.readArgs(cfg.GetStringSlice("args")); err != nil {
		return err
	}
	m.KeyIn = cfg.GetStringSlice("key-in")
	if len(m.KeyIn) == 0 {
		m.KeyIn = []string{"meta"}
	}
	seen := map[string]bool{}
	for _, k := range m.KeyIn {
		name, isArg := strings.CutPrefix(k, "arg:")
		switch {
		case seen[k]:
			return cli.Usagef("--key-in %s given twice", k)
		case k == "meta":
		case k == "header" && m.URL == "":
			return &cli.UsageError{Err: errors.New("--key-in header: a stdio server has no HTTP headers"), HintText: "use --url, or --key-in meta or arg:NAME"}
		case k == "header":
		case isArg && name != "":
		default:
			return &cli.UsageError{Err: fmt.Errorf("invalid --key-in %s", strconv.Quote(k)), HintText: "want meta, arg:NAME or header"}
		}
		seen[k] = true
	}
	m.CountTool = cfg.GetString("count-tool")
	m.CountPointer = cfg.GetString("count-pointer")
	if m.CountTool != "" {
		if o.Count != "" {
			return cli.Usagef("give --count or --count-tool, not both")
		}
		if !strings.HasPrefix(m.CountPointer, "/") {
			return &cli.UsageError{Err: errors.New("--count-tool needs --count-pointer /POINTER"),
				HintText: "the JSON pointer of the count (a number, or an array to count) in the tool's structuredContent, e.g. /count"}
		}
		m.CountArgs = json.RawMessage(cfg.GetString("count-args"))
		if !isObject(m.CountArgs) {
			return cli.Usagef("--count-args: want a JSON object")
		}
	} else if cli.Changed(fl, "count-pointer") || cli.Changed(fl, "count-args") {
		return cli.Usagef("--count-pointer and --count-args are for --count-tool")
	}
	return nil
}

func isObject(b []byte) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil && m != nil
}

// readArgs reads --args: JSON or @FILE for every tool, NAME=JSON or
// NAME=@FILE for one.
func (o *Options) readArgs(vals []string) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	for _, v := range vals {
		tool, val := "", v
		if t := strings.TrimSpace(v); !strings.HasPrefix(t, "{") && !strings.HasPrefix(t, "@") {
			var ok bool
			if tool, val, ok = strings.Cut(v, "="); !ok || tool == "" {
				return nil, &cli.UsageError{Err: fmt.Errorf("--args %s: want a JSON object, @FILE, or NAME=JSON", strconv.Quote(cli.Printable(v))),
					HintText: `--args '{"amount":100}' or --args charge=@charge.json`}
			}
		}
		b := []byte(val)
		if name, ok := strings.CutPrefix(val, "@"); ok {
			var err error
			if b, err = readSmallFile(name); err != nil {
				return nil, &cli.UsageError{Err: fmt.Errorf("--args: %v", err)}
			}
		}
		if !isObject(b) {
			return nil, cli.Usagef("--args %s: want a JSON object (a tool's arguments)", strconv.Quote(cli.Printable(tool+" "+trimTo(val, 40))))
		}
		if _, dup := out[tool]; dup {
			return nil, cli.Usagef("--args given twice for %s", map[bool]string{true: "every tool", false: tool}[tool == ""])
		}
		out[tool] = json.RawMessage(bytes.TrimSpace(b))
	}
	return out, nil
}

// maxArgsFile bounds an --args file.
const maxArgsFile = 4 << 20

func readSmallFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxArgsFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxArgsFile {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, maxArgsFile)
	}
	return b, nil
}

func trimTo(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// redactURL is a URL without its password and query.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an invalid URL)"
	}
	u.RawQuery, u.Fragment = "", ""
	return u.Redacted()
}

func (o *Options) mcpConfig() (probe.MCPConfig, error) {
	m := o.MCP
	cfg := probe.MCPConfig{Tools: m.Tools, Args: m.Args, KeyIn: m.KeyIn, CountTool: m.CountTool, CountArgs: m.CountArgs,
		CountPointer: m.CountPointer, Concurrency: o.Concurrency, MaxTime: o.MaxTime, Version: cli.Version()}
	if o.Count != "" {
		cfg.Count = countCommand(o.Count)
	}
	if m.URL != "" {
		cfg.URL, cfg.Server = m.URL, redactURL(m.URL)
		cfg.Header = http.Header{}
		for _, line := range m.Headers {
			name, value, _ := strings.Cut(line, ":")
			cfg.Header.Add(strings.TrimSpace(name), strings.TrimSpace(value))
		}
		if o.Request.Transport.Insecure {
			fmt.Fprintf(o.f.IO.Err, "idemkey: warning: -k: the server's TLS certificate is not verified\n")
		}
		client, err := post.NewClient(o.Request.Transport)
		if err != nil {
			return cfg, probeCode(err)
		}
		cfg.Client = client
	} else {
		cfg.Server = filepath.Base(m.Command[0]) // its arguments may hold a secret
		cfg.Dial = o.startServer
	}
	if o.Reconcile != nil {
		cfg.Reconcile = o.reconciler()
	}
	return cfg, nil
}

// serverIO is a stdio server's pipes; Close closes its input and stops
// it (SIGTERM after a grace, then SIGKILL), as idemkey mcp stops one.
type serverIO struct {
	r, w   *os.File
	c      *exec.Cmd
	exited chan struct{}
}

func (s *serverIO) Read(p []byte) (int, error)  { return s.r.Read(p) }
func (s *serverIO) Write(p []byte) (int, error) { return s.w.Write(p) }

func (s *serverIO) Close() error {
	_ = s.w.Close()
	defer s.r.Close() // a child the server left may hold its output open
	for _, sig := range []os.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t := time.NewTimer(time.Second)
		select {
		case <-s.exited:
			t.Stop()
			return nil
		case <-t.C:
		}
		_ = s.c.Process.Signal(sig)
	}
	<-s.exited
	return nil
}

// startServer starts a new process of the stdio server: its standard
// error is idemkey's.
func (o *Options) startServer(context.Context) (io.ReadWriteCloser, error) {
	m := o.MCP
	c := exec.Command(m.Command[0], m.Command[1:]...)
	c.Stderr = o.f.IO.Err
	// Pipes of idemkey's own, not exec's: Wait would close them.
	inR, in, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		in.Close()
		return nil, err
	}
	c.Stdin, c.Stdout = inR, outW
	err = c.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		in.Close()
		outR.Close()
		return nil, &startError{fmt.Errorf("%s: %v", m.Command[0], err)}
	}
	s := &serverIO{r: outR, w: in, c: c, exited: make(chan struct{})}
	go func() {
		_ = c.Wait()
		close(s.exited)
	}()
	return s, nil
}

type startError struct{ err error }

func (e *startError) Error() string { return e.err.Error() }

// reconciler runs --reconcile as run --reconcile runs it (the same
// environment: IDEMPOTENCY_KEY, IDEMPOTENCY_ATTEMPT, IDEMKEY_TASK,
// IDEMKEY_TOOL; the arguments on its standard input).
func (o *Options) reconciler() probe.Reconciler {
	return func(ctx context.Context, key, tool string, args []byte) (probe.Said, string) {
		rc := *o.Reconcile
		rc.Args = func(*ledger.Record) ([]byte, error) { return args, nil }
		r := rc.Run(ctx, &ledger.Record{Key: key, Attempt: 1, Tool: tool})
		note := ""
		if r.Note != "" {
			note = ": " + cli.DiagLine(r.Note)
		}
		switch r.Verdict {
		case ledger.NotHappened:
			return probe.SaidNotHappened, "exit 1" + note
		case ledger.Undecided:
			return probe.SaidUnknown, cli.DiagLine(r.Note)
		case ledger.Happened:
			if r.Duplicated {
				return probe.SaidHappened, "exit 3, more than once" + note
			}
			return probe.SaidHappened, "exit 0" + note
		}
		return probe.SaidUnknown, r.Verdict.String() + note
	}
}

// loadReconcile reads --reconcile and --reconcile-timeout (of both
// probes).
func (o *Options) loadReconcile() error {
	cfg := o.f.Config
	command := cfg.GetString("reconcile")
	if command == "" {
		return nil
	}
	timeout, err := cli.ParseDays(cfg.GetString("reconcile-timeout"))
	if err != nil || timeout <= 0 {
		return cli.Usagef("invalid --reconcile-timeout %q (want a duration such as 500ms, 30s or 2m)", cfg.GetString("reconcile-timeout"))
	}
	o.Reconcile = &step.Reconcile{Command: command, Timeout: timeout, MaxOutput: maxReconcileOutput}
	return nil
}

// maxReconcileOutput bounds what a checked reconcile command may print:
// it is read, never kept.
const maxReconcileOutput = 64 << 10

func (o *Options) runMCP() error {
	ios := o.f.IO
	cfg, err := o.mcpConfig()
	if err != nil {
		return err
	}
	ctx := context.Background()
	if o.DryRun {
		plan, err := probe.PlanMCP(ctx, cfg)
		if err != nil {
			return mcpFailure(err)
		}
		return o.writeMCPPlan(cfg, plan)
	}
	if ios.OutClosed() {
		return &cli.CodeError{Code: cli.ExitUsage, Err: errors.New("standard output is closed, so the report would be lost; nothing was sent")}
	}
	rep, err := probe.RunMCP(ctx, cfg)
	if err != nil {
		return mcpFailure(err)
	}
	return o.writeReport(rep, func() error { return o.writeMCPTable(rep) })
}

// mcpFailure says why the probe stopped: the server could not be started
// or reached, a call got no answer, a count failed. All exit 2.
func mcpFailure(err error) error {
	var me *probe.MCPError
	var se *startError
	switch {
	case errors.As(err, &se):
		return &cli.CodeError{Code: cli.ExitUsage, Err: &cli.HintedError{Msg: "the server could not be started: " + se.Error()}}
	case errors.As(err, &me) && me.Tool == "":
		return &cli.CodeError{Code: cli.ExitUsage, Err: &cli.HintedError{Msg: "the server could not be probed: " + cli.DiagLine(me.Err.Error()),
			HintText: "nothing was called; check its command or --url"}}
	case errors.As(err, &me):
		sent := "no tools/call had been sent"
		if me.Sent > 0 {
			sent = fmt.Sprintf("%d tools/call %s had been sent, and what they did stands", me.Sent, cli.Plural(me.Sent, "request", "requests"))
		}
		return &cli.CodeError{Code: cli.ExitUsage, Err: &cli.HintedError{
			Msg: fmt.Sprintf("probe stopped at %s's %s rule: %s", me.Tool, me.Rule, cli.DiagLine(me.Err.Error())), HintText: sent}}
	}
	return &cli.CodeError{Code: cli.ExitUsage, Err: err}
}

// writeMCPTable writes the report as a table, a block per tool.
func (o *Options) writeMCPTable(rep *probe.MCPReport) error {
	ios, paint := o.f.IO, o.paints()
	var b strings.Builder
	fmt.Fprintf(&b, "server: %s\n", cli.EscapeControls(rep.Server))
	if len(rep.Tools) == 0 {
		b.WriteString("no tool to probe: every tool says readOnlyHint: true (name one with --tool)\n")
	}
	kw := len("KEY-IN")
	for _, t := range rep.Tools {
		for _, r := range t.Rules {
			kw = max(kw, len(cli.EscapeControls(r.KeyIn)))
		}
	}
	for _, t := range rep.Tools {
		fmt.Fprintf(&b, "\ntool: %s\n%-14s  %-*s  %-10s  %s\n", cli.EscapeControls(t.Tool), "RULE", kw, "KEY-IN", "VERDICT", "EVIDENCE")
		for _, r := range t.Rules {
			v := fmt.Sprintf("%-10s", r.Verdict)
			if c := paint[r.Verdict]; c != nil {
				v = c.Sprint(v)
			}
			k := r.KeyIn
			if k == "" {
				k = "-"
			}
			fmt.Fprintf(&b, "%-14s  %-*s  %s  %s\n", r.Rule, kw, cli.EscapeControls(k), v, cli.EscapeControls(r.Evidence))
		}
	}
	_, err := io.WriteString(ios.Out, b.String())
	return err
}

// writeMCPPlan prints what probe --mcp would call.
func (o *Options) writeMCPPlan(cfg probe.MCPConfig, plan *probe.ProbePlan) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# idemkey probe --mcp: the calls it would make to %s (only initialize and tools/list were sent)\n", cli.EscapeControls(plan.Server))
	fmt.Fprintf(&b, "# keys go in: %s; keys are fresh UUIDs on every run\n", strings.Join(cfg.KeyIn, ", "))
	for _, t := range plan.Tools {
		if t.Calls == 0 {
			fmt.Fprintf(&b, "\n%s: not tested: %s\n", cli.EscapeControls(t.Tool), t.Why)
			continue
		}
		fmt.Fprintf(&b, "\n%s: up to %d calls with arguments %s\n", cli.EscapeControls(t.Tool), t.Calls, cli.EscapeControls(string(t.Args)))
		fmt.Fprintf(&b, "  replay 2, lost-response 2 (on two new connections), mismatch 2, in-flight %d, for each key place; no-key 2\n", cfg.Concurrency)
	}
	switch {
	case o.Count != "":
		fmt.Fprintf(&b, "\n# --count runs before and after each rule's calls: %s\n", o.Count)
	case cfg.CountTool != "":
		fmt.Fprintf(&b, "\n# --count-tool %s is called before and after each rule's calls\n", cfg.CountTool)
	}
	if cfg.Reconcile != nil {
		b.WriteString("# --reconcile runs twice per tool: for the replay rule's key and for a key never sent\n")
	}
	if _, err := io.WriteString(o.f.IO.Out, b.String()); err != nil {
		return &cli.OutputError{Err: err}
	}
	return nil
}
