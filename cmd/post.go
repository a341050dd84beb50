package cmd

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

type postOptions struct {
	f      *Factory
	URL    *url.URL
	Data   string // -d: @FILE, @- or the body itself
	Spec   *callSpec
	Format *keyFormat
	Secret []byte

	Method  string
	Headers []string // -H, in order
	Output  string   // -o
	User    string   // -u user:password

	Include, Silent, ShowError, Verbose bool
	Fail, FailWithBody, DryRun          bool
	SendAsIs, KeyQuoted                 bool

	KeyHeader    string
	Retry        int
	RetryDelay   time.Duration
	RetryMaxTime time.Duration
	MaxTime      time.Duration
	Transport    transportConfig

	ledger *postLedger // post --ledger (post_ledger.go)
}

func newPostCmd(f *Factory) *cobra.Command {
	opts := &postOptions{f: f}
	cmd := &cobra.Command{
		Use:   "post URL --task ID --tool NAME -d @ARGS.json",
		Short: "Send a tool call over HTTP with its idempotency key, retrying safely",
		Long: `Send a tool call's args to URL, curl style, with the derived key in an
Idempotency-Key header, and retry with the same key and the same body bytes
when the outcome is unknown or the server asks for it.

The body (-d @FILE, -d @- for standard input, or -d '{…}' inline) is parsed
as JSON; the key is the one 'idemkey key' prints for the same task, tool and
args. What is sent is the canonical form of the args with Content-Type:
application/json, or the original bytes with --send-as-is.

Retries (--retry N, within --retry-max-time): exponential backoff from
--retry-delay (default 1s, doubling, capped at 10m, with jitter) on
connection refused or reset, DNS failure, TLS handshake failure, timeout,
an empty or truncated reply, and HTTP 408, 409, 425, 429, 500, 502, 503,
504. Retry-After (seconds or an HTTP date) is honoured; a retry it would
push past --retry-max-time is not made. Other 4xx are never retried; 422
means the server has seen this key with a different payload.

The body of the final attempt is written once, to standard output or -o.
Durations are in seconds and may be fractional (--max-time 2.5).

--key-header, --key-quoted, --retry, --retry-delay, --retry-max-time,
--max-time, --connect-timeout, --cacert, --scheme, --task and --tool may
also come from IDEMKEY_* variables (IDEMKEY_RETRY=3) or the config file.

Exit codes (curl's):
   0  a response arrived (any status, unless -f or --fail-with-body)
   2  usage or input error (bad flag, invalid JSON)
   6  could not resolve host
   7  failed to connect
   8  weird server reply (not HTTP)
  18  reply shorter than its Content-Length
  22  HTTP status >= 400 with -f or --fail-with-body
  23  cannot write the output file
  28  timed out (--max-time, --connect-timeout)
  35  TLS handshake failed
  52  empty reply from server
  55  failure sending the request
  56  failure receiving the reply (connection reset)
  60  server certificate did not verify
  77  --cacert unreadable or without certificates`,
		Example: `  idemkey post https://api.example.com/v1/charges --task t-42 --tool charge \
      -d @args.json -H 'Authorization: Bearer $TOKEN' --retry 5 -f
  echo '{"amount":100}' | idemkey post localhost:8080/pay --task t1 --tool pay -d @- -v
  idemkey post https://api.example.com/x --task t1 --tool x -d '{"a":1}' --dry-run`,
		Args: rangeArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.load(cmd.Flags(), args[0]); err != nil {
				return err
			}
			err := runPost(opts)
			var ce *CurlError
			if opts.Silent && !opts.ShowError && errors.As(err, &ce) {
				return &ExitError{Code: ce.Code} // -s: the code only
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	addCallFlags(fl)
	addKeyFormatFlags(fl)
	fl.StringP("data", "d", "", "body: @FILE, @- for standard input, or the JSON itself (an envelope with --from)")
	fl.Bool("send-as-is", false, "send the body's original bytes instead of its canonical form")
	fl.String("key-header", "Idempotency-Key", "name of the header that carries the key")
	fl.Bool("key-quoted", false, `send the key as a Structured Field string ("…"), as the IETF draft writes it`)
	fl.StringArrayP("header", "H", nil, "extra header 'Name: value' (repeatable; 'Name:' removes a default one)")
	fl.StringP("request", "X", "POST", "method: POST, PUT or PATCH")
	fl.StringP("output", "o", "", "write the body to FILE instead of standard output")
	fl.BoolP("include", "i", false, "include the response status line and headers in the output")
	fl.BoolP("silent", "s", false, "no progress or error messages")
	fl.BoolP("show-error", "S", false, "with -s, still show errors")
	fl.BoolP("verbose", "v", false, "show the key and every attempt on standard error (credentials redacted)")
	fl.BoolP("fail", "f", false, "on HTTP status >= 400 write no body and exit 22")
	fl.Bool("fail-with-body", false, "on HTTP status >= 400 write the body and exit 22")
	fl.Float64P("max-time", "m", 0, "seconds allowed for each attempt (0: no limit)")
	fl.Float64("connect-timeout", 300, "seconds allowed for connecting, TLS included")
	fl.Int("retry", 0, "retry up to N times with the same key")
	fl.Float64("retry-delay", 1, "seconds before the first retry; doubles after each")
	fl.Float64("retry-max-time", 0, "start no retry after this many seconds (0: no limit)")
	fl.StringP("user", "u", "", "basic auth 'user:password' (redacted in -v)")
	fl.String("cacert", "", "PEM file of CA certificates to verify the server with")
	fl.BoolP("insecure", "k", false, "skip TLS certificate verification (warned about)")
	fl.Bool("dry-run", false, "print the request that would be sent and exit, with no network")
	opts.ledger = addPostLedgerFlag(fl)
	return cmd
}

// load resolves the settings. Those that are safe as defaults come from
// the configuration (flag, IDEMKEY_*, config file); those that change
// what is sent, where, or how securely come from the command line only, so
// that no stray IDEMKEY_INSECURE can turn off certificate checks.
func (o *postOptions) load(fl *pflag.FlagSet, rawURL string) error {
	f := o.f
	var err error
	if o.URL, err = parsePostURL(rawURL); err != nil {
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
	o.Data, _ = fl.GetString("data")
	if !changed(fl, "data") {
		return &UsageError{Err: errors.New("missing body: give -d @FILE, -d @- or -d '{…}'"),
			hint: "the key is derived from the body, so post needs one"}
	}
	o.Headers, _ = fl.GetStringArray("header")
	o.Output, _ = fl.GetString("output")
	o.User, _ = fl.GetString("user")
	if o.User != "" && !strings.Contains(o.User, ":") {
		return usageErrorf("-u needs user:password (idemkey does not prompt)")
	}
	m, _ := fl.GetString("request")
	switch o.Method = strings.ToUpper(m); o.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
	default:
		return &UsageError{Err: fmt.Errorf("invalid -X %q (want POST, PUT or PATCH)", m),
			hint: "an idempotency key belongs to a request with a body that has a side effect"}
	}
	for name, p := range map[string]*bool{
		"include": &o.Include, "silent": &o.Silent, "show-error": &o.ShowError,
		"verbose": &o.Verbose, "fail": &o.Fail, "fail-with-body": &o.FailWithBody,
		"dry-run": &o.DryRun, "send-as-is": &o.SendAsIs, "insecure": &o.Transport.Insecure,
	} {
		*p, _ = fl.GetBool(name)
	}
	o.KeyQuoted = f.Config.GetBool("key-quoted")
	o.KeyHeader = strings.TrimSpace(f.Config.GetString("key-header"))
	if !validHeaderName(o.KeyHeader) {
		return usageErrorf("invalid --key-header %q", o.KeyHeader)
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
	return nil
}

// parsePostURL accepts http and https URLs; with no scheme, http is
// assumed, as curl does.
func parsePostURL(raw string) (*url.URL, error) {
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, usageErrorf("invalid URL: %s", rootCause(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, usageErrorf("unsupported protocol %q in URL (want http or https)", u.Scheme)
	}
	if u.Host == "" {
		return nil, usageErrorf("invalid URL %q: no host", raw)
	}
	return u, nil
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

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return false
		}
	}
	return true
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
	// The body is the whole arguments value (--only and --omit choose
	// what the key is derived from, not what is sent), canonical unless
	// --send-as-is keeps its bytes as written.
	body := lc.Args.Raw()
	if !o.SendAsIs {
		body = lc.Args.Append(nil)
	}
	req, err := http.NewRequest(o.Method, o.URL.String(), nil)
	if err != nil {
		return nil, nil, "", usageErrorf("invalid URL: %s", rootCause(err))
	}
	h := req.Header
	h.Set("User-Agent", "idemkey/"+versionString())
	h.Set("Accept", "*/*")
	h.Set("Content-Type", "application/json")
	if o.User != "" {
		user, pass, _ := strings.Cut(o.User, ":")
		req.SetBasicAuth(user, pass)
	}
	for _, line := range o.Headers {
		if err := o.addHeader(req, line); err != nil {
			return nil, nil, "", err
		}
	}
	if o.KeyQuoted {
		h.Set(o.KeyHeader, `"`+key+`"`)
	} else {
		h.Set(o.KeyHeader, key)
	}
	return req, body, key, nil
}

// addHeader applies one -H line as curl does: "Name: value" sets it,
// "Name:" removes a default header, "Name;" sends it empty.
func (o *postOptions) addHeader(req *http.Request, line string) error {
	name, value, ok := strings.Cut(line, ":")
	empty := false
	if !ok {
		n, rest, semi := strings.Cut(line, ";")
		if !semi || strings.TrimSpace(rest) != "" {
			return usageErrorf("invalid -H %q (want 'Name: value')", line)
		}
		name, empty = n, true
	}
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	if !validHeaderName(name) || strings.ContainsAny(value, "\r\n") {
		return usageErrorf("invalid -H %q (want 'Name: value')", line)
	}
	if strings.EqualFold(name, o.KeyHeader) {
		return &UsageError{Err: fmt.Errorf("-H sets %s, which idemkey derives from the call", o.KeyHeader),
			hint: "use --key-header NAME to send the key under another name"}
	}
	switch {
	case strings.EqualFold(name, "Host"):
		req.Host = value
	case value == "" && !empty:
		req.Header.Del(name)
	case len(req.Header.Values(name)) > 0 && isDefaultHeader(name):
		req.Header.Set(name, value)
	default:
		req.Header.Add(name, value)
	}
	return nil
}

func isDefaultHeader(name string) bool {
	switch http.CanonicalHeaderKey(name) {
	case "User-Agent", "Accept", "Content-Type", "Authorization":
		return true
	}
	return false
}

// readData returns the -d body and its name for diagnostics.
func (o *postOptions) readData() ([]byte, string, error) {
	if file, ok := strings.CutPrefix(o.Data, "@"); ok {
		if file == "" {
			return nil, "", usageErrorf("-d @ needs a file name, or - for standard input")
		}
		return o.f.readInput(file)
	}
	return []byte(o.Data), "<-d>", nil
}

func runPost(o *postOptions) error {
	ios := o.f.IO
	req, body, key, err := o.buildRequest()
	if err != nil {
		return err
	}
	if o.DryRun {
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s\n", req.Method, req.URL.Redacted())
		writeHeaders(&b, "", req, len(body))
		b.WriteString("\n")
		b.Write(body)
		if len(body) == 0 || body[len(body)-1] != '\n' {
			b.WriteString("\n")
		}
		_, err := ios.Out.Write([]byte(b.String()))
		return err
	}
	if o.Transport.Insecure && !o.Silent {
		fmt.Fprintf(ios.Err, "idemkey: warning: -k: the server's TLS certificate is not verified\n")
	}
	client, err := newPostClient(o.Transport)
	if err != nil {
		return err
	}
	if done, err := o.ledgerClaim(key, req, body); done {
		return err
	}
	if o.Verbose {
		fmt.Fprintf(ios.Err, "* idempotency key: %s (sent as %s)\n", key, o.KeyHeader)
	}
	start := time.Now()
	var res attemptResult
	for attempt := 1; ; attempt++ {
		if o.Verbose {
			fmt.Fprintf(ios.Err, "* attempt %d of %d: %s %s\n", attempt, o.Retry+1, req.Method, req.URL.Redacted())
			o.verboseRequest(req, len(body))
		}
		res = send(context.Background(), client, req, body, o.MaxTime)
		if o.Verbose {
			o.verboseResponse(res)
		}
		why, again := o.retryReason(res)
		if !again {
			break
		}
		left := o.Retry - attempt + 1
		if left <= 0 {
			if attempt > 1 && !o.Silent {
				fmt.Fprintf(ios.Err, "idemkey: giving up after %d attempts: %s\n", attempt, why)
			}
			break
		}
		wait := backoff(o.RetryDelay, attempt)
		source := "backoff"
		if res.resp != nil {
			if ra, ok := retryAfter(res.resp.Header, time.Now()); ok && ra >= wait {
				wait, source = ra, "Retry-After"
			}
		}
		if o.RetryMaxTime > 0 && time.Since(start)+wait > o.RetryMaxTime {
			if !o.Silent {
				fmt.Fprintf(ios.Err, "idemkey: not retrying: %s; waiting %s (%s) would pass --retry-max-time %s\n",
					why, roundDuration(wait), source, o.RetryMaxTime)
			}
			break
		}
		if !o.Silent || o.Verbose {
			fmt.Fprintf(ios.Err, "idemkey: attempt %d: %s; retrying in %s (%s) with the same key, %d %s left\n",
				attempt, why, roundDuration(wait), source, left, plural(left, "retry", "retries"))
		}
		time.Sleep(wait)
	}
	return o.ledgerFinish(res, key)
}

// retryReason says why a result should be retried, if it should.
func (o *postOptions) retryReason(res attemptResult) (string, bool) {
	if res.err != nil {
		return res.err.Error(), res.err.retryable()
	}
	if retryStatus(res.resp.StatusCode) {
		return "HTTP " + res.resp.Status, true
	}
	return "", false
}

// finish writes the final attempt's response once and returns the error
// that decides the exit code.
func (o *postOptions) finish(res attemptResult, key string) error {
	if res.err != nil {
		return res.err
	}
	ios := o.f.IO
	code := res.resp.StatusCode
	var conflict error
	if code == http.StatusUnprocessableEntity {
		conflict = &hintedError{
			msg: fmt.Sprintf("HTTP 422: the server has seen key %s with a different payload; not retrying", key),
			hint: "the server compares the request bytes with the first request's: " +
				"send the canonical body (no --send-as-is) or use a new task id for a different call",
		}
		if !o.Fail && !o.FailWithBody && (!o.Silent || o.ShowError) {
			o.f.printError(conflict)
		}
	}
	if code >= 400 && o.Fail && !o.FailWithBody {
		if conflict != nil {
			return &CurlError{curlHTTPError, conflict}
		}
		return &CurlError{curlHTTPError, fmt.Errorf("the requested URL returned error: %d", code)}
	}
	var out []byte
	if o.Include {
		out = appendStatusAndHeaders(out, res.resp)
	}
	out = append(out, res.body...)
	if o.Output != "" && o.Output != "-" {
		if err := os.WriteFile(o.Output, out, 0o666); err != nil {
			return &CurlError{curlWriteError, fmt.Errorf("cannot write %s: %v", o.Output, fileErr(err))}
		}
	} else if _, err := ios.Out.Write(out); err != nil {
		return &CurlError{curlWriteError, fmt.Errorf("cannot write output: %v", err)}
	}
	if code >= 400 && o.FailWithBody {
		if conflict != nil {
			return &CurlError{curlHTTPError, conflict}
		}
		return &CurlError{curlHTTPError, fmt.Errorf("the requested URL returned error: %d", code)}
	}
	return nil
}

func appendStatusAndHeaders(dst []byte, resp *http.Response) []byte {
	proto := strings.TrimSuffix(resp.Proto, ".0")
	dst = fmt.Appendf(dst, "%s %s\r\n", proto, resp.Status)
	for _, name := range sortedKeys(resp.Header) {
		for _, v := range resp.Header[name] {
			dst = fmt.Appendf(dst, "%s: %s\r\n", name, v)
		}
	}
	return append(dst, "\r\n"...)
}

func sortedKeys(h http.Header) []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// writeHeaders writes the request's headers, credentials redacted, each
// line after prefix.
func writeHeaders(b *strings.Builder, prefix string, req *http.Request, n int) {
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	fmt.Fprintf(b, "%sHost: %s\n", prefix, host)
	for _, name := range sortedKeys(req.Header) {
		for _, v := range req.Header[name] {
			fmt.Fprintf(b, "%s%s: %s\n", prefix, name, redact(name, v))
		}
	}
	fmt.Fprintf(b, "%sContent-Length: %d\n", prefix, n)
}

func (o *postOptions) verboseRequest(req *http.Request, n int) {
	var b strings.Builder
	fmt.Fprintf(&b, "> %s %s\n", req.Method, req.URL.RequestURI())
	writeHeaders(&b, "> ", req, n)
	b.WriteString(">\n")
	fmt.Fprint(o.f.IO.Err, b.String())
}

func (o *postOptions) verboseResponse(res attemptResult) {
	var b strings.Builder
	if res.resp != nil {
		fmt.Fprintf(&b, "< %s %s\n", strings.TrimSuffix(res.resp.Proto, ".0"), res.resp.Status)
		for _, name := range sortedKeys(res.resp.Header) {
			for _, v := range res.resp.Header[name] {
				fmt.Fprintf(&b, "< %s: %s\n", name, redact(name, v))
			}
		}
		b.WriteString("<\n")
		if rh := replayHeader(res.resp.Header); rh != "" {
			fmt.Fprintf(&b, "* replayed: the server answered with the response it saved for this key (%s)\n", rh)
		}
	}
	if res.err != nil {
		fmt.Fprintf(&b, "* %s\n", res.err)
	} else {
		fmt.Fprintf(&b, "* received %d body bytes\n", len(res.body))
	}
	fmt.Fprint(o.f.IO.Err, b.String())
}

func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Second:
		return d.Round(time.Second)
	case d >= 10*time.Millisecond:
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Microsecond)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
