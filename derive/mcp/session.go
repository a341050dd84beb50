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
	"net/url"
	"sync"
	"time"
)

// session.go is about the sessions of HTTP servers that are not the
// simple case: one the server ended, and the 2024-11-05 transport's.
//
// It starts a new Streamable HTTP session when the server ended
// the old one (MCP basic/transports, "Session Management": a server that
// ended a session answers 404 to requests with its Mcp-Session-Id, and
// the client MUST then start a new session with a new InitializeRequest).
// The client on idemkey's standard input cannot: its session is idemkey's
// process. So idemkey, the HTTP client, does it in the client's place, as
// the stdio bridges do: it replays the client's own initialize under an
// id of its own (its answer is not passed on: the client is initialized
// already), sends notifications/initialized, and sends again what the
// server refused with 404 (the server did not act on it). A call in flight
// when the session ended (its answer stream broke) stays unknown, as any
// broken stream.

// maxInitAnswer bounds the answer to a replayed initialize.
const maxInitAnswer = 16 << 20

// renewTimeout bounds the start of a new session: the client's messages
// wait for it.
const renewTimeout = 30 * time.Second

// sessionEnded handles a 404 to msg, sent in session sid: a new session,
// then msg again in it (a response of the client's is dropped: the request
// it answers was the ended session's). It reports false when it did
// nothing: msg was sent again already (the new session refused it too),
// the client did not initialize through idemkey, or idemkey is stopping.
func (h *HTTP) sessionEnded(sid string, msg []byte, ids [][]byte, retried bool) bool {
	h.mu.Lock()
	initialized := h.initMsg != nil
	h.mu.Unlock()
	if retried || !initialized || h.ctx.Err() != nil {
		return false
	}
	h.sendMu.Lock()
	defer h.sendMu.Unlock()
	if err := h.renew(sid); err != nil {
		h.unanswered(ids, false, "the server has ended the session (HTTP 404) and a new one could not be started: "+err.Error())
		return true
	}
	if readMessage(msg).kind == kindResponse {
		h.diag("an answer of the client's to a request of the ended session was dropped")
		return true
	}
	h.write(msg, ids, true, false)
	return true
}

// renew starts a new session in place of the ended one (h.sendMu held),
// unless another message's 404 did already. On failure the next message
// tries again (h.ended).
func (h *HTTP) renew(ended string) error {
	h.mu.Lock()
	if h.session != ended && h.ended != ended {
		h.mu.Unlock()
		return nil // renewed already
	}
	h.session, h.ended, h.listening = "", ended, false
	h.gen++
	gen, initMsg, version := h.gen, h.initMsg, h.version
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(h.ctx, renewTimeout)
	defer cancel()
	id := quoted(fmt.Sprintf("com.github.idemkey/initialize-%d", gen))
	sid, result, err := h.initialize(ctx, setMembers(initMsg, kv{"id", id}), id)
	if err != nil {
		return err
	}
	v, _ := stringValue(objectMember(result, "protocolVersion"))
	if v != version && v != "" {
		h.diag(fmt.Sprintf("warning: the new session's protocol revision is %s; the client agreed on %s with the ended one", v, version))
	}
	h.mu.Lock()
	h.session, h.ended = sid, ""
	if v != "" {
		h.version = v
	}
	h.mu.Unlock()
	if err := h.postOwn(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		return fmt.Errorf("notifications/initialized: %v", err)
	}
	h.diag(fmt.Sprintf("the server ended session %s (HTTP 404): started session %s with the client's initialize (what the ended session held, such as subscriptions and the log level, is not set again)", ended, sid))
	h.startListening()
	return nil
}

// initialize POSTs the replayed initialize request msg and returns the
// new session's id and the result answering id. The server's other
// messages on its answer stream are passed on.
func (h *HTTP) initialize(ctx context.Context, msg, id []byte) (string, []byte, error) {
	req := h.request(ctx, http.MethodPost, msg)
	req.Header.Del("MCP-Protocol-Version") // not before initialize
	resp, err := h.client.Do(req)
	if err != nil {
		return "", nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return "", nil, fmt.Errorf("initialize: HTTP %d %s", resp.StatusCode, bytes.TrimSpace(snippet))
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	if !visibleASCII(sid) {
		return "", nil, errors.New("initialize: the server's Mcp-Session-Id is not visible ASCII")
	}
	want, _ := idKey(id)
	var answer *message
	each := func(data []byte) {
		if blank(data) {
			return
		}
		if m := readMessage(clone(data)); m.kind == kindResponse && m.idKey() == want {
			answer = m
			return
		}
		h.sink.Message(oneLine(data), false)
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ct == "text/event-stream" {
		err = readEvents(resp.Body, h.maxMessage(), each, nil, nil)
	} else {
		var body []byte
		body, err = io.ReadAll(io.LimitReader(resp.Body, maxInitAnswer))
		each(body)
	}
	switch {
	case answer == nil && err != nil:
		return "", nil, fmt.Errorf("initialize: the answer broke off: %v", err)
	case answer == nil:
		return "", nil, errors.New("initialize: the server did not answer it")
	case answer.result == nil:
		return "", nil, fmt.Errorf("initialize: the server answered with an error: %s", shorten(string(answer.value(answer.err)), 200))
	}
	return sid, answer.value(answer.result), nil
}

// postOwn POSTs a notification of idemkey's own in the session.
func (h *HTTP) postOwn(ctx context.Context, msg []byte) error {
	resp, err := h.client.Do(h.request(ctx, http.MethodPost, msg))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}

// current reports whether gen is the session's generation.
func (h *HTTP) current(gen int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.gen == gen
}

// The HTTP+SSE transport of MCP 2024-11-05 (basic/transports
// of that revision), for servers that do not speak Streamable HTTP: the
// client GETs an event stream, whose first event, "endpoint", names the
// URL it POSTs each message to; every message of the server's (answers
// too) comes on that stream as a "message" event. idemkey finds such a
// server as the later revisions' "Backwards Compatibility" says a client
// does: its POST of initialize to the URL fails with 400, 404 or 405, so
// it GETs the URL, expecting an event stream that starts with an endpoint
// event.

// legacySSE is a session of the 2024-11-05 HTTP+SSE transport.
type legacySSE struct {
	h        *HTTP
	endpoint string
	body     io.ReadCloser // the event stream

	mu      sync.Mutex
	pending map[string][]byte // the requests sent and not answered, by idKey
	live    bool              // the session is in use (its endpoint was taken)
	ended   bool              // the stream ended
}

// legacyStatus reports whether an initialize POST answered so is a server
// of the old transport (MCP 2025-03-26 basic/transports, "Backwards
// Compatibility": 4xx such as 405 or 404; 400 for those that take a POST
// without their session id for a bad request).
func legacyStatus(code int) bool {
	return code == http.StatusBadRequest || code == http.StatusNotFound || code == http.StatusMethodNotAllowed
}

// endpointTimeout bounds the wait for the endpoint event.
const endpointTimeout = 30 * time.Second

// fallback tries the old transport after the initialize POST msg was
// answered with status: the stream, its endpoint, then msg POSTed there.
// When the server has no such stream either, the initialize is refused.
func (h *HTTP) fallback(msg []byte, ids [][]byte, status int) {
	l, err := h.openLegacy()
	if err != nil {
		h.unanswered(ids, false, fmt.Sprintf("the server refused initialize (HTTP %d), and has no HTTP+SSE event stream of the 2024-11-05 transport either: %v", status, err))
		return
	}
	h.mu.Lock()
	h.legacy = l
	h.mu.Unlock()
	h.diag(fmt.Sprintf("the server speaks MCP's 2024-11-05 HTTP+SSE transport (initialize POSTed to the URL: HTTP %d): its event stream is the URL's GET, messages are POSTed to %s", status, l.endpoint))
	l.send(msg, ids)
}

// openLegacy GETs the event stream and reads its endpoint event.
func (h *HTTP) openLegacy() (*legacySSE, error) {
	req := h.newRequest(h.ctx, http.MethodGet, h.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, err
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		resp.Body.Close()
		return nil, fmt.Errorf("GET: HTTP %d %s", resp.StatusCode, ct)
	}
	l := &legacySSE{h: h, body: resp.Body, pending: map[string][]byte{}}
	endpoint := make(chan string, 1)
	go l.read(endpoint)
	t := time.NewTimer(endpointTimeout)
	defer t.Stop()
	var e string
	select {
	case e = <-endpoint:
	case <-t.C:
		resp.Body.Close()
		return nil, fmt.Errorf("no endpoint event in %s", endpointTimeout)
	}
	if e == "" {
		resp.Body.Close()
		return nil, errors.New("the stream did not begin with an endpoint event")
	}
	if l.endpoint, err = sameOrigin(h.url, e); err != nil {
		resp.Body.Close()
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return nil, errors.New("the stream ended after its endpoint event")
	}
	l.live = true
	return l, nil
}

// sameOrigin resolves the endpoint against the stream's URL and refuses
// one of another origin: the -H headers (authorization) go to it.
func sameOrigin(base, endpoint string) (string, error) {
	b, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	e, err := b.Parse(endpoint)
	if err != nil {
		return "", fmt.Errorf("the endpoint %q is not a URL: %v", endpoint, err)
	}
	if e.Scheme != b.Scheme || e.Host != b.Host {
		return "", fmt.Errorf("the endpoint %s is not of the URL's origin (%s://%s): refused", e, b.Scheme, b.Host)
	}
	return e.String(), nil
}

// read hands the stream's messages to the Sink until it ends (its first
// event, the endpoint's URL, to endpoint; "" if it is not one); then the
// requests left unanswered are told so, and the session is over.
func (l *legacySSE) read(endpoint chan<- string) {
	h := l.h
	first := true
	err := readNamedEvents(l.body, h.maxMessage(), func(event string, data []byte) {
		if first {
			first = false
			endpoint <- map[bool]string{true: string(data)}[event == "endpoint"]
			return
		}
		if event != "" && event != "message" || blank(data) {
			return
		}
		answered := h.sink.Message(oneLine(data), true)
		l.mu.Lock()
		for _, k := range answered {
			delete(l.pending, k)
		}
		l.mu.Unlock()
	}, nil, nil)
	l.body.Close()
	if first {
		endpoint <- ""
	}
	why := "the server's HTTP+SSE event stream ended"
	if err != nil {
		why += ": " + err.Error()
	}
	l.mu.Lock()
	left, live := l.pending, l.live
	l.pending, l.ended = map[string][]byte{}, true
	l.mu.Unlock()
	if !live {
		return
	}
	// The session is over before the requests it left are answered: a
	// client that closes once it reads those answers still finds that the
	// server went first (Run says so, even after Close).
	h.mu.Lock()
	h.goneErr = serverEnded(why)
	h.mu.Unlock()
	for _, id := range left {
		h.unanswered([][]byte{id}, true, why+" before its answer")
	}
	close(h.gone)
}

// serverEnded is Run's error when the server ended the session: it is
// ErrServerGone.
type serverEnded string

func (e serverEnded) Error() string        { return string(e) }
func (e serverEnded) Is(target error) bool { return target == ErrServerGone }

// send POSTs msg to the endpoint and waits for the server to take it
// (202), so that the next is sent after it; its answer comes on the
// stream.
func (l *legacySSE) send(msg []byte, ids [][]byte) {
	h := l.h
	l.mu.Lock()
	for _, id := range ids {
		if k, ok := idKey(id); ok {
			l.pending[k] = clone(id)
		}
	}
	l.mu.Unlock()
	refused := func(maybe bool, why string) {
		l.mu.Lock()
		for _, id := range ids {
			k, _ := idKey(id)
			delete(l.pending, k)
		}
		l.mu.Unlock()
		if len(ids) == 0 {
			h.diag("a message of the client's was not taken by the server: " + why)
		}
		h.unanswered(ids, maybe, why)
	}
	req := h.newRequest(h.ctx, http.MethodPost, l.endpoint, msg)
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		var op *net.OpError
		refused(!(errors.As(err, &op) && op.Op == "dial"), "the request failed: "+err.Error())
		return
	}
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		// A 4xx: the server did not take it; a 5xx: it may have.
		refused(resp.StatusCode >= 500, fmt.Sprintf("the server refused it: HTTP %d %s", resp.StatusCode, bytes.TrimSpace(snippet)))
	}
}

// drain waits up to grace for the answers of the requests sent.
func (l *legacySSE) drain(ctx context.Context) {
	for {
		l.mu.Lock()
		n := len(l.pending)
		l.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}
