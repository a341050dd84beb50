package post

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/input"
	"github.com/idemkey/idemkey/derive/post"
)

// finish writes the final attempt's response once and returns the error
// that decides the exit code.
func (o *Options) finish(ex *post.Result, key string) error {
	res := ex.Final
	if o.DumpHeader != "" && len(res.Hops) > 0 {
		if err := o.dumpHeaders(res); err != nil {
			return err
		}
	}
	if res.Err != nil {
		if res.Definitive() {
			if o.Fail || o.FailWithBody || res.Resp.StatusCode == http.StatusUnprocessableEntity {
				return &post.Error{Code: post.CurlHTTPError, Err: fmt.Errorf("the requested URL returned error: %d (its body was cut short: %s)", res.Resp.StatusCode, res.Err.Err)}
			}
			return &post.Error{Code: res.Err.Code, Err: fmt.Errorf("%s, after HTTP %s arrived; not retried: the status is the server's answer", res.Err.Err, res.Resp.Status)}
		}
		return res.Err
	}
	code := res.Resp.StatusCode
	var httpErr error
	switch {
	case code == http.StatusUnprocessableEntity:
		// The one difference from curl: a key conflict is never success.
		hint := "the server compares the request bytes with the first request's: " +
			"send the canonical body (no --send-as-is) or use a new task id for a different call"
		if o.selection != "" {
			// The key covers part of what is sent: two bodies that differ
			// only outside that part share the key.
			hint = fmt.Sprintf("the key was derived under %s, while the whole arguments are sent: a body that differs "+
				"only outside that selection gets the same key; widen the selection or use a new task id for a different call",
				cli.EscapeControls(o.selection))
		}
		httpErr = &post.Error{Code: post.CurlHTTPError, Err: &cli.HintedError{
			Msg:      fmt.Sprintf("HTTP 422: the server has seen key %s with a different payload; not retrying", key),
			HintText: hint,
		}}
	case code >= 400 && (o.Fail || o.FailWithBody):
		httpErr = &post.Error{Code: post.CurlHTTPError, Err: fmt.Errorf("the requested URL returned error: %d", code)}
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
func (o *Options) writeBody(res post.Attempt) error {
	w, closeOut := o.f.IO.Out, func() error { return nil }
	name := "standard output"
	if o.Output != "" && o.Output != "-" {
		fh, err := os.Create(o.Output)
		if err != nil {
			return &post.Error{Code: post.CurlWriteError, Err: fmt.Errorf("cannot write %s: %v", o.Output, input.FileErr(err))}
		}
		w, closeOut, name = fh, fh.Close, o.Output
	}
	err := func() error {
		if o.Include {
			for _, h := range res.Hops {
				for _, head := range h.Heads {
					if _, err := w.Write(head); err != nil {
						return err
					}
				}
			}
		}
		return res.Body.CopyTo(w)
	}()
	if cerr := closeOut(); err == nil {
		err = cerr
	}
	if err != nil {
		return &post.Error{Code: post.CurlWriteError, Err: fmt.Errorf("cannot write %s: %s", name, post.RootCause(err))}
	}
	return nil
}

// dumpHeaders writes the response heads of the final attempt (-D).
func (o *Options) dumpHeaders(res post.Attempt) error {
	var b []byte
	for _, h := range res.Hops {
		for _, head := range h.Heads {
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
		return &post.Error{Code: post.CurlWriteError, Err: fmt.Errorf("cannot write -D %s: %s", o.DumpHeader, post.RootCause(err))}
	}
	return nil
}

// dryRun writes the request as it would be sent (--dry-run), credentials
// redacted, and sends nothing.
func (o *Options) dryRun(req *http.Request, body []byte) error {
	var b strings.Builder
	o.WriteHeadLines(&b, "", post.RequestHead(req, body), req.Method+" "+req.URL.Redacted())
	b.WriteString("\n")
	b.Write(body)
	if len(body) == 0 || body[len(body)-1] != '\n' {
		b.WriteString("\n")
	}
	if _, err := io.WriteString(o.f.IO.Out, b.String()); err != nil {
		return &post.Error{Code: post.CurlWriteError, Err: fmt.Errorf("cannot write standard output: %s", post.RootCause(err))}
	}
	return nil
}

// verboseAttempt shows each request of an attempt as it was written and
// each response head as it arrived.
func (o *Options) verboseAttempt(res post.Attempt, req *http.Request, body []byte) {
	var b strings.Builder
	for i, h := range res.Hops {
		sent := h.Sent
		if sent == nil && i == 0 {
			sent = post.RequestHead(req, body)
		}
		if sent != nil {
			o.WriteHeadLines(&b, "> ", sent, "")
			b.WriteString(">\n")
		}
		for _, head := range h.Heads {
			o.WriteHeadLines(&b, "< ", head, "")
			b.WriteString("<\n")
		}
		if i < len(res.Hops)-1 {
			fmt.Fprintf(&b, "* following the redirect to %s\n", res.Hops[i+1].URL.Redacted())
		}
	}
	if res.Resp != nil {
		if rh := post.ReplayHeader(res.Resp.Header); rh != "" {
			fmt.Fprintf(&b, "* replayed: the server answered with the response it saved for this key (%s)\n", rh)
		}
	}
	if res.Err != nil {
		fmt.Fprintf(&b, "* %s\n", res.Err)
	} else {
		fmt.Fprintf(&b, "* received %d body bytes\n", res.Body.Size())
	}
	fmt.Fprint(o.f.IO.Err, b.String())
}

// roundDuration rounds a wait for a message: seconds from 10s,
// milliseconds from 10ms, else microseconds.
func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Second:
		return d.Round(time.Second)
	case d >= 10*time.Millisecond:
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Microsecond)
}
