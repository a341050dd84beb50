package post

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idemkey/idemkey/canon"
)

// WriteOut is a parsed -w format: literal text and variables, as curl's
// --write-out writes them after the transfer.
type WriteOut struct{ parts []woPart }

// woPart is one piece of a -w format.
type woPart struct {
	text   string // literal text, when name is ""
	name   string // a variable, or "header" for %header{…}
	header string
}

// writeOutVars are the variables -w knows: curl's, plus idempotency_key.
var writeOutVars = map[string]bool{
	"http_code": true, "response_code": true, "http_version": true, "time_total": true,
	"url_effective": true, "url": true, "num_retries": true, "num_redirects": true,
	"header_json": true, "num_headers": true, "idempotency_key": true, "size_download": true,
	"size_upload": true, "size_header": true, "size_request": true, "content_type": true,
	"method": true, "exitcode": true, "errormsg": true, "scheme": true, "redirect_url": true,
	"stdout": true, "stderr": true, "remote_ip": true, "remote_port": true, "local_ip": true,
	"local_port": true, "time_namelookup": true, "time_connect": true, "time_appconnect": true,
	"time_starttransfer": true,
}

// ParseWriteOut parses a -w format (the face reads @FILE). An unknown
// variable is a *UsageError, found before anything is sent.
func ParseWriteOut(format string) (*WriteOut, error) {
	w := &WriteOut{}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			w.parts = append(w.parts, woPart{text: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(format); i++ {
		c := format[i]
		switch {
		case c == '\\' && i+1 < len(format):
			i++
			lit.WriteString(woEscape(format[i]))
		case c == '%' && strings.HasPrefix(format[i:], "%%"):
			lit.WriteByte('%')
			i++
		case c == '%' && strings.HasPrefix(format[i:], "%{"):
			end := strings.IndexByte(format[i:], '}')
			if end < 0 {
				return nil, usageErrorf("-w: unterminated %%{ in the format")
			}
			name := format[i+2 : i+end]
			if !writeOutVars[name] {
				return nil, &UsageError{Err: fmt.Errorf("-w: unknown variable %%{%s}", printable(name)),
					Advice: "post knows " + knownVars()}
			}
			flush()
			w.parts = append(w.parts, woPart{name: name})
			i += end
		case c == '%' && strings.HasPrefix(format[i:], "%header{"):
			end := strings.IndexByte(format[i:], '}')
			if end < 0 {
				return nil, usageErrorf("-w: unterminated %%header{ in the format")
			}
			flush()
			w.parts = append(w.parts, woPart{name: "header", header: format[i+8 : i+end]})
			i += end
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	return w, nil
}

// woEscape is the text of a backslash escape in a -w format: \n, \r,
// \t and \\; any other character keeps its backslash.
func woEscape(c byte) string {
	switch c {
	case 'n':
		return "\n"
	case 'r':
		return "\r"
	case 't':
		return "\t"
	case '\\':
		return "\\"
	}
	return string([]byte{'\\', c})
}

// knownVars lists the variables for a hint.
func knownVars() string {
	names := slices.Sorted(maps.Keys(writeOutVars))
	return "%{" + strings.Join(names, "}, %{") + "} and %header{NAME}"
}

// Info is what -w reports beside the exchange: the request as given, the
// key, and the outcome (its exit code is %{exitcode}).
type Info struct {
	URL      *url.URL // the URL as given (before redirects)
	Method   string
	Key      string
	Outcome  error
	ExitCode int
}

// Write writes the format for the exchange ex to out; %{stdout} and
// %{stderr} switch between out and errOut, as in curl.
func (w *WriteOut) Write(out, errOut io.Writer, ex *Result, info Info) error {
	to := out
	c := woContext{ex: ex, res: &ex.Final, info: info}
	for _, p := range w.parts {
		var s string
		switch p.name {
		case "":
			s = p.text
		case "stdout":
			to = out
			continue
		case "stderr":
			to = errOut
			continue
		default:
			s = c.value(p)
		}
		if _, err := io.WriteString(to, s); err != nil {
			return &Error{CurlWriteError, fmt.Errorf("cannot write -w output: %s", RootCause(err))}
		}
	}
	return nil
}

// woContext is what a -w variable is read from.
type woContext struct {
	ex   *Result
	res  *Attempt
	info Info
}

// value is a variable's text: each group of variables has its function,
// which reports whether the name is one of its own.
func (c woContext) value(p woPart) string {
	for _, group := range []func(woPart) (string, bool){c.response, c.timing, c.address, c.target, c.sizes, c.outcome} {
		if s, ok := group(p); ok {
			return s
		}
	}
	return ""
}

// status returns the final response's status and headers (0 and nil
// when none arrived).
func (c woContext) status() (int, http.Header) {
	if c.res.Resp == nil {
		return 0, nil
	}
	return c.res.Resp.StatusCode, c.res.Resp.Header
}

// lastHop returns the last request of the final attempt, if any.
func (c woContext) lastHop() (Hop, bool) {
	if len(c.res.Hops) == 0 {
		return Hop{}, false
	}
	return c.res.Hops[len(c.res.Hops)-1], true
}

// response: the final response's status line and headers.
func (c woContext) response(p woPart) (string, bool) {
	status, h := c.status()
	head := c.res.Head()
	switch p.name {
	case "header":
		return strings.Join(h.Values(p.header), ", "), true
	case "http_code", "response_code":
		return fmt.Sprintf("%03d", status), true
	case "http_version":
		if c.res.Resp == nil {
			return "0", true
		}
		return strings.TrimPrefix(strings.TrimSuffix(c.res.Resp.Proto, ".0"), "HTTP/"), true
	case "redirect_url":
		if status >= 300 && status < 400 {
			if u, err := c.res.URL().Parse(h.Get("Location")); err == nil && h.Get("Location") != "" {
				return u.Redacted(), true
			}
		}
		return "", true
	case "content_type":
		return h.Get("Content-Type"), true
	case "num_headers":
		return strconv.Itoa(max(len(HeadLines(head))-1, 0)), true
	case "header_json":
		return string(headerJSON(head)), true
	}
	return "", false
}

// timing: the attempt's duration and the last request's times.
func (c woContext) timing(p woPart) (string, bool) {
	switch p.name {
	case "time_total":
		return woSeconds(c.res.Took), true
	case "time_namelookup", "time_connect", "time_appconnect", "time_starttransfer":
		h, _ := c.lastHop()
		return woSeconds(map[string]time.Duration{"time_namelookup": h.DNS, "time_connect": h.Connect,
			"time_appconnect": h.TLS, "time_starttransfer": h.First}[p.name]), true
	}
	return "", false
}

// address: the last connection's local and remote address.
func (c woContext) address(p woPart) (string, bool) {
	switch p.name {
	case "remote_ip", "remote_port", "local_ip", "local_port":
	default:
		return "", false
	}
	h, _ := c.lastHop()
	a := h.Remote
	if strings.HasPrefix(p.name, "local") {
		a = h.Local
	}
	if a == nil {
		return "", true
	}
	host, port, _ := net.SplitHostPort(a.String())
	if strings.HasSuffix(p.name, "_ip") {
		return host, true
	}
	return port, true
}

// target: where the request went, and how.
func (c woContext) target(p woPart) (string, bool) {
	u := c.res.URL()
	if u == nil {
		u = c.info.URL
	}
	switch p.name {
	case "url_effective":
		return u.Redacted(), true
	case "url":
		return c.info.URL.Redacted(), true
	case "scheme":
		return strings.ToUpper(u.Scheme), true
	case "method":
		if h, ok := c.lastHop(); ok {
			return h.Method, true
		}
		return c.info.Method, true
	case "idempotency_key":
		return c.info.Key, true
	}
	return "", false
}

// sizes: counts of attempts, redirects and bytes.
func (c woContext) sizes(p woPart) (string, bool) {
	res := c.res
	switch p.name {
	case "num_retries":
		return strconv.Itoa(c.ex.Retries), true
	case "num_redirects":
		return strconv.Itoa(max(len(res.Hops)-1, 0)), true
	case "size_download":
		return strconv.FormatInt(res.Body.Size(), 10), true
	case "size_upload":
		return strconv.Itoa(woUploaded(res)), true
	case "size_header":
		n := 0
		for _, hp := range res.Hops {
			for _, hd := range hp.Heads {
				n += len(hd)
			}
		}
		return strconv.Itoa(n), true
	case "size_request":
		n := 0
		for _, hp := range res.Hops {
			n += len(hp.Sent)
		}
		return strconv.Itoa(n + woUploaded(res)), true
	}
	return "", false
}

// outcome: the exit code and the error's message.
func (c woContext) outcome(p woPart) (string, bool) {
	switch p.name {
	case "exitcode":
		return strconv.Itoa(c.info.ExitCode), true
	case "errormsg":
		var ce *Error
		if errors.As(c.info.Outcome, &ce) {
			return ce.Err.Error(), true
		}
		if c.info.Outcome != nil {
			return c.info.Outcome.Error(), true
		}
		return "", true
	}
	return "", false
}

// woSeconds writes a duration as curl's -w does.
func woSeconds(d time.Duration) string { return fmt.Sprintf("%.6f", d.Seconds()) }

// woUploaded returns the body bytes sent in the final attempt.
func woUploaded(res *Attempt) int {
	n := 0
	for _, hp := range res.Hops {
		if hp.Sent == nil {
			continue
		}
		for _, l := range HeadLines(hp.Sent)[1:] {
			if name, v, ok := strings.Cut(l, ":"); ok && strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
				k, _ := strconv.Atoi(strings.TrimSpace(v))
				n += k
			}
		}
	}
	return n
}

// headerJSON writes a response head's headers as curl's %{header_json}
// does: an object of lower-case names, each with the array of its values,
// in the order the server sent them.
func headerJSON(head []byte) []byte {
	var order []string
	vals := map[string][]string{}
	for _, l := range HeadLines(head)[min(1, len(HeadLines(head))):] {
		name, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		n := strings.ToLower(strings.TrimSpace(name))
		if _, seen := vals[n]; !seen {
			order = append(order, n)
		}
		vals[n] = append(vals[n], strings.TrimSpace(v))
	}
	b := []byte{'{'}
	for i, n := range order {
		if i > 0 {
			b = append(b, ',')
		}
		b = canon.AppendQuoted(b, n)
		b = append(b, ':', '[')
		for j, v := range vals[n] {
			if j > 0 {
				b = append(b, ',')
			}
			b = canon.AppendQuoted(b, v)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}
