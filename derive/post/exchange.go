package post

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Hop is one request of an attempt (an attempt that follows redirects
// sends several) and what came back.
type Hop struct {
	Method string
	URL    *url.URL
	Sent   []byte   // the request head as written, or nil when unknown
	Heads  [][]byte // response heads as received (1xx included)
	Status int      // 0 if no final response arrived

	Local, Remote net.Addr
	// Times from the request's start: name resolved, connected, TLS
	// done, first response byte (0 when it did not happen).
	DNS, Connect, TLS, First time.Duration
}

// Attempt is what one attempt produced: a complete response, or a
// transfer error (possibly after the headers had arrived).
type Attempt struct {
	Resp  *http.Response // nil if no final response headers arrived
	Body  *Spool         // the complete body when Err is nil
	Hops  []Hop
	Start time.Time
	Took  time.Duration
	Err   *Error
}

// Head returns the final response's head as received.
func (r *Attempt) Head() []byte {
	if len(r.Hops) == 0 {
		return nil
	}
	h := r.Hops[len(r.Hops)-1].Heads
	if len(h) == 0 {
		return nil
	}
	return h[len(h)-1]
}

// URL returns the URL of the last request sent.
func (r *Attempt) URL() *url.URL {
	if len(r.Hops) == 0 {
		return nil
	}
	return r.Hops[len(r.Hops)-1].URL
}

// Close releases the body's temporary file.
func (r *Attempt) Close() { r.Body.Close() }

// Definitive reports whether a failed attempt had received a status that
// settles the outcome (a 4xx that is never retried: 413 before the upload
// was read, then a reset) before its body was cut short.
func (r *Attempt) Definitive() bool {
	return r.Resp != nil && r.Resp.StatusCode >= 400 && r.Resp.StatusCode < 500 && !RetryStatus(r.Resp.StatusCode)
}

// MayHaveReached reports whether a failed attempt's request may have
// reached the server and taken effect: it failed with no answer (not a
// status that settles it, see Definitive) after a connection was made (a
// timeout once connected, an empty reply, a reset, a body cut short),
// not before any of it could be sent (a name not resolved, a connection
// refused, a TLS handshake or certificate refused, a malformed URL).
func (r *Attempt) MayHaveReached() bool {
	switch {
	case r.Err == nil || r.Definitive() || r.Err.BeforeSending():
		return false
	case r.Err.Code == CurlTimeout:
		// A timeout while connecting sent nothing.
		return len(r.Hops) > 0 && r.Hops[len(r.Hops)-1].Remote != nil
	}
	return true
}

// roundTrip sends one request and returns its response with the body
// unread, recording what was written and received.
func roundTrip(ctx context.Context, client *http.Client, req *http.Request, body []byte) (Hop, *http.Response, *Error) {
	h := Hop{Method: req.Method, URL: req.URL}
	var conn *recConn
	interim := false
	start := time.Now()
	var mu sync.Mutex // the trace's callbacks run on the transport's goroutines
	at := func(d *time.Duration) {
		mu.Lock()
		*d = time.Since(start)
		mu.Unlock()
	}
	trace := &httptrace.ClientTrace{
		DNSDone:     func(httptrace.DNSDoneInfo) { at(&h.DNS) },
		ConnectDone: func(_, _ string, err error) { at(&h.Connect) },
		GotConn: func(i httptrace.GotConnInfo) {
			mu.Lock()
			// HTTPS through a proxy runs TLS over the recorded
			// connection: the bytes there are not the exchange's.
			conn, _ = i.Conn.(*recConn)
			h.Local, h.Remote = i.Conn.LocalAddr(), i.Conn.RemoteAddr()
			if req.URL.Scheme == "https" {
				h.TLS = time.Since(start)
			}
			mu.Unlock()
		},
		GotFirstResponseByte: func() { at(&h.First) },
		Got1xxResponse: func(int, textproto.MIMEHeader) error {
			mu.Lock()
			interim = true
			mu.Unlock()
			return nil
		},
	}
	r := req.Clone(httptrace.WithClientTrace(ctx, trace))
	if body != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	resp, err := client.Do(r)
	mu.Lock()
	defer mu.Unlock()
	h.Sent, h.Heads = conn.sentHead(), conn.responseHeads()
	if err != nil {
		ce := Classify(err, false)
		if ce.Code == CurlSendError || ce.Code == CurlRecvError {
			if resp, tail, ok := conn.earlyResponse(r); ok {
				// The server answered before it read the upload, then
				// closed: its answer is the response, as in curl.
				resp.Body = io.NopCloser(bytes.NewReader(tail))
				h.Status = resp.StatusCode
				return h, resp, nil
			}
		}
		if interim && (ce.Code == CurlEmptyReply || ce.Code == CurlRecvError || ce.Code == CurlPartialFile) {
			ce = &Error{CurlEmptyReply, errors.New("empty reply from server (only an interim 1xx response arrived)")}
		}
		return h, nil, ce
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		resp.Body.Close()
		return h, nil, &Error{CurlEmptyReply, errors.New("empty reply from server: it answered 101 Switching Protocols, which a POST did not ask for")}
	}
	if len(h.Heads) == 0 {
		h.Heads = [][]byte{synthHead(resp)}
	}
	h.Status = resp.StatusCode
	return h, resp, nil
}

// maxBackoff caps the exponential backoff, as curl caps its own.
const maxBackoff = 10 * time.Minute

// defaultRetryDelay is the first backoff: --retry-delay 0 means it, as in
// curl.
const defaultRetryDelay = time.Second

// backoff returns the wait before retry number n (1 for the first retry):
// base·2^(n-1), capped, plus up to half again of random jitter so that
// many clients failing together do not retry together.
func backoff(base time.Duration, n int) time.Duration {
	if base <= 0 {
		base = defaultRetryDelay
	}
	d := base
	for i := 1; i < n && d < maxBackoff; i++ {
		d *= 2
	}
	d = min(d, maxBackoff)
	if d > 0 {
		d += rand.N(d/2 + 1)
	}
	return min(d, maxBackoff)
}

// retryAfter parses a Retry-After header: delay-seconds (fractions are
// accepted) or an HTTP date. ok is false when absent or unparseable. A
// value too large for a duration saturates at MaxDuration, so that it is
// compared with the limits rather than wrapping around.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		if s < 0 || strings.HasPrefix(v, "-") {
			return 0, false
		}
		if s >= float64(MaxDuration/time.Second) {
			return MaxDuration, true
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true // Sub saturates
	}
	return 0, false
}

// MaxDuration is the longest wait: a Retry-After past it saturates here.
const MaxDuration = time.Duration(1<<63 - 1)

// addSat adds two non-negative durations, saturating at MaxDuration.
func addSat(a, b time.Duration) time.Duration {
	if a > MaxDuration-b {
		return MaxDuration
	}
	return a + b
}

// Exchange is one request to send, and how: every attempt sends the same
// request with the same key and the same body bytes.
type Exchange struct {
	Client  *http.Client  // from NewClient
	Request *http.Request // the request, its key header set, without its body
	Body    []byte

	Retry        int           // --retry: retries after the first attempt
	RetryDelay   time.Duration // --retry-delay: the first backoff (0: 1s)
	RetryMaxTime time.Duration // --retry-max-time: no wait passes it (0: maxUnboundedWait)
	MaxTime      time.Duration // --max-time: of each attempt, redirects included (0: none)
	Location     bool          // -L: follow redirects, by curl's rules (see Redirect)
	MaxRedirs    int           // --max-redirs (-1: no limit)
	KeyHeader    string        // the key's header, kept on a redirect to another host

	// LeaseLost is closed when a ledger's claim of the key is lost: no
	// retry is sent after it (the newer holder sends its own). Nil: never.
	LeaseLost <-chan struct{}
	Events    Events
}

// Events are what an exchange reports as it goes, for the face to show;
// each may be nil. why is the reason for a retry, as the server or the
// network gave it (untrusted text: the face makes it printable).
type Events struct {
	Sending   func(attempt int, total uint64) // before each attempt (x.Retry+1, which may pass MaxInt)
	Attempted func(a *Attempt)                // after each attempt, before any retry
	Retrying  func(r Retry)                   // a retry follows, after r.Wait
	GaveUp    func(attempts int, why string)  // the last retry failed as well
	TooLong   func(why string, r Retry)       // the wait would pass the limit: no retry
	Lost      func(why string)                // the lease was lost: no retry
}

// Retry is one wait before a retry.
type Retry struct {
	Attempt int           // the attempt that failed (1 for the first)
	Why     string        // what failed
	Wait    time.Duration // how long before the next attempt
	Source  string        // "backoff" or "Retry-After"
	Left    int           // retries left, this one included
}

// Result is the outcome of all attempts: the final attempt, whose body
// the face writes once (and a ledger records before).
type Result struct {
	Final   Attempt
	Retries int
	Start   time.Time
	Took    time.Duration
	// Reached reports that an attempt failed after its request may have
	// reached the server (see Attempt.MayHaveReached): whether it took
	// effect is unknown, whatever the final attempt got.
	Reached bool
}

// Response returns the final attempt's outcome: its status (0 when no
// response arrived), headers and body, or the transfer error. The body
// reader is independent of any other.
func (r *Result) Response() (status int, header http.Header, body io.Reader, err error) {
	res := r.Final
	if res.Err != nil {
		return 0, nil, nil, res.Err
	}
	return res.Resp.StatusCode, res.Resp.Header, res.Body.Reader(), nil
}

// maxUnboundedWait bounds a wait when --retry-max-time is not given: a
// server that asks for more than this (a far-future Retry-After date)
// ends the retries at once rather than leaving a script asleep.
const maxUnboundedWait = 6 * time.Hour

// Do sends the request, retrying with the same key and body while the
// outcome is unknown or the server asks for it, within the limits: up to
// x.Retry retries, exponential backoff with jitter or the server's
// Retry-After when longer, no wait past --retry-max-time.
func Do(x Exchange) *Result {
	ex := &Result{Start: time.Now()}
	ev := x.Events
	var res Attempt
	for attempt := 1; ; attempt++ {
		if ev.Sending != nil {
			ev.Sending(attempt, uint64(x.Retry)+1)
		}
		res = x.attempt()
		ex.Reached = ex.Reached || res.MayHaveReached()
		if ev.Attempted != nil {
			ev.Attempted(&res)
		}
		why, again := res.retryReason()
		if !again || x.lost(why) {
			break
		}
		r, ok := x.nextWait(ex, &res, attempt, why)
		if !ok {
			break
		}
		if ev.Retrying != nil {
			ev.Retrying(r)
		}
		if !x.sleep(r.Wait) || x.lost(why) {
			break // the response stays the final one
		}
		res.Close()
		ex.Retries++
	}
	ex.Final, ex.Took = res, time.Since(ex.Start)
	return ex
}

// nextWait returns the wait before the retry after attempt, or ok false
// (said through the events) when no retry is left or the wait would pass
// the limit.
func (x *Exchange) nextWait(ex *Result, res *Attempt, attempt int, why string) (r Retry, ok bool) {
	r = Retry{Attempt: attempt, Why: why, Left: x.Retry - attempt + 1, Source: "backoff"}
	if r.Left <= 0 {
		if attempt > 1 && x.Events.GaveUp != nil {
			x.Events.GaveUp(attempt, why)
		}
		return r, false
	}
	r.Wait = backoff(x.RetryDelay, attempt)
	if res.Resp != nil {
		if ra, ok := retryAfter(res.Resp.Header, time.Now()); ok && ra >= r.Wait {
			r.Wait, r.Source = ra, "Retry-After"
		}
	}
	limit := x.RetryMaxTime
	if limit <= 0 {
		limit = maxUnboundedWait
	}
	if addSat(time.Since(ex.Start), r.Wait) > limit {
		if x.Events.TooLong != nil {
			x.Events.TooLong(why, r)
		}
		return r, false
	}
	return r, true
}

// sleep waits d, or until the lease is lost; it reports whether d passed.
func (x *Exchange) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-x.LeaseLost:
		return false
	}
}

// lost reports whether the ledger's claim of the key was lost, saying
// so: a retry then could repeat the newer holder's request.
func (x *Exchange) lost(why string) bool {
	select {
	case <-x.LeaseLost:
	default:
		return false
	}
	if x.Events.Lost != nil {
		x.Events.Lost(why)
	}
	return true
}

// attempt sends the request once, following redirects with -L, and reads
// the final response's body, all within --max-time.
func (x *Exchange) attempt() (res Attempt) {
	ctx := context.Background()
	if x.MaxTime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, x.MaxTime)
		defer cancel()
	}
	res = Attempt{Start: time.Now()}
	defer func() { res.Took = time.Since(res.Start) }()
	req, reqBody := x.Request, x.Body
	for {
		h, resp, cerr := roundTrip(ctx, x.Client, req, reqBody)
		res.Hops = append(res.Hops, h)
		if cerr != nil {
			res.Err = cerr
			return res
		}
		if !x.Location {
			return res.read(resp)
		}
		next, nextBody, ok := Redirect(req, reqBody, resp, x.KeyHeader)
		if !ok {
			return res.read(resp)
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if x.MaxRedirs >= 0 && len(res.Hops) > x.MaxRedirs { // -1: no limit, as in curl
			res.Err = &Error{CurlTooManyRedirects, fmt.Errorf("maximum (%d) redirects followed", x.MaxRedirs)}
			return res
		}
		if next == nil {
			res.Err = &Error{CurlURLMalformat, fmt.Errorf("redirect to an invalid or unsupported URL %q", RedactURL(resp.Header.Get("Location")))}
			return res
		}
		req, reqBody = next, nextBody
	}
}

// read reads the final response's body into the attempt's spool.
func (r Attempt) read(resp *http.Response) Attempt {
	r.Resp = resp
	r.Body = &Spool{}
	err := r.Body.Fill(resp.Body)
	resp.Body.Close()
	if err != nil {
		r.Err = Classify(err, true)
	}
	return r
}

// retryReason says why a result should be retried, if it should.
func (r *Attempt) retryReason() (string, bool) {
	if r.Err != nil {
		if r.Definitive() {
			// The status is the server's answer; only its body was lost.
			return r.Err.Error(), false
		}
		return r.Err.Error(), r.Err.Retryable()
	}
	if RetryStatus(r.Resp.StatusCode) {
		return "HTTP " + r.Resp.Status, true
	}
	return "", false
}
