// Package curlflags is curl's request flags, which post and probe share:
// the method, the headers, -A, -u, the client certificate and the one
// body flag, read and checked once and made into the request both send.
package curlflags

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/input"
	"github.com/idemkey/idemkey/derive/post"
	"github.com/spf13/pflag"
)

// Request is the request curl's flags describe (each command registers
// the flags with its own help text).
type Request struct {
	F            *cli.Factory
	URL          *url.URL
	Data         DataArg // the one body flag given
	Method       string
	Headers      []string // -H, in order
	User         string   // -u user:password
	UserAgent    string   // -A
	UserAgentSet bool
	KeyHeader    string
	Transport    post.Transport
}

// The request that post and probe send is described by curl's flags: -X,
// -H, -A, -u, -E/--key and a body flag. This file reads them and builds
// the request from them, once for both commands (each registers the flags
// with its own help text).

// LoadFlags reads and checks curl's request flags into o: the
// headers (each line is checked when the request is built), basic auth,
// the user agent, the client certificate and the method (POST, PUT or
// PATCH: an idempotency key belongs to a write).
func (o *Request) LoadFlags(fl *pflag.FlagSet) error {
	o.Headers, _ = fl.GetStringArray("header")
	o.User, _ = fl.GetString("user")
	o.UserAgent, _ = fl.GetString("user-agent")
	o.UserAgentSet = cli.Changed(fl, "user-agent")
	o.Transport.Cert, _ = fl.GetString("cert")
	o.Transport.Key, _ = fl.GetString("key")
	o.Transport.Getenv = o.F.IO.Getenv
	if o.User != "" && !strings.Contains(o.User, ":") {
		return cli.Usagef("-u needs user:password (idemkey does not prompt)")
	}
	if o.Transport.Key != "" && o.Transport.Cert == "" {
		return cli.Usagef("--key needs --cert")
	}
	if err := post.CheckHeaderText("-A", o.UserAgent); err != nil {
		return err
	}
	m, _ := fl.GetString("request")
	switch o.Method = strings.ToUpper(m); o.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
	default:
		return &cli.UsageError{Err: fmt.Errorf("invalid -X %q (want POST, PUT or PATCH)", m),
			HintText: "an idempotency key belongs to a request with a body that has a side effect"}
	}
	return nil
}

// NewBase returns the request as curl's flags describe it, without
// its body and without the key: the method and URL, idemkey's User-Agent
// (or -A), Accept (application/json after --json), Content-Type:
// application/json, basic auth from -u, then each -H line in order.
func (o *Request) NewBase() (*http.Request, error) {
	req, err := http.NewRequest(o.Method, o.URL.String(), nil)
	if err != nil {
		return nil, &post.Error{Code: post.CurlURLMalformat, Err: fmt.Errorf("invalid URL: %s", post.RedactText(post.RootCause(err), o.URL.String()))}
	}
	h := req.Header
	ua := "idemkey/" + cli.Version()
	if o.UserAgentSet {
		ua = o.UserAgent // -A '' sends none, as in curl
	}
	h["User-Agent"] = []string{ua}
	h.Set("Accept", "*/*")
	h.Set("Content-Type", "application/json")
	if o.Data.Flag == "json" {
		h.Set("Accept", "application/json")
	}
	if o.User != "" {
		user, pass, _ := strings.Cut(o.User, ":")
		req.SetBasicAuth(user, pass)
	}
	for _, line := range o.Headers {
		if err := post.AddHeader(req, line, o.KeyHeader); err != nil {
			return nil, err
		}
	}
	return req, nil
}

// DataArg is one body flag: which one (-d, --data-binary, --data-raw,
// --json) and its value.
type DataArg struct{ Flag, Value string }

// DataFlags collects the body flags in the order given: post takes exactly
// one (curl joins several with '&', which is never a JSON body).
type DataFlags struct {
	Name string
	All  *[]DataArg
}

func (d DataFlags) String() string { return "" }
func (d DataFlags) Type() string   { return "string" }

// Set adds a body flag's value.
func (d DataFlags) Set(v string) error {
	*d.All = append(*d.All, DataArg{d.Name, v})
	return nil
}

// MaxBody is the largest body post reads: it is held in memory and
// sent again on every attempt.
const MaxBody = 64 << 20

// ReadData returns the body and its name for diagnostics, by curl's rules:
// -d, --data-binary and --json read @FILE (@- standard input), --data-raw
// takes its value literally.
func (o *Request) ReadData() ([]byte, string, error) {
	d := o.Data
	file, ok := strings.CutPrefix(d.Value, "@")
	if !ok || d.Flag == "data-raw" {
		name := "<--" + d.Flag + ">"
		if d.Flag == "data" {
			name = "<-d>"
		}
		return []byte(d.Value), name, nil
	}
	if file == "" {
		return nil, "", cli.Usagef("--%s @ needs a file name, or - for standard input", d.Flag)
	}
	return ReadLimited(o.F, file, "the body", MaxBody)
}

// ReadLimited reads a file or standard input ("-"), stopping past limit
// bytes: an endless input (/dev/zero, a pipe that never ends) is reported
// once the limit is passed, with memory bounded by it.
func ReadLimited(f *cli.Factory, name, what string, limit int64) ([]byte, string, error) {
	var r io.Reader
	display := name
	if name == "-" {
		r, display = f.IO.In, input.StdinName
	} else {
		fh, err := os.Open(name)
		if err != nil {
			return nil, name, &cli.InputError{Name: name, Err: input.FileErr(err)}
		}
		defer fh.Close()
		if st, err := fh.Stat(); err == nil && st.IsDir() {
			return nil, name, &cli.InputError{Name: name, Err: errors.New("is a directory, not a file")}
		}
		r = fh
	}
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, display, &cli.InputError{Name: display, Err: input.FileErr(err)}
	}
	if n > limit {
		he := &cli.HintedError{Msg: fmt.Sprintf("%s is larger than post's limit of %d MiB; stopped reading there", what, limit>>20)}
		if what == "the body" {
			he.HintText = "post holds the body in memory and sends it again on every retry"
		}
		return nil, display, &cli.InputError{Name: display, Err: he}
	}
	return buf.Bytes(), display, nil
}

// WriteHeadLines writes a request or response head, one line each after
// prefix, with credentials redacted; the start line is replaced by first
// when it is not empty.
func (o *Request) WriteHeadLines(b *strings.Builder, prefix string, head []byte, first string) {
	for i, line := range post.HeadLines(head) {
		if i == 0 {
			if first != "" {
				line = first
			}
		} else if name, value, ok := strings.Cut(line, ":"); ok {
			if v := strings.TrimSpace(value); !strings.EqualFold(name, o.KeyHeader) {
				line = name + ": " + post.Redact(name, v)
			} else {
				line = name + ": " + v // the key is no secret: servers log it
			}
		}
		fmt.Fprintf(b, "%s%s\n", prefix, line)
	}
}
