package cmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"
)

// finish writes the final attempt's response once and returns the error
// that decides the exit code.
func (o *postOptions) finish(ex *exchange, key string) error {
	res := ex.final
	if o.DumpHeader != "" && len(res.hops) > 0 {
		if err := o.dumpHeaders(res); err != nil {
			return err
		}
	}
	if res.err != nil {
		if postDefinitive(res) {
			if o.Fail || o.FailWithBody || res.resp.StatusCode == http.StatusUnprocessableEntity {
				return &CurlError{curlHTTPError, fmt.Errorf("the requested URL returned error: %d (its body was cut short: %s)", res.resp.StatusCode, res.err.Err)}
			}
			return &CurlError{res.err.Code, fmt.Errorf("%s, after HTTP %s arrived; not retried: the status is the server's answer", res.err.Err, res.resp.Status)}
		}
		return res.err
	}
	code := res.resp.StatusCode
	var httpErr error
	switch {
	case code == http.StatusUnprocessableEntity:
		// The one difference from curl: a key conflict is never success.
		httpErr = &CurlError{curlHTTPError, &hintedError{
			msg: fmt.Sprintf("HTTP 422: the server has seen key %s with a different payload; not retrying", key),
			hint: "the server compares the request bytes with the first request's: " +
				"send the canonical body (no --send-as-is) or use a new task id for a different call",
		}}
	case code >= 400 && (o.Fail || o.FailWithBody):
		httpErr = &CurlError{curlHTTPError, fmt.Errorf("the requested URL returned error: %d", code)}
	}
	if httpErr != nil && o.Fail && !o.FailWithBody {
		return httpErr
	}
	if err := o.writeBody(res); err != nil {
		return err
	}
	return httpErr
}

// writeBody writes the status line and headers (-i) and the body to -o or
// standard output.
func (o *postOptions) writeBody(res attemptResult) error {
	w, closeOut := o.f.IO.Out, func() error { return nil }
	name := "standard output"
	if o.Output != "" && o.Output != "-" {
		fh, err := os.Create(o.Output)
		if err != nil {
			return &CurlError{curlWriteError, fmt.Errorf("cannot write %s: %v", o.Output, fileErr(err))}
		}
		w, closeOut, name = fh, fh.Close, o.Output
	}
	err := func() error {
		if o.Include {
			for _, h := range res.hops {
				for _, head := range h.heads {
					if _, err := w.Write(head); err != nil {
						return err
					}
				}
			}
		}
		return res.body.writeTo(w)
	}()
	if cerr := closeOut(); err == nil {
		err = cerr
	}
	if err != nil {
		return &CurlError{curlWriteError, fmt.Errorf("cannot write %s: %s", name, rootCause(err))}
	}
	return nil
}

// dumpHeaders writes the response heads of the final attempt (-D).
func (o *postOptions) dumpHeaders(res attemptResult) error {
	var b []byte
	for _, h := range res.hops {
		for _, head := range h.heads {
			b = append(b, head...)
		}
	}
	var err error
	if o.DumpHeader == "-" {
		_, err = o.f.IO.Out.Write(b)
	} else {
		err = os.WriteFile(o.DumpHeader, b, 0o666)
	}
	if err != nil {
		return &CurlError{curlWriteError, fmt.Errorf("cannot write -D %s: %s", o.DumpHeader, rootCause(err))}
	}
	return nil
}

// requestHead returns the request head as Go's client writes it for req
// (with the connection closed after it, as every attempt's is), for
// --dry-run and for -v when the bytes were not recorded.
func requestHead(req *http.Request, body []byte) []byte {
	r := req.Clone(context.Background())
	r.Close = true
	if u := r.URL.User; u != nil && r.Header.Get("Authorization") == "" {
		pass, _ := u.Password()
		r.SetBasicAuth(u.Username(), pass)
	}
	if body != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	}
	var b bytes.Buffer
	if err := r.Write(&b); err != nil {
		return nil
	}
	head := b.Bytes()
	if i := bytes.Index(head, []byte("\r\n\r\n")); i >= 0 {
		head = head[:i+4]
	}
	return head
}

// writeHeadLines writes a request or response head, one line each after
// prefix, with credentials redacted; the start line is replaced by first
// when it is not empty.
func (o *postOptions) writeHeadLines(b *strings.Builder, prefix string, head []byte, first string) {
	for i, line := range headLines(head) {
		if i == 0 {
			if first != "" {
				line = first
			}
		} else if name, value, ok := strings.Cut(line, ":"); ok {
			if v := strings.TrimSpace(value); !strings.EqualFold(name, o.KeyHeader) {
				line = name + ": " + redact(name, v)
			} else {
				line = name + ": " + v // the key is no secret: servers log it
			}
		}
		fmt.Fprintf(b, "%s%s\n", prefix, line)
	}
}

func (o *postOptions) dryRun(req *http.Request, body []byte) error {
	var b strings.Builder
	o.writeHeadLines(&b, "", requestHead(req, body), req.Method+" "+req.URL.Redacted())
	b.WriteString("\n")
	b.Write(body)
	if len(body) == 0 || body[len(body)-1] != '\n' {
		b.WriteString("\n")
	}
	if _, err := io.WriteString(o.f.IO.Out, b.String()); err != nil {
		return &CurlError{curlWriteError, fmt.Errorf("cannot write standard output: %s", rootCause(err))}
	}
	return nil
}

// verboseAttempt shows each request of an attempt as it was written and
// each response head as it arrived.
func (o *postOptions) verboseAttempt(res attemptResult, req *http.Request, body []byte) {
	var b strings.Builder
	for i, h := range res.hops {
		sent := h.sent
		if sent == nil && i == 0 {
			sent = requestHead(req, body)
		}
		if sent != nil {
			o.writeHeadLines(&b, "> ", sent, "")
			b.WriteString(">\n")
		}
		for _, head := range h.heads {
			o.writeHeadLines(&b, "< ", head, "")
			b.WriteString("<\n")
		}
		if i < len(res.hops)-1 {
			fmt.Fprintf(&b, "* following the redirect to %s\n", res.hops[i+1].url.Redacted())
		}
	}
	if res.resp != nil {
		if rh := replayHeader(res.resp.Header); rh != "" {
			fmt.Fprintf(&b, "* replayed: the server answered with the response it saved for this key (%s)\n", rh)
		}
	}
	if res.err != nil {
		fmt.Fprintf(&b, "* %s\n", res.err)
	} else {
		fmt.Fprintf(&b, "* received %d body bytes\n", res.body.size())
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

func sortedKeys(h http.Header) []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
