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
	// stateless is the revision of the client's requests when it is one
	// without initialize and sessions (2026-07-28 and later; see
	// httpheaders.go), "" otherwise.
	stateless string
	// toolHeaders are the x-mcp-header marks of the tools listed, by name.
	toolHeaders map[string][]paramHeader
	// lists are the tools/list requests whose answers are read for them.
	lists map[string]bool
	// flights are the POSTs of stateless requests in flight, by id: the
	// client cancels one by closing its stream.
	flights map[string]*flight
}

// flight is a stateless request's POST in flight.
type flight struct {
	cancel    context.CancelFunc
	cancelled bool // by the client: its answer is not waited for
}

// maxRedirects bounds the redirects followed for one request, each to
// the URL's own origin.
const maxRedirects = 3

// errRedirect is a redirect idemkey did not follow.
var errRedirect = errors.New("redirect refused")

// sameOriginRedirect follows a few redirects to the URL's own origin, and
// none to another: the -H headers (credentials), the session and the call
// would go to a server the user did not name.
func sameOriginRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > maxRedirects {
		return fmt.Errorf("%w: more than %d redirects", errRedirect, maxRedirects)
	}
	o := via[0].URL
	if req.URL.Scheme != o.Scheme || req.URL.Host != o.Host {
		return fmt.Errorf("%w: the server redirected to another origin (%s://%s), not followed", errRedirect, req.URL.Scheme, req.URL.Host)
	}
	return nil
}

// The delays between a stream's reconnections: the server's retry:, at
// least minRetry; doubled for each stream in a row that ended without an
// event, up to maxBackoff.
const (
	minRetry   = time.Second
	maxBackoff = 30 * time.Second
)

// backoff is the wait before a reconnection, after empty streams in a row
// that brought no event.
func backoff(retry time.Duration, empty int) time.Duration {
	d := max(retry, minRetry)
	for i := 0; i < empty && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// maxEmptyResumes bounds the resumptions in a row of a call's stream that
// brought no event: past it, the answer is taken for lost.
const maxEmptyResumes = 8

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
	if client.CheckRedirect == nil {
		c := *client
		c.CheckRedirect = sameOriginRedirect
		client = &c
	}
	if diag == nil {
		diag = func(string) {}
	}
	return &HTTP{url: rawURL, header: header, client: client, diag: diag, ready: make(chan struct{}), closed: make(chan struct{}), gone: make(chan struct{}),
		lists: map[string]bool{}, flights: map[string]*flight{}}, nil
}

// Run implements Upstream: it lasts until Close (or ctx ends), or until
// the server ends the session (an error that is ErrServerGone, also when
// Close came after that).
func (h *HTTP) Run(ctx context.Context, s Sink) error {
	h.ctx, h.cancel = context.WithCancel(ctx)
	h.sink = s
	close(h.ready)
	select {
	case <-h.closed:
	case <-ctx.Done():
	case <-h.gone:
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.goneErr
}

// SetVersion implements Upstream: the initialize answer was read, so the
// session's GET stream opens now (the server's notifications must not
// wait for the client's next message).
func (h *HTTP) SetVersion(v string) {
	h.mu.Lock()
	h.version = v
	h.mu.Unlock()
	h.startListening()
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
	if h.cancelFlight(msg) {
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
	mirrored := http.Header{}
	ph := h.setMessageHeaders(mirrored, msg)
	ctx, stream := h.ctx, &h.streams
	if ph.revision >= firstStatelessRevision && ph.id != "" {
		// Its own context: closing its stream is how the client cancels it.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(h.ctx)
		h.mu.Lock()
		h.flights[ph.id] = &flight{cancel: cancel}
		h.mu.Unlock()
		if ph.method == "subscriptions/listen" {
			// Open for as long as the client listens: not waited for when
			// the client goes.
			stream = &sync.WaitGroup{}
		}
	}
	if ph.method == "tools/list" && ph.id != "" {
		h.mu.Lock()
		h.lists[ph.id] = true
		h.mu.Unlock()
	}
	wrote := make(chan struct{})
	var wroteOnce sync.Once
	written := func() { wroteOnce.Do(func() { close(wrote) }) }
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) {
		if !initialize {
			written()
		}
	}}
	req := h.request(httptrace.WithClientTrace(ctx, trace), http.MethodPost, msg)
	for name, v := range mirrored {
		req.Header[name] = v
	}
	stateless := ph.revision >= firstStatelessRevision
	done := make(chan struct{})
	stream.Add(1)
	go func() {
		defer stream.Done()
		defer close(done)
		defer h.land(ph.id)
		h.post(req, msg, ids, retried, initialize, stateless, written)
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
func (h *HTTP) post(req *http.Request, msg []byte, ids [][]byte, retried, initialize, stateless bool, written func()) {
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
		// Refused, or redirected elsewhere: the server did not act on it.
		sent := !(errors.As(err, &op) && op.Op == "dial") && !errors.Is(err, errRedirect)
		h.unanswered(ids, sent, "the request failed: "+requestError(err))
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
	if sid := req.Header.Get("Mcp-Session-Id"); sid != "" && h.sessionGone(resp) {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		written()
		if h.sessionEnded(sid, msg, ids, retried) {
			return
		}
		why := fmt.Sprintf("the server has ended the session (HTTP %d)", resp.StatusCode)
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
		h.readStream(resp.Body, ids, req.Header.Get("Mcp-Session-Id"), !stateless)
	case ct == "application/json":
		// A JSON answer, or a JSON-RPC error with a 4xx or 5xx status,
		// read up to the cap on one message.
		max := h.maxMessage()
		body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
		if err == nil && int64(len(body)) > max {
			body, err = nil, &TooLongError{Max: max}
		}
		want := ids
		if err == nil {
			want = h.deliver(body, ids)
		}
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

// maxMessage is the cap on one message of the server's (Sink.MaxMessage).
func (h *HTTP) maxMessage() int64 {
	if h.sink == nil {
		return DefaultMaxMessage
	}
	return h.sink.MaxMessage()
}

// deliver hands one message of the server's to the Sink and returns the
// ids of want it did not answer.
func (h *HTTP) deliver(msg []byte, want [][]byte) [][]byte {
	if blank(msg) {
		return want
	}
	h.readListing(msg)
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
// it are answered or the stream ends. A stream that ended before the
// answer, after an event id, is resumed with a GET (Last-Event-ID) after
// the server's retry: (MCP 2025-11-25 basic/transports, "Resumability
// and Redelivery": a server may close a call's stream and expect the
// client to poll), again and again, until the answer comes or the server
// will not resume it, or the session it was sent in (sid) has ended;
// resumable is false for a revision without resumption (2026-07-28: a
// broken stream is a cancellation).
func (h *HTTP) readStream(body io.Reader, ids [][]byte, sid string, resumable bool) {
	want := ids
	lastID := ""
	retry := time.Duration(0)
	events := 0
	var noted time.Time // when a progress notification was last passed on
	onData := func(data []byte) {
		events++
		if !noted.IsZero() {
			answerAfterProgress(data, noted)
			noted = time.Time{}
		}
		if isProgress(data) {
			noted = time.Now()
		}
		want = h.deliver(data, want)
	}
	onID := func(id string) { events++; lastID = id }
	onRetry := func(d time.Duration) { retry = d }
	err := readEvents(body, h.maxMessage(), onData, onID, onRetry)
	why := ""
	var tooLong *TooLongError
	// A stream dropped for a message past the cap is not resumed: it
	// would send the same message again.
	for empty, n := 0, 0; resumable && len(want) > 0 && lastID != "" && h.ctx.Err() == nil && !errors.As(err, &tooLong); n++ {
		if empty >= maxEmptyResumes {
			why = fmt.Sprintf("; resumed %d times in a row without an event", empty)
			break
		}
		if retry > 0 || n > 0 {
			// The server's retry:, at least a second; the first
			// resumption of a stream that broke without one at once.
			h.sleep(backoff(retry, empty))
		}
		h.mu.Lock()
		ended := h.session != sid
		h.mu.Unlock()
		if ended {
			// Its events are the ended session's: a new one has none.
			why = "; the session it was sent in has ended"
			break
		}
		resp, rerr := h.client.Do(h.resume(sid, lastID))
		if rerr != nil {
			why = "; resuming it failed: " + requestError(rerr)
			break
		}
		ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		if resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
			resp.Body.Close()
			why = fmt.Sprintf("; the server would not resume it (GET with Last-Event-ID: HTTP %d)", resp.StatusCode)
			break
		}
		events = 0
		err = readEvents(resp.Body, h.maxMessage(), onData, onID, onRetry)
		resp.Body.Close()
		if events == 0 {
			empty++
		} else {
			empty = 0
		}
	}
	if err != nil {
		why = "the server's event stream broke before its answer: " + err.Error() + why
	} else {
		why = "the server's event stream ended before its answer" + why
	}
	h.unanswered(want, true, why)
}

// resume is the GET that resumes a stream of session sid after lastID.
func (h *HTTP) resume(sid, lastID string) *http.Request {
	req := h.request(h.ctx, http.MethodGet, nil)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	req.Header.Set("Last-Event-ID", lastID)
	return req
}

func (h *HTTP) unanswered(ids [][]byte, maybe bool, why string) {
	if h.ctx.Err() != nil {
		why = "idemkey stopped before the server answered"
		maybe = true
	}
	for _, id := range ids {
		if k, _ := idKey(id); !h.cancelled(k) {
			h.sink.Unanswered(id, maybe, why)
		}
	}
}

// listen reads the GET stream of the server's own messages, reconnecting
// (resuming after its last event id) until Close or the end of session
// gen; a server without one (405) or that refuses it is not asked again
// in the session.
func (h *HTTP) listen(gen int) {
	lastID := ""
	delay := minRetry
	failures, empty := 0, 0
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
		got := false
		_ = readNamedEvents(resp.Body, h.maxMessage(), func(event string, data []byte) {
			got = true
			if (event == "" || event == "message") && !blank(data) {
				h.sink.Message(oneLine(data), false)
			}
		}, func(id string) { got, lastID = true, id }, func(d time.Duration) { delay = d })
		resp.Body.Close()
		if got {
			empty = 0
		} else {
			empty++
		}
		h.sleep(backoff(delay, empty))
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
// ends in the middle of is dropped, never passed on in part. An event (or
// a line) longer than max bytes (0: DefaultMaxMessage) ends the reading
// with a *TooLongError: memory stays bounded whatever the stream sends.
func readEvents(r io.Reader, max int64, each func([]byte), onID func(string), onRetry func(time.Duration)) error {
	return readNamedEvents(r, max, func(_ string, data []byte) { each(data) }, onID, onRetry)
}

// readNamedEvents is readEvents with each event's type (its "event"
// field; "" for the default, message).
func readNamedEvents(r io.Reader, max int64, each func(event string, data []byte), onID func(string), onRetry func(time.Duration)) error {
	if max <= 0 {
		max = DefaultMaxMessage
	}
	lr := newLineReaderMax(r, max)
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
			if int64(len(data))+int64(len(value))+1 > max {
				return &TooLongError{Max: max}
			}
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

// sessionGone reports whether the answer to a request in a session says
// that the server ended the session: 404 (MCP basic/transports), or a 400
// whose body speaks of the session (as servers on the TypeScript SDK's
// examples answer an id they no longer know). The body read stays
// readable.
func (h *HTTP) sessionGone(resp *http.Response) bool {
	switch resp.StatusCode {
	case http.StatusNotFound:
		return true
	case http.StatusBadRequest:
		head, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
		return bytes.Contains(bytes.ToLower(head), []byte("session"))
	}
	return false
}

// readListing reads the x-mcp-header marks of a tools/list answer.
func (h *HTTP) readListing(msg []byte) {
	h.mu.Lock()
	n := len(h.lists)
	h.mu.Unlock()
	if n == 0 || validJSON(msg) != nil {
		return
	}
	m := readMessage(msg)
	if m.kind != kindResponse {
		return
	}
	k := m.idKey()
	h.mu.Lock()
	list := h.lists[k]
	delete(h.lists, k)
	h.mu.Unlock()
	if list {
		h.readToolList(m.value(m.result))
	}
}

// cancelFlight handles the client's notifications/cancelled of a
// stateless request in flight: its stream is closed, which is the
// cancellation in those revisions, and the notification is not sent.
func (h *HTTP) cancelFlight(msg []byte) bool {
	h.mu.Lock()
	none := len(h.flights) == 0
	h.mu.Unlock()
	if none || !bytes.Contains(msg, []byte("notifications/cancelled")) {
		return false
	}
	i := skipSpace(msg, 0)
	if i >= len(msg) || msg[i] != '{' {
		return false
	}
	m := readMessage(msg)
	if m.kind != kindNotification || m.method != "notifications/cancelled" {
		return false
	}
	k, ok := idKey(objectMember(m.value(m.params), "requestId"))
	if !ok {
		return false
	}
	h.mu.Lock()
	f := h.flights[k]
	if f != nil {
		f.cancelled = true
	}
	h.mu.Unlock()
	if f == nil {
		return false
	}
	f.cancel()
	return true
}

// cancelled reports whether the client cancelled the request with id k.
func (h *HTTP) cancelled(k string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := h.flights[k]
	return f != nil && f.cancelled
}

// land forgets a request whose POST is over.
func (h *HTTP) land(k string) {
	if k == "" {
		return
	}
	h.mu.Lock()
	f := h.flights[k]
	delete(h.flights, k)
	delete(h.lists, k)
	h.mu.Unlock()
	if f != nil {
		f.cancel()
	}
}

// requestError is a failed request's error with its URL redacted
// (RedactURL): the URL's password and query string may hold credentials.
func requestError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Op + " " + RedactURL(ue.URL) + ": " + ue.Err.Error()
	}
	return err.Error()
}

// progressGap is the least time between a progress notification passed
// on and the answer after it on the same stream. A client reads the two
// apart then: the TypeScript SDK's client, given both in one read, ends
// the call before its progress handler runs, and the last progress of
// every call is lost (an HTTP client reads each event apart).
const progressGap = 20 * time.Millisecond

// isProgress reports whether the event data is a progress notification.
func isProgress(data []byte) bool {
	if !bytes.Contains(data, []byte("notifications/progress")) || validJSON(data) != nil {
		return false
	}
	i := skipSpace(data, 0)
	if data[i] != '{' {
		return false
	}
	m := readMessage(data)
	return m.kind == kindNotification && m.method == "notifications/progress"
}

// answerAfterProgress waits, when data is a response, until progressGap
// has passed since noted.
func answerAfterProgress(data []byte, noted time.Time) {
	if validJSON(data) != nil {
		return
	}
	if i := skipSpace(data, 0); data[i] != '{' || readMessage(data).kind != kindResponse {
		return
	}
	if d := progressGap - time.Since(noted); d > 0 {
		time.Sleep(d)
	}
}
