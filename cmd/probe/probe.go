// Package probe is the face of 'idemkey probe': an endpoint meant to
// honour the Idempotency-Key header, tested with real requests (the
// library: derive/probe; the request's flags: cmd/internal/curlflags).
package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/fatih/color"
	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/curlflags"
	"github.com/idemkey/idemkey/cmd/internal/proc"
	"github.com/idemkey/idemkey/cmd/internal/settings"
	"github.com/idemkey/idemkey/cmd/internal/step"
	"github.com/idemkey/idemkey/derive/post"
	"github.com/idemkey/idemkey/derive/probe"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Options are idemkey probe's settings: curl's request flags, read
// and turned into a request by post's own code (curlflags.Request), and
// the probe's.
type Options struct {
	f       *cli.Factory
	Request *curlflags.Request // URL, method, headers, -u, -A, the body flag, TLS

	data        []curlflags.DataArg
	Concurrency int
	After       time.Duration
	Count       string
	RequireKey  bool
	JSON        bool
	Yes         bool
	DryRun      bool
	MaxTime     time.Duration
	// Reconcile is a reconcile command to check (--reconcile).
	Reconcile *step.Reconcile
	// MCP is probe --mcp's server and tools (nil: an HTTP endpoint).
	MCP *MCPOptions
}

// probeJSONReport is what a bare --json sets (see probeJSON).
const probeJSONReport = "true"

// probeJSON is probe's --json: given alone it asks for the report as
// JSON, the way every idemkey command spells it; given a value
// (--json=DATA) it is curl's --json body flag. It is a list value, so
// that both may be given.
type probeJSON struct {
	report *bool
	data   *[]curlflags.DataArg
}

func (j probeJSON) String() string { return strconv.FormatBool(*j.report) }
func (j probeJSON) Type() string   { return "bool" } // help shows a bare --json
func (j probeJSON) Set(v string) error {
	if v == "true" || v == "false" { // --json, --json=true, --json=false
		*j.report = v == "true"
		return nil
	}
	*j.data = append(*j.data, curlflags.DataArg{Flag: "json", Value: v})
	return nil
}
func (j probeJSON) Append(v string) error  { return j.Set(v) }
func (j probeJSON) Replace([]string) error { return errors.New("not supported") }
func (j probeJSON) GetSlice() []string     { return []string{j.String()} }
func (j probeJSON) IsBoolFlag() bool       { return true }

// NewCmd builds 'idemkey probe': its options, its flags, and run; with
// runF, runF instead of run, once the options are read (a test's seam for
// the flags).
func NewCmd(f *cli.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{f: f, Request: &curlflags.Request{F: f}}
	cmd := &cobra.Command{
		Use:   "probe URL --yes [-X METHOD] [-H 'Name: value'] [-d BODY] [flags]\n  idemkey probe --mcp --yes --tool NAME --args JSON|@FILE [flags] (-- SERVER [ARG...] | --url URL)",
		Short: "Test whether an HTTP endpoint or an MCP server's write tools really dedupe by key (makes real writes)",
		Long:  probeLong,
		Example: `  idemkey probe http://127.0.0.1:8080/charges -d '{"amount":100}' --dry-run
  idemkey probe https://staging.example.com/v1/charges --yes -d @charge.json \
      -H "Authorization: Bearer $TOKEN" --after 5m --json
  idemkey probe http://127.0.0.1:8080/charges --yes -d @charge.json \
      --count 'psql -Atc "select count(*) from charges" test' --require-key
  idemkey probe --mcp --yes --tool charge --args @charge.json -- node server.js`,
		Args: func(cmd *cobra.Command, args []string) error {
			if isMCP, _ := cmd.Flags().GetBool("mcp"); isMCP {
				return nil // the server's command line
			}
			err := cli.RangeArgs(1, 1)(cmd, args)
			var ue *cli.UsageError
			if len(args) > 1 && opts.JSON && errors.As(err, &ue) {
				ue.HintText = "a bare --json prints the report as JSON; curl's --json body takes its value after '=': --json='{…}' or --json=@FILE"
			}
			return err
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.parse(cmd.Flags(), args); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return run(opts)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &cli.UsageError{Err: err, HintText: "run 'idemkey probe --help' for usage"}
	})
	addProbeFlags(cmd.Flags(), opts)
	return cmd
}

const probeLong = `Send requests to URL, an endpoint meant to honour the Idempotency-Key
header, and report rule by rule whether it does what the IETF draft
(draft-ietf-httpapi-idempotency-key-header-09) asks of the system that
owns the effect, before 'idemkey post' or 'run --recover retry' rely on it.

A probe makes real writes: each of its requests may charge, create or
deploy something, and it sends up to about 25 (see --dry-run). It refuses
to run without --yes; --dry-run prints the requests it would send and
sends nothing. Point it at a test deployment.

Every request is built from curl's flags as post builds it (-X, -H, -A, -u,
--cacert, -E/--key, -k) with the body as given (-d @FILE, -d @- for
standard input, -d '{…}', --data-binary, --data-raw, --json=DATA), sent as
written. Its key, under --key-header, is made fresh for the probe: random,
and in a form no key that idemkey derives can take.

Rules (verdicts: pass, fail, info, not-tested):
  replay      the same key and body again get the first response (its
              identity), not a second effect; a replay header or a changed
              body is reported as it is
  mismatch    the same key with a changed body (the first number of the
              JSON object plus one) gets the draft's 422; another refusal
              is info; the first response again or a second effect fails
  in-flight   --concurrency requests with one key at once make one effect,
              the others get the draft's 409 or the first response
  required    without a key: the draft's 400 (or 422, 428) passes; another
              refusal (401, 429, 5xx) is info, since it need not be about
              the key; processed is info, a failure with --require-key
  key-limits  the longest key accepted, up to 255 characters, and whether a
              UUID, a hex SHA-256 and a base64url key (idemkey's formats)
              are accepted: pass for all three, info for some, fail for
              none; the other rules then use a key of a shape accepted
  retention   with --after DURATION, the replay's key sent again after that
              long still replays; not-tested without --after

Effects are judged from the responses: a replay returns the first
response's identity, its JSON "id" member, else its Location header, else
its whole body. With --count COMMAND they are counted instead: COMMAND,
run by sh -c within 30 seconds, prints how many effects the endpoint has
made so far (a row count in a test database).

Output: a table (rule, verdict, evidence) on standard output. A bare
--json prints one object instead, {"url":…, "rules":[{"rule":…,
"verdict":…, "evidence":…}, …]}; --json=DATA is curl's body flag. Every
flag is read from the command line only, never from IDEMKEY_* or the
config file.

With --reconcile COMMAND, the probe also checks a reconcile command
against controls: run as 'run --reconcile' runs it, it must say happened
(exit 0) for the replay rule's key and did not happen (exit 1) for a key
never sent; any other answer fails the reconcile rule.

With --mcp, the probe tests an MCP server's write tools instead: a stdio
server started from its command after --, or a Streamable HTTP server at
--url. For each tool of --tool (default: every tool tools/list does not
mark readOnlyHint) called with --args, with the key where --key-in puts
it (_meta, an argument, or the Idempotency-Key header), the rules are
replay, lost-response (the connection cut after the first call, the call
sent again on a new one), mismatch, in-flight, no-key (info; fail when an
idempotentHint or readOnlyHint is contradicted) and description (a
description that asks the model for a new key per call fails). A tool
without --args is not tested. Effects are counted by --count, by a read
tool (--count-tool, --count-args, --count-pointer), or judged by the
answers.

Exit codes:
  0  no rule failed
  1  a rule failed
  2  usage or input error, a request that got no response (connection
     refused, timeout, TLS), or a --count that failed`

func addProbeFlags(fl *pflag.FlagSet, o *Options) {
	fl.SortFlags = false
	fl.Bool("yes", false, "send the requests: a probe makes real writes")
	fl.Bool("dry-run", false, "print the requests a probe would send, and send nothing")
	for _, d := range []struct{ name, short, usage string }{
		{"data", "d", "body of every request: @FILE, @- for standard input, or the text itself"},
		{"data-binary", "", "body, as -d"},
		{"data-raw", "", "body given literally: a leading @ is not a file name"},
	} {
		fl.VarP(curlflags.DataFlags{Name: d.name, All: &o.data}, d.name, d.short, d.usage)
	}
	js := fl.VarPF(probeJSON{&o.JSON, &o.data}, "json", "", "print the report as one JSON object; --json=DATA is curl's --json body (with Accept: application/json)")
	js.NoOptDefVal = probeJSONReport
	fl.StringP("request", "X", "POST", "method: POST, PUT or PATCH")
	fl.StringArrayP("header", "H", nil, "extra `HEADER` 'Name: value' on every request (repeatable; 'Name:' removes a default one)")
	fl.String("key-header", "Idempotency-Key", "`NAME` of the header that carries the key")
	fl.Int("concurrency", 5, "in-flight: send `N` requests with one key at once (2 to 100)")
	fl.String("after", "", "retention: send the replay's key again after `DURATION` (30s, 5m, 1h)")
	fl.String("count", "", "judge effects by what `COMMAND` prints: how many the endpoint has made so far (run by sh -c)")
	fl.Bool("require-key", false, "a request processed without a key fails the required rule")
	fl.StringP("user-agent", "A", "", "User-Agent header (default idemkey/VERSION)")
	fl.StringP("user", "u", "", "basic auth 'user:password' (redacted in --dry-run)")
	fl.String("cacert", "", "PEM file of CA certificates to verify the server with")
	fl.StringP("cert", "E", "", "client certificate (PEM; may hold the key too)")
	fl.String("key", "", "client private key (PEM), for --cert")
	fl.BoolP("insecure", "k", false, "skip TLS certificate verification (warned about)")
	fl.Float64P("max-time", "m", 30, "seconds allowed for each request (0: no limit)")
	fl.Float64("connect-timeout", 10, "seconds allowed for connecting, TLS included")
	addMCPFlags(fl)
	var names []string
	fl.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	// What is sent, where and how securely, and whether at all: never
	// from a stray IDEMKEY_YES or a config file.
	settings.CommandLineOnly(fl, names...)
}

// probeMaxConcurrency bounds --concurrency: the in-flight rule is about
// a few retries racing, not a load test.
const probeMaxConcurrency = 100

// parse resolves the options of an MCP probe (--mcp: args are the
// server's command) or of an HTTP one (args[0] is the URL); nothing is
// started or sent.
func (o *Options) parse(fl *pflag.FlagSet, args []string) error {
	if isMCP, _ := fl.GetBool("mcp"); isMCP {
		if err := o.loadCommon(fl); err != nil {
			return err
		}
		return o.loadMCP(fl, args)
	}
	for _, n := range mcpOnly {
		if cli.Changed(fl, n) {
			return &cli.UsageError{Err: fmt.Errorf("--%s is for --mcp", n), HintText: "idemkey probe --mcp --yes --tool NAME --args JSON -- SERVER [ARG...]"}
		}
	}
	return o.load(fl, args[0])
}

// load resolves the options of an HTTP probe; nothing is sent.
func (o *Options) load(fl *pflag.FlagSet, rawURL string) error {
	r, cfg := o.Request, o.f.Config
	var err error
	if r.URL, err = post.ParseURL(rawURL); err != nil {
		return probeCode(err)
	}
	if len(o.data) > 1 {
		return &cli.UsageError{Err: fmt.Errorf("more than one body: --%s and --%s", o.data[0].Flag, o.data[1].Flag),
			HintText: "every request of a probe sends one body; curl would join the two with '&'"}
	}
	if len(o.data) == 1 {
		r.Data = o.data[0]
	}
	r.KeyHeader = strings.TrimSpace(cfg.GetString("key-header"))
	if err := post.CheckKeyHeader(r.KeyHeader, "--key-header"); err != nil {
		return err
	}
	if err := r.LoadFlags(fl); err != nil {
		return err
	}
	for _, line := range r.Headers {
		if name, _, _, err := post.ParseHeaderLine(line); err == nil && strings.EqualFold(name, r.KeyHeader) {
			return &cli.UsageError{Err: fmt.Errorf("-H sets %s, which the probe sets itself, to keys made fresh for it", r.KeyHeader),
				HintText: "a probe never sends a key that a real step could use; --key-header NAME names the header the endpoint reads"}
		}
	}
	r.Transport.Insecure, _ = fl.GetBool("insecure")
	r.Transport.CACert = cfg.GetString("cacert")
	if err := o.loadCommon(fl); err != nil {
		return err
	}
	if after := cfg.GetString("after"); after != "" {
		if o.After, err = cli.ParseDays(after); err != nil || o.After <= 0 {
			return &cli.UsageError{Err: fmt.Errorf("invalid --after %q (want a duration such as 30s, 5m or 1h)", after)}
		}
	}
	o.RequireKey = cfg.GetBool("require-key")
	if _, err := post.ProxyFor(r.Transport.Getenv, r.URL); err != nil {
		return err
	}
	return nil
}

// loadCommon resolves the settings both probes have.
func (o *Options) loadCommon(fl *pflag.FlagSet) error {
	cfg, r := o.f.Config, o.Request
	var err error
	if r.Transport.ConnectTimeout, err = cfg.Seconds("connect-timeout", false); err != nil {
		return err
	}
	if o.MaxTime, err = cfg.Seconds("max-time", false); err != nil {
		return err
	}
	if o.Concurrency, err = cfg.Int("concurrency", 2); err != nil {
		return err
	}
	if o.Concurrency > probeMaxConcurrency {
		return cfg.Invalid("concurrency", fmt.Sprintf("want at most %d", probeMaxConcurrency))
	}
	o.Count = cfg.GetString("count")
	if cli.Changed(fl, "count") && strings.TrimSpace(o.Count) == "" {
		return cli.Usagef("--count needs a command that prints how many effects the endpoint has made")
	}
	o.Yes, o.DryRun = cfg.GetBool("yes"), cfg.GetBool("dry-run")
	if o.DryRun && o.JSON {
		return &cli.UsageError{Err: errors.New("--dry-run prints the requests, not a report, so --json has nothing to print"),
			HintText: "drop --json, or --dry-run to run the probe"}
	}
	return o.loadReconcile()
}

// probeCode gives curl's URL error (exit 3 in post) probe's exit code
// for usage errors.
func probeCode(err error) error {
	var ce *post.Error
	if errors.As(err, &ce) {
		return &cli.CodeError{Code: cli.ExitUsage, Err: ce.Err}
	}
	return err
}

// config builds the probe's configuration: the request as post builds
// it, the body read, the client.
func (o *Options) config() (probe.Config, error) {
	r := o.Request
	cfg := probe.Config{KeyHeader: r.KeyHeader, Concurrency: o.Concurrency, After: o.After,
		RequireKey: o.RequireKey, MaxTime: o.MaxTime}
	if r.Data.Flag != "" {
		body, _, err := r.ReadData()
		if err != nil {
			return cfg, err
		}
		cfg.Body = body
	}
	req, err := r.NewBase()
	if err != nil {
		return cfg, probeCode(err)
	}
	if cfg.Body == nil && !headerGiven(r.Headers, "Content-Type") {
		req.Header.Del("Content-Type") // no body, no type
	}
	cfg.Request = req
	if o.Count != "" {
		cfg.Count = countCommand(o.Count)
	}
	if o.Reconcile != nil {
		cfg.Reconcile = o.reconciler()
	}
	cfg.Log = func(s string) { fmt.Fprintf(o.f.IO.Err, "idemkey: probe: %s\n", cli.DiagLine(s)) }
	return cfg, nil
}

func headerGiven(lines []string, name string) bool {
	for _, line := range lines {
		if n, _, _ := strings.Cut(line, ":"); strings.EqualFold(strings.TrimSpace(n), name) {
			return true
		}
		if n, _, _ := strings.Cut(line, ";"); strings.EqualFold(strings.TrimSpace(n), name) {
			return true
		}
	}
	return false
}

func run(o *Options) error {
	ios := o.f.IO
	if o.MCP != nil {
		if !o.Yes && !o.DryRun {
			return &cli.UsageError{Err: fmt.Errorf("a probe makes real writes: up to %d tools/call requests per tool probed, each of which may have an effect; nothing was started or sent",
				probe.MCPCallsPerTool(probe.MCPConfig{KeyIn: o.MCP.KeyIn, Concurrency: o.Concurrency})),
				HintText: "point it at a test deployment and give --yes to make them, or --dry-run to see them first"}
		}
		return o.runMCP()
	}
	cfg, err := o.config()
	if err != nil {
		return err
	}
	if o.DryRun {
		return o.dryRun(cfg)
	}
	if !o.Yes {
		return &cli.UsageError{Err: fmt.Errorf("a probe makes real writes: up to %d requests to %s, each of which may have an effect; nothing was sent",
			probe.MaxRequests(cfg), o.Request.URL.Redacted()),
			HintText: "point it at a test deployment and give --yes to send them, or --dry-run to see them first"}
	}
	if ios.OutClosed() {
		return &cli.CodeError{Code: cli.ExitUsage, Err: errors.New("standard output is closed, so the report would be lost; nothing was sent")}
	}
	if o.Request.Transport.Insecure {
		fmt.Fprintf(ios.Err, "idemkey: warning: -k: the server's TLS certificate is not verified\n")
	}
	if cfg.Client, err = post.NewClient(o.Request.Transport); err != nil {
		return probeCode(err)
	}
	rep, err := probe.Run(context.Background(), cfg)
	if err != nil {
		return probeFailure(err)
	}
	return o.writeReport(rep, func() error { return o.writeTable(rep) })
}

// writeReport writes a probe's report, as JSON or as table writes it, and
// exits 1 when a rule failed.
func (o *Options) writeReport(rep interface{ Failed() bool }, table func() error) error {
	var err error
	if o.JSON {
		err = writeProbeJSON(o.f.IO.Out, rep)
	} else {
		err = table()
	}
	if err != nil {
		return &cli.OutputError{Err: err}
	}
	if rep.Failed() {
		return &cli.ExitError{Code: cli.ExitNegative}
	}
	return nil
}

// probeFailure says why the probe stopped: a request that got no
// response, or a --count that failed. Both exit 2.
func probeFailure(err error) error {
	var se *probe.SendError
	var ce *probe.CountError
	switch {
	case errors.As(err, &se):
		cerr := post.Classify(se.Err, se.InBody)
		he := &cli.HintedError{Msg: fmt.Sprintf("probe stopped at the %s rule: %s", se.Rule, cerr.Err)}
		if h := (*post.Hinted)(nil); errors.As(cerr.Err, &h) {
			he.HintText = h.Advice
		}
		sent := "it was the first request: nothing had been sent"
		if !cerr.BeforeSending() {
			sent = "the first request was sent and may have had an effect"
		}
		if se.Sent > 0 {
			sent = fmt.Sprintf("%d %s had been sent before it, and what they did stands", se.Sent, cli.Plural(se.Sent, "request", "requests"))
		}
		if he.HintText != "" {
			sent = he.HintText + "; " + sent
		}
		he.HintText = sent
		return &cli.CodeError{Code: cli.ExitUsage, Err: he}
	case errors.As(err, &ce):
		return &cli.CodeError{Code: cli.ExitUsage, Err: &cli.HintedError{Msg: fmt.Sprintf("probe stopped at the %s rule: %s", ce.Rule, ce.Err),
			HintText: "--count COMMAND must exit 0 and print one whole number, the effects the endpoint has made so far"}}
	}
	return &cli.CodeError{Code: cli.ExitUsage, Err: err}
}

func writeProbeJSON(w io.Writer, rep any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rep); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeTable writes the report as a table; verdicts are coloured on a
// terminal.
func (o *Options) writeTable(rep *probe.Report) error {
	ios, paint := o.f.IO, o.paints()
	var b strings.Builder
	fmt.Fprintf(&b, "%-10s  %-10s  %s\n", "RULE", "VERDICT", "EVIDENCE")
	for _, r := range rep.Rules {
		v := fmt.Sprintf("%-10s", r.Verdict)
		if c := paint[r.Verdict]; c != nil {
			v = c.Sprint(v)
		}
		fmt.Fprintf(&b, "%-10s  %s  %s\n", r.Rule, v, cli.EscapeControls(r.Evidence))
	}
	_, err := io.WriteString(ios.Out, b.String())
	return err
}

// paints are the verdicts' colours on a terminal.
func (o *Options) paints() map[string]*color.Color {
	ios, mode := o.f.IO, o.f.ColorMode()
	return map[string]*color.Color{
		probe.Pass:      ios.Paint(mode, ios.Out, color.FgGreen),
		probe.Fail:      ios.Paint(mode, ios.Out, color.FgRed, color.Bold),
		probe.Info:      ios.Paint(mode, ios.Out, color.FgYellow),
		probe.NotTested: ios.Paint(mode, ios.Out, color.Faint),
	}
}

// dryRun prints every request the probe would send, as post's --dry-run
// prints one, each under a comment line naming its rule.
func (o *Options) dryRun(cfg probe.Config) error {
	plan, err := probe.Plan(cfg)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# idemkey probe: the requests it would send (%d at most; keys are fresh on every run); nothing was sent\n",
		probe.MaxRequests(cfg))
	for _, p := range plan {
		req := cfg.Request.Clone(context.Background())
		req.Header.Del(cfg.KeyHeader)
		if p.Key != "" {
			req.Header.Set(cfg.KeyHeader, p.Key)
		}
		note := p.Note
		if p.Key == "" {
			note += ": no " + cfg.KeyHeader + " header"
		}
		fmt.Fprintf(&b, "\n# %s: %s\n", p.Rule, note)
		o.Request.WriteHeadLines(&b, "", post.RequestHead(req, p.Body), req.Method+" "+req.URL.Redacted())
		b.WriteString("\n")
		b.Write(p.Body)
		if len(p.Body) > 0 && p.Body[len(p.Body)-1] != '\n' {
			b.WriteString("\n")
		}
	}
	if cfg.Count != nil {
		fmt.Fprintf(&b, "\n# --count runs before and after each rule's requests: %s\n", o.Count)
	}
	if cfg.Reconcile != nil {
		b.WriteString("# --reconcile runs twice after the replay rule: for its key and for a key never sent\n")
	}
	if _, err := io.WriteString(o.f.IO.Out, b.String()); err != nil {
		return &cli.OutputError{Err: err}
	}
	return nil
}

// probeCountTimeout bounds one run of --count.
const probeCountTimeout = 30 * time.Second

// countCommand runs COMMAND with sh -c and reads the whole number it
// prints. Its output is bounded: a command that prints without end is
// an error, not a memory leak.
func countCommand(command string) probe.Counter {
	return func(ctx context.Context) (int64, error) {
		ctx, cancel := context.WithTimeout(ctx, probeCountTimeout)
		defer cancel()
		c := exec.CommandContext(ctx, "sh", "-c", command)
		out, errb := &proc.Capped{Max: 4096}, &proc.Capped{Max: 4096}
		c.Stdout, c.Stderr = out, errb
		c.WaitDelay = time.Second // a child that keeps the pipes open
		err := c.Run()
		switch {
		case ctx.Err() != nil:
			return 0, fmt.Errorf("--count did not finish within %s", probeCountTimeout)
		case err != nil:
			why := strings.TrimSpace(errb.String())
			if i := strings.IndexByte(why, '\n'); i >= 0 {
				why = why[:i]
			}
			if why != "" {
				why = ": " + cli.Printable(why)
			}
			return 0, fmt.Errorf("--count failed (%s)%s", post.RootCause(err), why)
		}
		text := strings.TrimSpace(out.String())
		n, perr := strconv.ParseInt(text, 10, 64)
		if perr != nil || n < 0 {
			return 0, fmt.Errorf("--count printed %s, not a whole number of effects", cli.Printable(text))
		}
		return n, nil
	}
}
