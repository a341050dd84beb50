package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"
)

// session.go starts a new Streamable HTTP session when the server ended
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
	h.write(msg, ids, true)
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
		err = readEvents(resp.Body, each, nil, nil)
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
