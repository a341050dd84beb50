package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/idemkey/idemkey/derive/post"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// postOptions are post's settings, read by load from the flags, the
// IDEMKEY_* variables and the config file.
type postOptions struct {
	f      *Factory
	URL    *url.URL
	Data   dataArg // the one body flag given
	Spec   *callSpec
	Format *keyFormat
	Secret []byte

	Method       string
	Headers      []string // -H, in order
	Output       string   // -o
	User         string   // -u user:password
	UserAgent    string   // -A
	UserAgentSet bool
	DumpHeader   string // -D
	WriteOut     *post.WriteOut

	Include, Silent, ShowError, Verbose bool
	Fail, FailWithBody, DryRun          bool
	SendAsIs, Lossy, KeyQuoted          bool
	Location                            bool
	MaxRedirs                           int

	KeyHeader    string
	Retry        int
	RetryDelay   time.Duration
	RetryMaxTime time.Duration
	MaxTime      time.Duration
	Transport    post.Transport

	ledger *postLedger // post --ledger (post_ledger.go)
	// leaseLost is closed when the ledger's claim of the key is lost: no
	// retry is sent after it (the newer holder sends its own).
	leaseLost <-chan struct{}
}

// dataArg is one body flag: which one (-d, --data-binary, --data-raw,
// --json) and its value.
type dataArg struct{ flag, value string }

// dataFlags collects the body flags in the order given: post takes exactly
// one (curl joins several with '&', which is never a JSON body).
type dataFlags struct {
	name string
	all  *[]dataArg
}

func (d dataFlags) String() string { return "" }
func (d dataFlags) Type() string   { return "string" }
func (d dataFlags) Set(v string) error {
	*d.all = append(*d.all, dataArg{d.name, v})
	return nil
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

// newPostCmd is 'idemkey post': the options struct, its flags, and
// runPost.
func newPostCmd(f *Factory) *cobra.Command {
	opts := &postOptions{f: f}
	var data []dataArg
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
			return rangeArgs(1, 1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			err := opts.load(cmd.Flags(), args[0], data)
			if err == nil {
				err = runPost(opts)
			}
			var ce *post.Error
			if opts.Silent && !opts.ShowError && errors.As(err, &ce) {
				return &ExitError{Code: ce.Code} // -s: the code only
			}
			return err
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &UsageError{Err: err, hint: "run 'idemkey post --help' for usage"}
	})
	opts.ledger = addPostFlags(cmd.Flags(), &data)
	return cmd
}

// addPostFlags registers post's flags, curl's names first, and returns
// the ledger's (post_ledger.go).
func addPostFlags(fl *pflag.FlagSet, data *[]dataArg) *postLedger {
	fl.SortFlags = false
	addCallFlags(fl)
	addKeyFormatFlags(fl)
	for _, d := range []struct{ name, short, usage string }{
		{"data", "d", "body: @FILE, @- for standard input, or the JSON itself (an envelope with --from)"},
		{"data-binary", "", "body, as -d (@FILE, @-, or the JSON itself)"},
		{"data-raw", "", "body given literally: a leading @ is not a file name"},
		{"json", "", "body as --data-binary, with Content-Type and Accept: application/json (curl's --json, 7.82; not a JSON report, as run --json is)"},
	} {
		fl.VarP(dataFlags{d.name, data}, d.name, d.short, d.usage)
	}
	fl.Bool("send-as-is", false, "send the body's original bytes instead of its canonical form")
	fl.Bool("lossy", false, "send the canonical form even where it changes a value (see above)")
	fl.String("key-header", "Idempotency-Key", "name of the header that carries the key")
	fl.Bool("key-quoted", false, `send the key as a Structured Field string ("…"), as the IETF draft writes it`)
	fl.StringArrayP("header", "H", nil, "extra header 'Name: value' (repeatable; 'Name:' removes a default one)")
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

// maxPostBody is the largest body post reads: it is held in memory and
// sent again on every attempt.
const maxPostBody = 64 << 20

// load resolves the settings. Those that are safe as defaults come from
// the configuration (flag, IDEMKEY_*, config file); those that change
// what is sent, where, or how securely come from the command line only, so
// that no stray IDEMKEY_INSECURE can turn off certificate checks.
func (o *postOptions) load(fl *pflag.FlagSet, rawURL string, data []dataArg) error {
	f := o.f
	var err error
	if o.URL, err = post.ParseURL(rawURL); err != nil {
		return err
	}
	if changed(fl, "retry-all-errors") {
		return &UsageError{Err: errors.New("--retry-all-errors is not supported"),
			hint: "idemkey retries only what may succeed with the same key (timeouts, resets, 408, 409, 425, 429, 5xx); " +
				"a definitive 4xx means the server refused this request, and sending it again cannot change that"}
	}
	if o.Data, err = oneBody(data); err != nil {
		return err
	}
	if o.Spec, err = f.callSpec(); err != nil {
		return err
	}
	if o.Format, err = f.keyFormat(); err != nil {
		return err
	}
	if o.Secret, err = f.secret(); err != nil {
		return err
	}
	o.Output, _ = fl.GetString("output")
	o.DumpHeader, _ = fl.GetString("dump-header")
	if o.MaxRedirs, err = f.Config.Int("max-redirs", -1); err != nil { // -1: no limit, as in curl
		return err
	}
	if err := o.loadRequestFlags(fl); err != nil { // curlflags.go
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
		return usageErrorf("--send-as-is and --lossy contradict each other: send the original bytes or the canonical form")
	}
	if err := o.loadHeaders(); err != nil {
		return err
	}
	o.Transport.CACert = f.Config.GetString("cacert")
	if o.Retry, err = f.configInt("retry"); err != nil {
		return err
	}
	for name, p := range map[string]*time.Duration{
		"retry-delay": &o.RetryDelay, "retry-max-time": &o.RetryMaxTime,
		"max-time": &o.MaxTime, "connect-timeout": &o.Transport.ConnectTimeout,
	} {
		if *p, err = f.configSeconds(name); err != nil {
			return err
		}
	}
	if _, err := post.ProxyFor(o.Transport.Getenv, o.URL); err != nil {
		return err
	}
	if err := o.ledger.load(f.Config, fl); err != nil {
		return err
	}
	if w, _ := fl.GetString("write-out"); changed(fl, "write-out") {
		if o.WriteOut, err = o.parseWriteOut(w); err != nil {
			return err
		}
	}
	return nil
}

// oneBody returns the one body flag given: post sends one JSON value.
func oneBody(data []dataArg) (dataArg, error) {
	switch len(data) {
	case 0:
		return dataArg{}, &UsageError{Err: errors.New("missing body: give -d @FILE, -d @- or -d '{…}'"),
			hint: "the key is derived from the body, so post needs one"}
	case 1:
		return data[0], nil
	}
	return dataArg{}, &UsageError{Err: fmt.Errorf("more than one body: --%s and --%s", data[0].flag, data[1].flag),
		hint: "post sends one JSON value, and its key is derived from it; curl would join the two with '&'"}
}

// loadHeaders reads the key's header (--key-header, --key-quoted) and
// checks every -H line, before anything is sent.
func (o *postOptions) loadHeaders() error {
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

// configInt reads an integer setting, rejecting what is not one (viper's
// GetInt would quietly give 0).
func (f *Factory) configInt(name string) (int, error) {
	s := strings.TrimSpace(fmt.Sprint(f.Config.Get(name)))
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, usageErrorf("invalid --%s %q (want a whole number >= 0)", name, s)
	}
	return n, nil
}

// configSeconds reads a duration setting given in seconds, fractions
// allowed as in curl ("0.5"); a Go duration ("500ms") is accepted too.
func (f *Factory) configSeconds(name string) (time.Duration, error) {
	s := strings.TrimSpace(fmt.Sprint(f.Config.Get(name)))
	if v, err := strconv.ParseFloat(s, 64); err == nil && v >= 0 && v < 1e9 {
		return time.Duration(v * float64(time.Second)), nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return d, nil
	}
	return 0, usageErrorf("invalid --%s %q (want seconds, such as 2 or 0.5)", name, s)
}

// buildRequest returns the request every attempt sends (without its body)
// and the body bytes.
func (o *postOptions) buildRequest() (*http.Request, []byte, string, error) {
	data, name, err := o.readData()
	if err != nil {
		return nil, nil, "", err
	}
	lc, err := o.Spec.load(data)
	if err != nil {
		return nil, nil, "", inputErr(name, 0, err)
	}
	kopts := keyOptions{Format: o.Format, Secret: o.Secret}
	key := string(kopts.key(nil, lc))
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
				return nil, nil, "", &InputError{Name: name, Err: err}
			}
		}
		body = lc.Args.Append(nil)
	}
	req, err := o.newBaseRequest() // curlflags.go
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

// readData returns the body and its name for diagnostics, by curl's rules:
// -d, --data-binary and --json read @FILE (@- standard input), --data-raw
// takes its value literally.
func (o *postOptions) readData() ([]byte, string, error) {
	d := o.Data
	file, ok := strings.CutPrefix(d.value, "@")
	if !ok || d.flag == "data-raw" {
		name := "<--" + d.flag + ">"
		if d.flag == "data" {
			name = "<-d>"
		}
		return []byte(d.value), name, nil
	}
	if file == "" {
		return nil, "", usageErrorf("--%s @ needs a file name, or - for standard input", d.flag)
	}
	return o.f.postReadLimited(file, "the body", maxPostBody)
}

// postReadLimited reads a file or standard input ("-"), stopping past limit
// bytes: an endless input (/dev/zero, a pipe that never ends) is reported
// once the limit is passed, with memory bounded by it.
func (f *Factory) postReadLimited(name, what string, limit int64) ([]byte, string, error) {
	var r io.Reader
	display := name
	if name == "-" {
		r, display = f.IO.In, stdinName
	} else {
		fh, err := os.Open(name)
		if err != nil {
			return nil, name, &InputError{Name: name, Err: fileErr(err)}
		}
		defer fh.Close()
		if st, err := fh.Stat(); err == nil && st.IsDir() {
			return nil, name, &InputError{Name: name, Err: errors.New("is a directory, not a file")}
		}
		r = fh
	}
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, display, &InputError{Name: display, Err: fileErr(err)}
	}
	if n > limit {
		he := &hintedError{msg: fmt.Sprintf("%s is larger than post's limit of %d MiB; stopped reading there", what, limit>>20)}
		if what == "the body" {
			he.hint = "post holds the body in memory and sends it again on every retry"
		}
		return nil, display, &InputError{Name: display, Err: he}
	}
	return buf.Bytes(), display, nil
}

// stdoutOK reports whether standard output can be written at all: a
// closed descriptor (>&-) is found before anything is sent, so that a
// write never happens that idemkey could not report.
func (o *postOptions) stdoutOK() error {
	if o.f.IO.OutClosed() {
		return &post.Error{Code: post.CurlWriteError, Err: errors.New("standard output is closed; nothing was sent")}
	}
	return nil
}

// runPost builds the request, sends it (through the ledger with
// --ledger), writes the final response once and then -w.
func runPost(o *postOptions) error {
	ios := o.f.IO
	if o.Output == "" || o.Output == "-" || o.DumpHeader == "-" || o.WriteOut != nil {
		if err := o.stdoutOK(); err != nil {
			return err
		}
	}
	if out, ok := underlying(ios.Out).(*os.File); ok && out == os.Stdout {
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
		info := post.Info{URL: o.URL, Method: o.Method, Key: key, Outcome: err, ExitCode: exitCode(err)}
		if werr := o.WriteOut.Write(o.f.IO.Out, o.f.IO.Err, ex, info); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}

// parseWriteOut parses a -w format; @FILE reads it from a file (@- from
// standard input).
func (o *postOptions) parseWriteOut(format string) (*post.WriteOut, error) {
	if file, ok := strings.CutPrefix(format, "@"); ok {
		data, _, err := o.f.postReadLimited(file, "the -w format", 1<<20)
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
func (o *postOptions) exchange(client *http.Client, req *http.Request, body []byte) *post.Result {
	return post.Do(post.Exchange{
		Client: client, Request: req, Body: body,
		Retry: o.Retry, RetryDelay: o.RetryDelay, RetryMaxTime: o.RetryMaxTime, MaxTime: o.MaxTime,
		Location: o.Location, MaxRedirs: o.MaxRedirs, KeyHeader: o.KeyHeader,
		LeaseLost: o.leaseLost,
		Events:    o.exchangeEvents(req, body),
	})
}

// exchangeEvents are the exchange's messages. A server's reason phrase
// in a retry's why is not trusted: diagLine makes it one printable line.
func (o *postOptions) exchangeEvents(req *http.Request, body []byte) post.Events {
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
					r.Attempt, diagLine(r.Why), roundDuration(r.Wait), r.Source, r.Left, plural(r.Left, "retry", "retries"))
			}
		},
		GaveUp: func(attempts int, why string) {
			say("idemkey: giving up after %d attempts: %s\n", attempts, diagLine(why))
		},
		TooLong: func(why string, r post.Retry) {
			say("idemkey: not retrying: %s; waiting %s (%s) would pass %s\n", diagLine(why), showWait(r.Wait), r.Source, o.waitLimit())
		},
		Lost: func(why string) {
			say("idemkey: not retrying: %s; the ledger's claim of the key was lost\n", diagLine(why))
		},
	}
}

// waitLimit names the limit a retry's wait may not pass.
func (o *postOptions) waitLimit() string {
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
