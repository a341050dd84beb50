package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// HTTP is an MCP server over the Streamable HTTP transport (MCP
// basic/transports, 2025-03-26 and later): each message of the client's
// is POSTed (Accept: application/json, text/event-stream); the answer is
// a JSON body or a stream of server-sent events; a GET opens the stream
// of the server's own requests and notifications; the session is the
// Mcp-Session-Id header the initialize answer set, ended by a DELETE when
// the client goes; a session the server ended (404) is started again in
// the client's place (session.go). Event data is passed on as the message it is, its
// line breaks (JSON white space) made spaces: one message a line for the
// client.
type HTTP struct {
	url    string
	header http.Header
	client *http.Client
	diag   func(string)

	ready  chan struct{} // closed once Run has set sink and ctx
	sink   Sink
	ctx    context.Context
	cancel context.CancelFunc
	closed chan struct{}
	once   sync.Once

	sendMu  sync.Mutex     // one POST written at a time, in order
	streams sync.WaitGroup // the POSTs whose answers are being read

	mu        sync.Mutex
	session   string
	version   string
	listening bool
	// initMsg is the client's initialize request, replayed to start a new
	// session when the server ended one (see renew).
	initMsg []byte
	// gen counts the sessions: a GET stream of an ended one stops.
	gen int
	// ended is the session id the server ended (HTTP 404) while no new
	// one could be started yet: the next message tries again.
	ended string
	// legacy is set when the server speaks the 2024-11-05 HTTP+SSE
	// transport instead (legacy.go); gone is closed when its stream ended.
	legacy  *legacySSE
	gone    chan struct{}
	goneErr error
}

// closeGrace is how long the answers of the client's last requests are
// waited for after the client went (their outcomes are recorded).
const closeGrace = 10 * time.Second

// NewHTTP returns the upstream of the server at rawURL; header is sent
// with every request (-H); client nil is a plain client without a
// timeout (a stream lasts the session).
func NewHTTP(rawURL string, header http.Header, client *http.Client, diag func(string)) (*HTTP, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("want an http:// or https:// URL, not %q", rawURL)
	}
	if client == nil {
		client = &http.Client{}
	}
	if diag == nil {
		diag = func(string) {}
	}
	return &HTTP{url: rawURL, header: header, client: client, diag: diag, ready: make(chan struct{}), closed: make(chan struct{}), gone: make(chan struct{})}, nil
}

// Run implements Upstream: it lasts until Close (or ctx ends).
func (h *HTTP) Run(ctx context.Context, s Sink) error {
	h.ctx, h.cancel = context.WithCancel(ctx)
	h.sink = s
	close(h.ready)
	select {
	case <-h.closed:
	case <-ctx.Done():
	case <-h.gone:
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.goneErr
	}
	return nil
}

// SetVersion implements Upstream.
func (h *HTTP) SetVersion(v string) {
	h.mu.Lock()
	h.version = v
	h.mu.Unlock()
}

// newRequest builds a request to u with the -H headers.
func (h *HTTP) newRequest(ctx context.Context, method, u string, body []byte) *http.Request {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, _ := http.NewRequestWithContext(ctx, method, u, r) // the URLs are parsed
	req.Header = h.header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	return req
}

// request builds a request with the session's headers.
func (h *HTTP) request(ctx context.Context, method string, body []byte) *http.Request {
	req := h.newRequest(ctx, method, h.url, body)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	} else {
		req.Header.Set("Accept", "text/event-stream")
	}
	h.mu.Lock()
	if h.session != "" {
		req.Header.Set("Mcp-Session-Id", h.session)
	}
	if h.version != "" {
		req.Header.Set("MCP-Protocol-Version", h.version)
	}
	h.mu.Unlock()
	return req
}

// Send implements Upstream: it returns once the POST is written (so that
// the server gets the client's messages in order), and reads the answer
// in the background; a request left unanswered is told to the Sink.
func (h *HTTP) Send(_ context.Context, msg []byte, ids [][]byte) error {
	<-h.ready
	owned := make([][]byte, len(ids)) // the caller's buffers are reused; the answer is read later
	for i, id := range ids {
		owned[i] = clone(id)
	}
	ids = owned
	h.sendMu.Lock()
	defer h.sendMu.Unlock()
	h.mu.Lock()
	first, ended, legacy := h.initMsg == nil && h.session == "", h.ended, h.legacy
	h.mu.Unlock()
	if legacy != nil {
		legacy.send(msg, ids)
		return nil
	}
	if first {
		if m := readMessage(msg); m.kind == kindRequest && m.method == "initialize" {
			h.mu.Lock()
			h.initMsg = clone(msg)
			h.mu.Unlock()
		} else {
			first = false
		}
	}
	if ended != "" {
		// The server ended the session and a new one could not be
		// started then: try again, else the message is refused unsent.
		if err := h.renew(ended); err != nil {
			h.unanswered(ids, false, "the server has ended the session (HTTP 404) and a new one could not be started: "+err.Error())
			return nil
		}
	}
	h.write(clone(msg), ids, false, first)
	return nil
}

// write POSTs msg (h.sendMu held) and returns once it is written (the
// client's first initialize: once its answer's status is read, and the
// transport known); its answer is read in the background. retried: it
// was sent once already, and refused with 404 for a session the server
// had ended.
func (h *HTTP) write(msg []byte, ids [][]byte, retried, initialize bool) {
	wrote := make(chan struct{})
	var wroteOnce sync.Once
	written := func() { wroteOnce.Do(func() { close(wrote) }) }
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) {
		if !initialize {
			written()
		}
	}}
	req := h.request(httptrace.WithClientTrace(h.ctx, trace), http.MethodPost, msg)
	done := make(chan struct{})
	h.streams.Add(1)
	go func() {
		defer h.streams.Done()
		defer close(done)
		h.post(req, msg, ids, retried, initialize, written)
	}()
	select {
	case <-wrote:
	case <-done:
	}
	h.startListening()
}

// startListening opens the GET stream of the session, once it has a
// protocol revision (after initialize), if it is not open.
func (h *HTTP) startListening() {
	h.mu.Lock()
	listen := h.version != "" && !h.listening && h.legacy == nil
	h.listening = h.listening || listen
	gen := h.gen
	h.mu.Unlock()
	if listen {
		go h.listen(gen)
	}
}

// post sends one POST and hands its answer to the Sink. written is
// called once the answer has come (the request was written, so the
// next may be); for the client's first initialize, once the transport is
// known: a 400, 404 or 405 to it is a server of the 2024-11-05 HTTP+SSE
// transport, or none.
func (h *HTTP) post(req *http.Request, msg []byte, ids [][]byte, retried, initialize bool, written func()) {
	resp, err := h.client.Do(req)
	defer written()
	if err == nil && initialize && legacyStatus(resp.StatusCode) {
		resp.Body.Close()
		h.fallback(msg, ids, resp.StatusCode)
		return
	}
	written()
	if err != nil {
		var op *net.OpError
		sent := !(errors.As(err, &op) && op.Op == "dial")
		h.unanswered(ids, sent, "the request failed: "+err.Error())
		return
	}
	defer resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		h.mu.Lock()
		if h.session == "" && visibleASCII(sid) {
			h.session = sid
		}
		h.mu.Unlock()
	}
	if sid := req.Header.Get("Mcp-Session-Id"); resp.StatusCode == http.StatusNotFound && sid != "" {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		written()
		if h.sessionEnded(sid, msg, ids, retried) {
			return
		}
		why := "the server has ended the session (HTTP 404)"
		if retried {
			why += ", and refused it in the new one too"
		}
		if len(ids) == 0 {
			h.diag("a message of the client's was refused by the server: " + why)
		}
		h.unanswered(ids, false, why) // the server did not act on it
		return
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300 && ct == "text/event-stream":
		h.readStream(resp.Body, ids)
	case ct == "application/json":
		// A JSON answer, or a JSON-RPC error with a 4xx or 5xx status.
		body, err := io.ReadAll(resp.Body)
		want := h.deliver(body, ids)
		why := fmt.Sprintf("the server's answer (HTTP %d) did not answer it", resp.StatusCode)
		if err != nil {
			why = "the server's answer broke off: " + err.Error()
		}
		h.unanswered(want, resp.StatusCode < 400 || resp.StatusCode >= 500, why)
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		h.unanswered(ids, true, fmt.Sprintf("the server accepted it without an answer (HTTP %d)", resp.StatusCode))
	default:
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		why := fmt.Sprintf("the server refused it: HTTP %d %s", resp.StatusCode, bytes.TrimSpace(snippet))

		if len(ids) == 0 {
			h.diag("a message of the client's was refused by the server: " + why)
		}
		// A 4xx: the server did not act on it; a 5xx: it may have.
		h.unanswered(ids, resp.StatusCode >= 500, why)
	}
}

// deliver hands one message of the server's to the Sink and returns the
// ids of want it did not answer.
func (h *HTTP) deliver(msg []byte, want [][]byte) [][]byte {
	if blank(msg) {
		return want
	}
	answered := h.sink.Message(oneLine(msg), true)
	if len(answered) == 0 || len(want) == 0 {
		return want
	}
	var left [][]byte
	for _, id := range want {
		k, _ := idKey(id)
		found := false
		for _, a := range answered {
			found = found || a == k
		}
		if !found {
			left = append(left, id)
		}
	}
	return left
}

// readStream reads the events of a POST's answer until the requests in
// it are answered or the stream ends; a stream that broke with an event
// id is resumed once with a GET (Last-Event-ID).
func (h *HTTP) readStream(body io.Reader, ids [][]byte) {
	want := ids
	lastID := ""
	err := readEvents(body, func(data []byte) { want = h.deliver(data, want) }, func(id string) { lastID = id }, nil)
	if len(want) > 0 && lastID != "" && h.ctx.Err() == nil {
		if resp, rerr := h.client.Do(h.resume(lastID)); rerr == nil {
			ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
			if resp.StatusCode == http.StatusOK && ct == "text/event-stream" {
				err = readEvents(resp.Body, func(data []byte) { want = h.deliver(data, want) }, nil, nil)
			}
			resp.Body.Close()
		}
	}
	why := "the server's event stream ended before its answer"
	if err != nil {
		why = "the server's event stream broke before its answer: " + err.Error()
	}
	h.unanswered(want, true, why)
}

func (h *HTTP) resume(lastID string) *http.Request {
	req := h.request(h.ctx, http.MethodGet, nil)
	req.Header.Set("Last-Event-ID", lastID)
	return req
}

func (h *HTTP) unanswered(ids [][]byte, maybe bool, why string) {
	if h.ctx.Err() != nil {
		why = "idemkey stopped before the server answered"
		maybe = true
	}
	for _, id := range ids {
		h.sink.Unanswered(id, maybe, why)
	}
}

// listen reads the GET stream of the server's own messages, reconnecting
// (resuming after its last event id) until Close or the end of session
// gen; a server without one (405) or that refuses it is not asked again
// in the session.
func (h *HTTP) listen(gen int) {
	lastID := ""
	delay := time.Second
	failures := 0
	for h.ctx.Err() == nil && h.current(gen) {
		req := h.request(h.ctx, http.MethodGet, nil)
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := h.client.Do(req)
		if err != nil {
			if failures++; failures > 5 {
				h.diag("the server's event stream (GET) failed 5 times; not asked again: " + err.Error())
				return
			}
			h.sleep(delay)
			continue
		}
		ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		if resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
			// 404: the session ended; a POST starts the next (renew).
			if resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusNotFound {
				h.diag(fmt.Sprintf("the server has no event stream for this session (GET: HTTP %d); its requests come with its answers only", resp.StatusCode))
			}
			resp.Body.Close()
			return
		}
		failures = 0
		_ = readNamedEvents(resp.Body, func(event string, data []byte) {
			if (event == "" || event == "message") && !blank(data) {
				h.sink.Message(oneLine(data), false)
			}
		}, func(id string) { lastID = id }, func(d time.Duration) { delay = d })
		resp.Body.Close()
		h.sleep(delay)
	}
}

func (h *HTTP) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-h.ctx.Done():
	}
}

// Close implements Upstream: the answers of the client's last requests
// are waited for a while (to record their outcomes), then the streams end
// and the session is deleted (MCP: DELETE with Mcp-Session-Id).
func (h *HTTP) Close() error {
	<-h.ready
	h.once.Do(func() {
		done := make(chan struct{})
		go func() { h.streams.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(closeGrace):
		}
		h.mu.Lock()
		legacy := h.legacy
		h.mu.Unlock()
		if legacy != nil {
			// The answers come on the event stream.
			ctx, cancel := context.WithTimeout(h.ctx, closeGrace)
			legacy.drain(ctx)
			cancel()
		}
		h.cancel()
		h.mu.Lock()
		session := h.session
		h.mu.Unlock()
		if session != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if resp, err := h.client.Do(h.request(ctx, http.MethodDelete, nil)); err == nil {
				resp.Body.Close()
			}
			cancel()
		}
		close(h.closed)
	})
	return nil
}

// readEvents reads server-sent events (WHATWG HTML, "Server-sent
// events": fields "data", "id", "retry"; comments; an event ends at a
// blank line) and hands each event's data to each. An event the stream
// ends in the middle of is dropped, never passed on in part.
func readEvents(r io.Reader, each func([]byte), onID func(string), onRetry func(time.Duration)) error {
	return readNamedEvents(r, func(_ string, data []byte) { each(data) }, onID, onRetry)
}

// readNamedEvents is readEvents with each event's type (its "event"
// field; "" for the default, message).
func readNamedEvents(r io.Reader, each func(event string, data []byte), onID func(string), onRetry func(time.Duration)) error {
	lr := newLineReader(r)
	var data []byte
	has := false
	event := ""
	for {
		line, err := lr.next()
		switch {
		case err == io.EOF:
			return nil
		case err == errCut:
			return io.ErrUnexpectedEOF
		case err != nil:
			return err
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(line) == 0 {
			if has {
				each(event, data)
			}
			data, has, event = data[:0], false, ""
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte{':'})
		value = bytes.TrimPrefix(value, []byte{' '})
		switch string(field) {
		case "event":
			event = string(value)
		case "data":
			if has {
				data = append(data, '\n')
			}
			data, has = append(data, value...), true
		case "id":
			if onID != nil && bytes.IndexByte(value, 0) < 0 {
				onID(string(value))
			}
		case "retry":
			if n, err := strconv.Atoi(string(value)); err == nil && n >= 0 && onRetry != nil {
				onRetry(time.Duration(n) * time.Millisecond)
			}
		}
	}
}

// oneLine is msg with its line breaks made spaces: in a JSON text they
// can only be white space between tokens (a string holds none), so the
// message is the same, on one line as stdio wants it.
func oneLine(msg []byte) []byte {
	if bytes.IndexByte(msg, '\n') < 0 && bytes.IndexByte(msg, '\r') < 0 {
		return msg
	}
	out := clone(msg)
	for i, c := range out {
		if c == '\n' || c == '\r' {
			out[i] = ' '
		}
	}
	return out
}

// visibleASCII reports whether s is visible ASCII (MCP: a session id is
// 0x21 to 0x7E).
func visibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
