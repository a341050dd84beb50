// Package post is the face of 'idemkey post': curl's POST with the key
// derived from the body, retried with the same key, and with --ledger sent
// once (the exchange: derive/post; the request's flags:
// cmd/internal/curlflags; the hold: derive/ledger/hold.go).
package post

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/curlflags"
	"github.com/idemkey/idemkey/cmd/internal/keyflags"
	"github.com/idemkey/idemkey/derive"
	"github.com/idemkey/idemkey/derive/post"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Options are post's settings, read by load from the flags, the
// IDEMKEY_* variables and the config file.
// Options are post's settings.
type Options struct {
	curlflags.Request // the request curl's flags describe
	f                 *cli.Factory
	Spec              *derive.Spec
	Key               keyflags.Key

	Output     string // -o
	DumpHeader string // -D
	WriteOut   *post.WriteOut

	Include, Silent, ShowError, Verbose bool
	Fail, FailWithBody, DryRun          bool
	SendAsIs, Lossy, KeyQuoted          bool
	Location                            bool
	MaxRedirs                           int

	Retry        int
	RetryDelay   time.Duration
	RetryMaxTime time.Duration
	MaxTime      time.Duration

	ledger *postLedger // post --ledger (post_ledger.go)
	// leaseLost is closed when the ledger's claim of the key is lost: no
	// retry is sent after it (the newer holder sends its own).
	leaseLost <-chan struct{}
	selection string // the --only/--omit the key was derived under, "" for none
}

// postLong is post's --help: what is sent, the retries, the ledger, the
// settings and curl's exit codes.
const postLong = `Send a tool call's args to URL, curl style, with the derived key in an
Idempotency-Key header, and retry with the same key and the same body bytes
when the outcome is unknown or the server asks for it.

The body (-d @FILE, -d @- for standard input, or -d '{…}' inline; also
--data-binary, --data-raw and --json as in curl) is parsed as JSON, at most
64 MiB; the key is the one 'idemkey key' prints for the same task, tool
and args. What is sent is the canonical form of the args with
Content-Type: application/json, or the original bytes with --send-as-is.
A body whose canonical form would change a value (an integer past 2^53
rounded, a number past the double range sent as null, a repeated member
name dropped) is refused unless --send-as-is or --lossy says what to send.

Retries (--retry N, within --retry-max-time): exponential backoff from
--retry-delay (default 1s, also for 0, doubling, capped at 10m, with
jitter) on connection refused or reset, DNS failure, TLS handshake failure,
timeout, an empty or truncated reply, and HTTP 408, 409, 425, 429, 500, 502,
503, 504. Retry-After (seconds or an HTTP date) is honoured; a wait that
would pass --retry-max-time (or 6 hours without it) ends the retries at
once. Other 4xx are never retried; 422 means the server has seen this key
with a different payload, and exits 22 even without -f (the one difference
from curl).

With a ledger (--ledger PATH|URL, IDEMKEY_LEDGER or the config file's
ledger; --no-ledger for none), the final response (2xx, and 4xx but 408,
409, 425 and 429) is recorded under the key and replayed by later
invocations without the network; a request with the key in flight
elsewhere exits 75 (--wait DURATION waits for it); --reconcile COMMAND asks
the owner about a request whose outcome is unknown, as run's does.

The body of the final attempt is written once, to standard output or -o;
a large body is held in a temporary file until then, never whole in
memory. Durations are in seconds and may be fractional (--max-time 2.5).

--key-header, --key-quoted, --retry, --retry-delay, --retry-max-time,
--max-time, --connect-timeout, --cacert, --ledger, --wait, --lease, --scheme,
--task and --tool may also come from IDEMKEY_* variables (IDEMKEY_RETRY=3) or
the config file: IDEMKEY_LEDGER records post's requests as it records run's
steps (--no-ledger opts out).
Proxies come from http_proxy (lower case only), https_proxy, all_proxy and
no_proxy, as in curl.

Exit codes (curl's):
   0  a response arrived (any status but 422, unless -f or --fail-with-body)
   2  usage or input error (bad flag, invalid JSON, a lossy body); with
      a ledger, the ledger unavailable, or the key recorded for another
      URL or method (nothing is sent; idemkey run exits 125 for these)
   3  malformed URL
   5  could not resolve the proxy (http_proxy, https_proxy, all_proxy)
   6  could not resolve host
   7  failed to connect
   8  weird server reply (not HTTP, a bad header or Content-Length)
  18  reply shorter than its Content-Length
  22  HTTP status >= 400 with -f or --fail-with-body; HTTP 422 always
  23  cannot write the output (file, standard output, broken pipe)
  28  timed out (--max-time, --connect-timeout)
  35  TLS handshake failed
  47  more redirects than --max-redirs
  52  empty reply from server
  55  failure sending the request
  56  failure receiving the reply (connection reset)
  58  --cert or --key unusable
  60  server certificate did not verify
  61  unknown Transfer-Encoding in the reply
  75  with a ledger, the request with this key is in flight elsewhere
      (nothing is sent; --wait DURATION waits for it to end instead)
  77  --cacert unreadable or without certificates`

// NewCmd is 'idemkey post': the options struct, its flags, and run; with
// runF, runF instead of run, once the options are read (a test's seam for
// the flags and settings).
func NewCmd(f *cli.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{f: f, Request: curlflags.Request{F: f}}
	var data []curlflags.DataArg
	cmd := &cobra.Command{
		Use:   "post URL --task ID --tool NAME -d @ARGS.json",
		Short: "Send a tool call over HTTP with its idempotency key, retrying safely",
		Long:  postLong,
		Example: `  idemkey post https://api.example.com/v1/charges --task t-42 --tool charge \
      -d @args.json -H "Authorization: Bearer $TOKEN" --retry 5 -f
  echo '{"amount":100}' | idemkey post localhost:8080/pay --task t1 --tool pay -d @- -v
  idemkey post https://api.example.com/x --task t1 --tool x --json '{"a":1}' -w '%{http_code}\n'
  idemkey post https://api.example.com/x --task t1 --tool x -d '{"a":1}' --dry-run`,
		Args: func(cmd *cobra.Command, args []string) error {
			// A bare --ledger, as post once read it, takes the next word.
			if err := ledgerFlagValue(cmd.Flags(), len(args)); err != nil {
				return err
			}
			return cli.RangeArgs(1, 1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			err := opts.load(cmd.Flags(), args[0], data)
			switch {
			case err == nil && runF != nil:
				return runF(opts)
			case err == nil:
				err = run(opts)
			}
			var ce *post.Error
			if opts.Silent && !opts.ShowError && errors.As(err, &ce) {
				return &cli.ExitError{Code: ce.Code} // -s: the code only
			}
			return err
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &cli.UsageError{Err: err, HintText: "run 'idemkey post --help' for usage"}
	})
	opts.ledger = addPostFlags(cmd.Flags(), &data)
	return cmd
}

// addPostFlags registers post's flags, curl's names first, and returns
// the ledger's (post_ledger.go).
func addPostFlags(fl *pflag.FlagSet, data *[]curlflags.DataArg) *postLedger {
	fl.SortFlags = false
	keyflags.AddCallFlags(fl)
	keyflags.AddFormatFlags(fl)
	for _, d := range []struct{ name, short, usage string }{
		{"data", "d", "body: @FILE, @- for standard input, or the JSON itself (an envelope with --from)"},
		{"data-binary", "", "body, as -d (@FILE, @-, or the JSON itself)"},
		{"data-raw", "", "body given literally: a leading @ is not a file name"},
		{"json", "", "body as --data-binary, with Content-Type and Accept: application/json (curl's --json, 7.82; not a JSON report, as run --json is)"},
	} {
		fl.VarP(curlflags.DataFlags{Name: d.name, All: data}, d.name, d.short, d.usage)
	}
	fl.Bool("send-as-is", false, "send the body's original bytes instead of its canonical form")
	fl.Bool("lossy", false, "send the canonical form even where it changes a value (see above)")
	fl.String("key-header", "Idempotency-Key", "name of the header that carries the key")
	fl.Bool("key-quoted", false, `send the key as a Structured Field string ("…"), as the IETF draft writes it`)
	fl.StringArrayP("header", "H", nil, "extra `HEADER` 'Name: value' (repeatable; 'Name:' removes a default one)")
	fl.StringP("user-agent", "A", "", "User-Agent header (default idemkey/VERSION)")
	fl.StringP("request", "X", "POST", "method: POST, PUT or PATCH")
	fl.StringP("output", "o", "", "write the body to FILE instead of standard output")
	fl.BoolP("include", "i", false, "include the response status line and headers in the output")
	fl.StringP("dump-header", "D", "", "write the response headers to FILE (- for standard output)")
	fl.StringP("write-out", "w", "", "after the transfer, write FORMAT to standard output: %{http_code}, %{time_total}, %{idempotency_key}, … (@FILE reads it)")
	fl.BoolP("silent", "s", false, "no progress or error messages")
	fl.BoolP("show-error", "S", false, "with -s, still show errors")
	fl.BoolP("verbose", "v", false, "show the key and every attempt, as sent and received, on standard error (credentials redacted)")
	fl.BoolP("fail", "f", false, "on HTTP status >= 400 write no body and exit 22")
	fl.Bool("fail-with-body", false, "on HTTP status >= 400 write the body and exit 22")
	fl.BoolP("location", "L", false, "follow redirects: 307 and 308 with the same body and key; 303, and 301 or 302 after a POST, as GET")
	fl.Int("max-redirs", 50, "with -L, at most this many redirects (exit 47 past it; -1: no limit)")
	fl.Float64P("max-time", "m", 0, "seconds allowed for each attempt (0: no limit)")
	fl.Float64("connect-timeout", 300, "seconds allowed for connecting, TLS included")
	fl.Int("retry", 0, "retry up to N times with the same key")
	fl.Float64("retry-delay", 1, "seconds before the first retry; doubles after each (0: the default, 1)")
	fl.Float64("retry-max-time", 0, "start no retry after this many seconds (0: no limit)")
	fl.Bool("retry-all-errors", false, "not supported: idemkey never retries a definitive 4xx")
	fl.Bool("retry-connrefused", false, "accepted for curl's sake: a refused connection is always retried")
	fl.StringP("user", "u", "", "basic auth 'user:password' (redacted in -v)")
	fl.String("cacert", "", "PEM file of CA certificates to verify the server with")
	fl.StringP("cert", "E", "", "client certificate (PEM; may hold the key too)")
	fl.String("key", "", "client private key (PEM), for --cert")
	fl.BoolP("insecure", "k", false, "skip TLS certificate verification (warned about)")
	fl.Bool("dry-run", false, "print the request that would be sent and exit, with no network")
	return addPostLedgerFlag(fl)
}

// load resolves the settings. Those that are safe as defaults come from
// the configuration (flag, IDEMKEY_*, config file); those that change
// what is sent, where, or how securely come from the command line only, so
// that no stray IDEMKEY_INSECURE can turn off certificate checks.
func (o *Options) load(fl *pflag.FlagSet, rawURL string, data []curlflags.DataArg) error {
	f := o.f
	var err error
	if o.URL, err = post.ParseURL(rawURL); err != nil {
		return err
	}
	if cli.Changed(fl, "retry-all-errors") {
		return &cli.UsageError{Err: errors.New("--retry-all-errors is not supported"),
			HintText: "idemkey retries only what may succeed with the same key (timeouts, resets, 408, 409, 425, 429, 5xx); " +
				"a definitive 4xx means the server refused this request, and sending it again cannot change that"}
	}
	if o.Data, err = oneBody(data); err != nil {
		return err
	}
	if o.Spec, err = keyflags.Spec(f); err != nil {
		return err
	}
	if o.Key, err = keyflags.KeyFrom(f); err != nil {
		return err
	}
	o.Output, _ = fl.GetString("output")
	o.DumpHeader, _ = fl.GetString("dump-header")
	if o.MaxRedirs, err = f.Config.Int("max-redirs", -1); err != nil { // -1: no limit, as in curl
		return err
	}
	if err := o.LoadFlags(fl); err != nil {
		return err
	}
	for name, p := range map[string]*bool{
		"include": &o.Include, "silent": &o.Silent, "show-error": &o.ShowError,
		"verbose": &o.Verbose, "fail": &o.Fail, "fail-with-body": &o.FailWithBody,
		"dry-run": &o.DryRun, "send-as-is": &o.SendAsIs, "lossy": &o.Lossy, "insecure": &o.Transport.Insecure,
		"location": &o.Location,
	} {
		*p, _ = fl.GetBool(name)
	}
	if o.SendAsIs && o.Lossy {
		return cli.Usagef("--send-as-is and --lossy contradict each other: send the original bytes or the canonical form")
	}
	if err := o.loadHeaders(); err != nil {
		return err
	}
	o.Transport.CACert = f.Config.GetString("cacert")
	if o.Retry, err = f.Config.Int("retry", 0); err != nil {
		return err
	}
	for name, p := range map[string]*time.Duration{
		"retry-delay": &o.RetryDelay, "retry-max-time": &o.RetryMaxTime,
		"max-time": &o.MaxTime, "connect-timeout": &o.Transport.ConnectTimeout,
	} {
		if *p, err = f.Config.Seconds(name, false); err != nil {
			return err
		}
	}
	if _, err := post.ProxyFor(o.Transport.Getenv, o.URL); err != nil {
		return err
	}
	if err := o.ledger.load(f.Config, fl); err != nil {
		return err
	}
	if w, _ := fl.GetString("write-out"); cli.Changed(fl, "write-out") {
		if o.WriteOut, err = o.parseWriteOut(w); err != nil {
			return err
		}
	}
	return nil
}

// oneBody returns the one body flag given: post sends one JSON value.
func oneBody(data []curlflags.DataArg) (curlflags.DataArg, error) {
	switch len(data) {
	case 0:
		return curlflags.DataArg{}, &cli.UsageError{Err: errors.New("missing body: give -d @FILE, -d @- or -d '{…}'"),
			HintText: "the key is derived from the body, so post needs one"}
	case 1:
		return data[0], nil
	}
	return curlflags.DataArg{}, &cli.UsageError{Err: fmt.Errorf("more than one body: --%s and --%s", data[0].Flag, data[1].Flag),
		HintText: "post sends one JSON value, and its key is derived from it; curl would join the two with '&'"}
}

// loadHeaders reads the key's header (--key-header, --key-quoted) and
// checks every -H line, before anything is sent.
func (o *Options) loadHeaders() error {
	c := o.f.Config
	o.KeyQuoted = c.GetBool("key-quoted")
	o.KeyHeader = strings.TrimSpace(c.GetString("key-header"))
	if err := post.CheckKeyHeader(o.KeyHeader, c.Source("key-header")); err != nil {
		return err
	}
	for _, line := range o.Headers {
		if _, _, _, err := post.ParseHeaderLine(line); err != nil {
			return err
		}
	}
	return nil
}

// buildRequest returns the request every attempt sends (without its body)
// and the body bytes.
func (o *Options) buildRequest() (*http.Request, []byte, string, error) {
	data, name, err := o.ReadData()
	if err != nil {
		return nil, nil, "", err
	}
	lc, err := keyflags.Load(o.Spec, data)
	if err != nil {
		return nil, nil, "", cli.InputErr(name, 0, err)
	}
	key := string(o.Key.Append(nil, lc.Call))
	o.selection = lc.SelectionText() // for the 422 hint (post_output.go)
	if err := post.CheckHeaderText("the key (--prefix)", key); err != nil {
		return nil, nil, "", err
	}
	// The body is the whole arguments value (--only and --omit choose
	// what the key is derived from, not what is sent), canonical unless
	// --send-as-is keeps its bytes as written.
	if o.ledger.on {
		// The ledger's fingerprint has the arguments as they enter the
		// key (post_ledger.go), as run's has; the record, the call's task
		// and tool wherever they came from (--from call, --from openai).
		o.ledger.args = lc.Call.Args.Append(nil)
		o.ledger.task, o.ledger.tool = lc.Call.Task, lc.Call.Tool
	}
	body := lc.Args.Raw()
	if !o.SendAsIs {
		if !o.Lossy {
			if err := post.CheckLosses(lc.Args); err != nil {
				return nil, nil, "", &cli.InputError{Name: name, Err: err}
			}
		}
		body = lc.Args.Append(nil)
	}
	req, err := o.NewBase()
	if err != nil {
		return nil, nil, "", err
	}
	h := req.Header
	if o.KeyQuoted {
		h.Set(o.KeyHeader, `"`+key+`"`)
	} else {
		h.Set(o.KeyHeader, key)
	}
	return req, body, key, nil
}

// stdoutOK reports whether standard output can be written at all: a
// closed descriptor (>&-) is found before anything is sent, so that a
// write never happens that idemkey could not report.
func (o *Options) stdoutOK() error {
	if o.f.IO.OutClosed() {
		return &post.Error{Code: post.CurlWriteError, Err: errors.New("standard output is closed; nothing was sent")}
	}
	return nil
}

// run builds the request, sends it (through the ledger with
// --ledger), writes the final response once and then -w.
func run(o *Options) error {
	ios := o.f.IO
	if o.Output == "" || o.Output == "-" || o.DumpHeader == "-" || o.WriteOut != nil {
		if err := o.stdoutOK(); err != nil {
			return err
		}
	}
	if out, ok := cli.Underlying(ios.Out).(*os.File); ok && out == os.Stdout {
		// A broken pipe on standard output is a write error (curl's 23),
		// not death by SIGPIPE.
		signal.Ignore(syscall.SIGPIPE)
	}
	req, body, key, err := o.buildRequest()
	if err != nil {
		return err
	}
	if o.DryRun {
		return o.dryRun(req, body)
	}
	if o.Transport.Insecure && !o.Silent {
		fmt.Fprintf(ios.Err, "idemkey: warning: -k: the server's TLS certificate is not verified\n")
	}
	client, err := post.NewClient(o.Transport)
	if err != nil {
		return err
	}
	if o.Verbose {
		fmt.Fprintf(ios.Err, "* idempotency key: %s (sent as %s)\n", key, o.KeyHeader)
	}
	ex, err := o.ledgerExchange(client, req, body, key)
	if err != nil {
		return err
	}
	defer ex.Final.Close()
	err = o.finish(ex, key)
	if o.WriteOut != nil {
		info := post.Info{URL: o.URL, Method: o.Method, Key: key, Outcome: err, ExitCode: cli.ExitCode(err)}
		if werr := o.WriteOut.Write(o.f.IO.Out, o.f.IO.Err, ex, info); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}

// parseWriteOut parses a -w format; @FILE reads it from a file (@- from
// standard input).
func (o *Options) parseWriteOut(format string) (*post.WriteOut, error) {
	if file, ok := strings.CutPrefix(format, "@"); ok {
		data, _, err := curlflags.ReadLimited(o.f, file, "the -w format", 1<<20)
		if err != nil {
			return nil, err
		}
		format = string(data)
	}
	return post.ParseWriteOut(format)
}

// exchange sends the request with post.Do, retrying as the flags say,
// and writes what happens on standard error: each attempt with -v, each
// retry unless -s.
func (o *Options) exchange(client *http.Client, req *http.Request, body []byte) *post.Result {
	return post.Do(post.Exchange{
		Client: client, Request: req, Body: body,
		Retry: o.Retry, RetryDelay: o.RetryDelay, RetryMaxTime: o.RetryMaxTime, MaxTime: o.MaxTime,
		Location: o.Location, MaxRedirs: o.MaxRedirs, KeyHeader: o.KeyHeader,
		LeaseLost: o.leaseLost,
		Events:    o.exchangeEvents(req, body),
	})
}

// exchangeEvents are the exchange's messages. A server's reason phrase
// in a retry's why is not trusted: cli.DiagLine makes it one printable line.
func (o *Options) exchangeEvents(req *http.Request, body []byte) post.Events {
	w := o.f.IO.Err
	say := func(format string, args ...any) {
		if !o.Silent {
			fmt.Fprintf(w, format, args...)
		}
	}
	return post.Events{
		Sending: func(attempt int, total uint64) {
			if o.Verbose {
				fmt.Fprintf(w, "* attempt %d of %d: %s %s\n", attempt, total, req.Method, req.URL.Redacted())
			}
		},
		Attempted: func(a *post.Attempt) {
			if o.Verbose {
				o.verboseAttempt(*a, req, body)
			}
		},
		Retrying: func(r post.Retry) {
			if !o.Silent || o.Verbose {
				fmt.Fprintf(w, "idemkey: attempt %d: %s; retrying in %s (%s) with the same key, %d %s left\n",
					r.Attempt, cli.DiagLine(r.Why), roundDuration(r.Wait), r.Source, r.Left, cli.Plural(r.Left, "retry", "retries"))
			}
		},
		GaveUp: func(attempts int, why string) {
			say("idemkey: giving up after %d attempts: %s\n", attempts, cli.DiagLine(why))
		},
		TooLong: func(why string, r post.Retry) {
			say("idemkey: not retrying: %s; waiting %s (%s) would pass %s\n", cli.DiagLine(why), showWait(r.Wait), r.Source, o.waitLimit())
		},
		Lost: func(why string) {
			say("idemkey: not retrying: %s; the ledger's claim of the key was lost\n", cli.DiagLine(why))
		},
	}
}

// waitLimit names the limit a retry's wait may not pass.
func (o *Options) waitLimit() string {
	if o.RetryMaxTime > 0 {
		return "--retry-max-time " + o.RetryMaxTime.String()
	}
	return "the 6h limit on a wait without --retry-max-time"
}

// showWait writes a retry's wait for a person.
func showWait(d time.Duration) string {
	if d == post.MaxDuration {
		// Saturated: a Retry-After of year 9999 is not 106752 days away.
		return "more than 292 years"
	}
	if d >= 100*24*time.Hour {
		return fmt.Sprintf("%.0f days", d.Hours()/24)
	}
	return roundDuration(d).String()
}
