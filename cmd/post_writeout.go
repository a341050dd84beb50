package cmd

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idemkey/idemkey/canon"
)

// writeOut is a parsed -w format: literal text and variables, as curl's
// --write-out writes them after the transfer.
type writeOut struct{ parts []woPart }

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

// parseWriteOut parses a -w format; @FILE reads it from a file (@- from
// standard input). An unknown variable is a usage error, found before
// anything is sent.
func (o *postOptions) parseWriteOut(format string) (*writeOut, error) {
	if file, ok := strings.CutPrefix(format, "@"); ok {
		data, _, err := o.f.postReadLimited(file, 1<<20)
		if err != nil {
			return nil, err
		}
		format = string(data)
	}
	w := &writeOut{}
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
			switch format[i] {
			case 'n':
				lit.WriteByte('\n')
			case 'r':
				lit.WriteByte('\r')
			case 't':
				lit.WriteByte('\t')
			case '\\':
				lit.WriteByte('\\')
			default:
				lit.WriteByte('\\')
				lit.WriteByte(format[i])
			}
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
				return nil, &UsageError{Err: fmt.Errorf("-w: unknown variable %%{%s}", postPrintable(name)),
					hint: "post knows " + knownVars()}
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

func knownVars() string {
	names := slices.Sorted(maps.Keys(writeOutVars))
	return "%{" + strings.Join(names, "}, %{") + "} and %header{NAME}"
}

// writeOutput writes the -w format for the exchange; err is the outcome
// (its exit code is %{exitcode}).
func (o *postOptions) writeOutput(ex *exchange, key string, outcome error) error {
	res := ex.final
	out := o.f.IO.Out
	for _, p := range o.WriteOut.parts {
		var s string
		switch p.name {
		case "":
			s = p.text
		case "stdout":
			out = o.f.IO.Out
			continue
		case "stderr":
			out = o.f.IO.Err
			continue
		default:
			s = o.woValue(p, ex, res, key, outcome)
		}
		if _, err := io.WriteString(out, s); err != nil {
			return &CurlError{curlWriteError, fmt.Errorf("cannot write -w output: %s", rootCause(err))}
		}
	}
	return nil
}

func (o *postOptions) woValue(p woPart, ex *exchange, res attemptResult, key string, outcome error) string {
	status := 0
	var h http.Header
	if res.resp != nil {
		status, h = res.resp.StatusCode, res.resp.Header
	}
	head := res.head()
	switch p.name {
	case "header":
		return strings.Join(h.Values(p.header), ", ")
	case "http_code", "response_code":
		return fmt.Sprintf("%03d", status)
	case "http_version":
		if res.resp == nil {
			return "0"
		}
		return strings.TrimPrefix(strings.TrimSuffix(res.resp.Proto, ".0"), "HTTP/")
	case "time_total":
		return woSeconds(res.took)
	case "time_namelookup", "time_connect", "time_appconnect", "time_starttransfer":
		if len(res.hops) == 0 {
			return woSeconds(0)
		}
		h := res.hops[len(res.hops)-1]
		return woSeconds(map[string]time.Duration{"time_namelookup": h.dns, "time_connect": h.connect,
			"time_appconnect": h.tls, "time_starttransfer": h.first}[p.name])
	case "remote_ip", "remote_port", "local_ip", "local_port":
		if len(res.hops) == 0 {
			return ""
		}
		h := res.hops[len(res.hops)-1]
		a := h.remote
		if strings.HasPrefix(p.name, "local") {
			a = h.local
		}
		if a == nil {
			return ""
		}
		host, port, _ := net.SplitHostPort(a.String())
		if strings.HasSuffix(p.name, "_ip") {
			return host
		}
		return port
	case "url_effective":
		if u := res.url(); u != nil {
			return u.Redacted()
		}
		return o.URL.Redacted()
	case "url":
		return o.URL.Redacted()
	case "scheme":
		if u := res.url(); u != nil {
			return strings.ToUpper(u.Scheme)
		}
		return strings.ToUpper(o.URL.Scheme)
	case "method":
		if len(res.hops) > 0 {
			return res.hops[len(res.hops)-1].method
		}
		return o.Method
	case "num_retries":
		return strconv.Itoa(ex.retries)
	case "num_redirects":
		return strconv.Itoa(max(len(res.hops)-1, 0))
	case "redirect_url":
		if status >= 300 && status < 400 && res.resp != nil {
			if u, err := res.url().Parse(h.Get("Location")); err == nil && h.Get("Location") != "" {
				return u.Redacted()
			}
		}
		return ""
	case "idempotency_key":
		return key
	case "size_download":
		return strconv.FormatInt(res.body.size(), 10)
	case "size_upload":
		return strconv.Itoa(woUploaded(res))
	case "size_header":
		n := 0
		for _, hp := range res.hops {
			for _, hd := range hp.heads {
				n += len(hd)
			}
		}
		return strconv.Itoa(n)
	case "size_request":
		n := 0
		for _, hp := range res.hops {
			n += len(hp.sent)
		}
		return strconv.Itoa(n + woUploaded(res))
	case "content_type":
		return h.Get("Content-Type")
	case "num_headers":
		return strconv.Itoa(max(len(headLines(head))-1, 0))
	case "header_json":
		return string(headerJSON(head))
	case "exitcode":
		return strconv.Itoa(exitCode(outcome))
	case "errormsg":
		var ce *CurlError
		if errors.As(outcome, &ce) {
			return ce.Err.Error()
		}
		if outcome != nil {
			return outcome.Error()
		}
		return ""
	}
	return ""
}

// woSeconds writes a duration as curl's -w does.
func woSeconds(d time.Duration) string { return fmt.Sprintf("%.6f", d.Seconds()) }

// woUploaded returns the body bytes sent in the final attempt.
func woUploaded(res attemptResult) int {
	n := 0
	for _, hp := range res.hops {
		if hp.sent == nil {
			continue
		}
		for _, l := range headLines(hp.sent)[1:] {
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
	for _, l := range headLines(head)[min(1, len(headLines(head))):] {
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
