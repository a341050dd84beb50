package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemkey/idemkey/derive/ledger/sqlite"
)

// The HTTP upstream against servers these tests script on loopback: what
// a hostile or unusual server does (redirects, retry: 0, a stream closed
// for polling, an expired session answered 400), and what idemkey sends.

// scripted is a test's HTTP server: each request, its method, headers and
// body, is kept; serve answers it.
type scripted struct {
	t   *testing.T
	srv *httptest.Server

	mu   sync.Mutex
	seen []seenRequest
	more chan struct{} // a token per request
}

type seenRequest struct {
	at     time.Time
	method string
	path   string
	header http.Header
	msg    map[string]any
}

func newScripted(t *testing.T, serve func(s *scripted, w http.ResponseWriter, r *http.Request, msg map[string]any)) *scripted {
	s := &scripted{t: t, more: make(chan struct{}, 10000)}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var msg map[string]any
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			json.Unmarshal(b, &msg)
		}
		s.mu.Lock()
		s.seen = append(s.seen, seenRequest{time.Now(), r.Method, r.URL.Path, r.Header.Clone(), msg})
		s.mu.Unlock()
		s.more <- struct{}{}
		serve(s, w, r, msg)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// requests are the requests seen so far that match.
func (s *scripted) requests(match func(seenRequest) bool) []seenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []seenRequest
	for _, r := range s.seen {
		if match(r) {
			out = append(out, r)
		}
	}
	return out
}

// waitFor waits until n requests match (or fails after a minute).
func (s *scripted) waitFor(n int, match func(seenRequest) bool) []seenRequest {
	s.t.Helper()
	deadline := time.After(time.Minute)
	for {
		if got := s.requests(match); len(got) >= n {
			return got
		}
		select {
		case <-s.more:
		case <-deadline:
			s.t.Fatalf("%d matching requests, want %d: %+v", len(s.requests(match)), n, s.requests(func(seenRequest) bool { return true }))
		}
	}
}

func isGET(r seenRequest) bool { return r.method == http.MethodGet }

func rpcMethod(r seenRequest) string { m, _ := r.msg["method"].(string); return m }

// answerJSON answers msg with result as a JSON body.
func answerJSON(w http.ResponseWriter, msg map[string]any, result string) {
	id, _ := json.Marshal(msg["id"])
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result)
}

// initResult answers initialize with a session id.
func initResult(w http.ResponseWriter, msg map[string]any, session string) {
	w.Header().Set("Mcp-Session-Id", session)
	answerJSON(w, msg, `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"scripted","version":"1"}}`)
}

// httpClientSession is the client's side of a Proxy over the HTTP
// upstream of url, on a SQLite ledger, with task "t".
func httpClientSession(t *testing.T, url string) *session { return httpClientSessionMax(t, url, 0) }

// httpClientSessionMax is httpClientSession with max as the cap on one
// message (Options.MaxMessage; 0: the default).
func httpClientSessionMax(t *testing.T, url string, max int64) *session {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	up, err := NewHTTP(url, http.Header{"X-Api-Key": {"secret"}}, nil, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	p := New(Options{Task: "t", Store: st, Locker: sqliteLocks{st}, Lease: 30 * time.Second, Holder: "test", MaxMessage: max})
	cinR, cinW := pipe(t)
	coutR, coutW := pipe(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Serve(ctx, cinR, coutW, up); close(done) }()
	t.Cleanup(func() { cancel(); cinW.Close(); <-done })
	return &session{w: cinW, lr: newLineReader(coutR)}
}

// initialized is httpClientSession after initialize and its answer.
func initialized(t *testing.T, url string) *session {
	t.Helper()
	c := httpClientSession(t, url)
	c.send(t, initLine)
	c.recv(t)
	return c
}

func (s *session) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(s.w, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// recv is the next message to the client, decoded.
func (s *session) recv(t *testing.T) map[string]any {
	t.Helper()
	type next struct {
		line []byte
		err  error
	}
	ch := make(chan next, 1)
	go func() { line, err := s.lr.next(); ch <- next{clone(line), err} }()
	var n next
	select {
	case n = <-ch:
	case <-time.After(30 * time.Second):
		t.Fatal("no message for the client in 30s")
	}
	if n.err != nil {
		t.Fatal(n.err)
	}
	var m map[string]any
	if err := json.Unmarshal(n.line, &m); err != nil {
		t.Fatalf("%v in %s", err, n.line)
	}
	return m
}

const initLine = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

func callLine(id int, tool, arg string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"a":%q}}}`, id, tool, arg)
}

// resultText is a tools/call answer's first text, and whether it is a
// tool error.
func resultText(t *testing.T, m map[string]any) (string, bool) {
	t.Helper()
	r, ok := m["result"].(map[string]any)
	if !ok {
		t.Fatalf("not a result: %v", m)
	}
	c := r["content"].([]any)
	isErr, _ := r["isError"].(bool)
	return c[0].(map[string]any)["text"].(string), isErr
}

// errorText is a JSON-RPC error answer's message ("" for another answer).
func errorText(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}

// TestHTTPRedirects: a redirect to another origin is never followed: the -H headers, the
// session and the keyed write stay with the server the user named, and
// the call is answered as not sent. One to the same origin is followed
// (at most three in a row), and the keyed tools/call carries its key in an
// Idempotency-Key header.
func TestHTTPRedirects(t *testing.T) {
	other := newScripted(t, func(s *scripted, w http.ResponseWriter, r *http.Request, msg map[string]any) {
		answerJSON(w, msg, `{"content":[{"type":"text","text":"done elsewhere"}]}`)
	})
	named := newScripted(t, func(s *scripted, w http.ResponseWriter, r *http.Request, msg map[string]any) {
		switch {
		case r.Method != http.MethodPost:
			w.WriteHeader(http.StatusMethodNotAllowed)
		case msg["method"] == "initialize":
			initResult(w, msg, "s1")
		case r.URL.Path == "/loop":
			http.Redirect(w, r, "/loop", http.StatusTemporaryRedirect)
		case r.URL.Path == "/moved":
			answerJSON(w, msg, `{"content":[{"type":"text","text":"done here"}]}`)
		case msg["method"] == "tools/call":
			name := msg["params"].(map[string]any)["name"]
			switch name {
			case "elsewhere":
				http.Redirect(w, r, other.srv.URL+"/mcp", http.StatusTemporaryRedirect)
			case "here":
				http.Redirect(w, r, "/moved", http.StatusTemporaryRedirect)
			case "loop":
				http.Redirect(w, r, "/loop", http.StatusTemporaryRedirect)
			}
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	})
	c := initialized(t, named.srv.URL+"/mcp")
	c.send(t, callLine(1, "elsewhere", "x"))
	if m := c.recv(t); !strings.Contains(errorText(m), "it did not run") || !strings.Contains(errorText(m), "another origin") {
		t.Fatalf("the call redirected elsewhere: %v", m)
	}
	if got := other.requests(func(seenRequest) bool { return true }); len(got) != 0 {
		t.Fatalf("the other origin got %d requests: %+v", len(got), got)
	}
	c.send(t, callLine(2, "here", "y"))
	answer := c.recv(t)
	if text, _ := resultText(t, answer); text != "done here" {
		t.Fatalf("the call redirected to the same origin: %v", answer)
	}
	moved := named.requests(func(r seenRequest) bool { return r.path == "/moved" })
	key := answer["result"].(map[string]any)["_meta"].(map[string]any)[MetaKey]
	if len(moved) != 1 || moved[0].header.Get("Idempotency-Key") != key || key == nil || moved[0].header.Get("X-Api-Key") != "secret" {
		t.Fatalf("the redirected POST: %+v, the key %v", moved, key)
	}
	c.send(t, callLine(3, "loop", "z"))
	if m := c.recv(t); !strings.Contains(errorText(m), "more than 3 redirects") {
		t.Fatalf("a redirect loop: %v", m)
	}
	if n := len(named.requests(func(r seenRequest) bool { return r.path == "/loop" })); n != 3 {
		t.Fatalf("the loop was followed %d times, want 3", n)
	}
}

// TestHTTPSessionExpired400: a server that answers a session it no longer knows with 400 (as the
// TypeScript SDK's example servers do) gets a new session, started with
// the client's initialize, and the message again: the call is answered by
// the server, not with an error.
func TestHTTPSessionExpired400(t *testing.T) {
	var mu sync.Mutex
	live := ""
	sessions := 0
	srv := newScripted(t, func(s *scripted, w http.ResponseWriter, r *http.Request, msg map[string]any) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.Method != http.MethodPost:
			w.WriteHeader(http.StatusMethodNotAllowed)
		case msg["method"] == "initialize":
			sessions++
			live = fmt.Sprintf("s%d", sessions)
			initResult(w, msg, live)
		case r.Header.Get("Mcp-Session-Id") != live:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}`)
		case msg["method"] == "tools/call":
			answerJSON(w, msg, `{"content":[{"type":"text","text":"done in `+live+`"}]}`)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	})
	c := initialized(t, srv.srv.URL)
	c.send(t, callLine(1, "w", "1"))
	if text, _ := resultText(t, c.recv(t)); text != "done in s1" {
		t.Fatalf("first call: %q", text)
	}
	mu.Lock()
	live = "expired"
	mu.Unlock()
	c.send(t, callLine(2, "w", "2"))
	if text, isErr := resultText(t, c.recv(t)); text != "done in s2" || isErr {
		t.Fatalf("the call after the session expired: %q", text)
	}
}

// TestHTTPRetryFloorAndBackoff: a server's GET stream that ends at once without an event, with retry:
// 0, is not asked again at once: a second at least, then longer each time.
func TestHTTPRetryFloorAndBackoff(t *testing.T) {
	t.Parallel()
	srv := newScripted(t, func(s *scripted, w http.ResponseWriter, r *http.Request, msg map[string]any) {
		switch {
		case r.Method == http.MethodGet:
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "retry: 0\n\n")
		case msg["method"] == "initialize":
			initResult(w, msg, "s1")
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	})
	c := initialized(t, srv.srv.URL)
	c.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	gets := srv.waitFor(3, isGET)
	gap1, gap2 := gets[1].at.Sub(gets[0].at), gets[2].at.Sub(gets[1].at)
	if gap1 < time.Second || gap2 <= gap1 {
		t.Fatalf("GETs %s then %s apart: want at least a second, then longer", gap1, gap2)
	}
}

// TestHTTPStreamOpensAfterInitialize: the GET stream opens as soon as the initialize answer is read: the
// server's notification reaches a client that sent initialize and
// initialized back to back and nothing after.
func TestHTTPStreamOpensAfterInitialize(t *testing.T) {
	srv := newScripted(t, func(s *scripted, w http.ResponseWriter, r *http.Request, msg map[string]any) {
		switch {
		case r.Method == http.MethodGet:
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"hello\"}}\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case msg["method"] == "initialize":
			// The answer's body comes after the client's initialized: the
			// client sends nothing after it.
			w.Header().Set("Mcp-Session-Id", "s1")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			s.waitFor(1, func(r seenRequest) bool { return rpcMethod(r) == "notifications/initialized" })
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"scripted","version":"1"}}}`)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	})
	c := httpClientSession(t, srv.srv.URL)
	c.send(t, initLine+"\n"+`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if m := c.recv(t); m["id"] != 0.0 {
		t.Fatalf("first message: %v", m)
	}
	if m := c.recv(t); m["method"] != "notifications/message" {
		t.Fatalf("second message: %v", m)
	}
}

// TestHTTPPollingResume: a server that closes a call's event stream and expects the client to
// poll (MCP 2025-11-25: GET with Last-Event-ID, after retry:) gets
// resumed every time, each after its retry: (at least a second), until
// the answer comes: the call's outcome is its answer, not unknown.
func TestHTTPPollingResume(t *testing.T) {
	t.Parallel()
	srv := newScripted(t, func(s *scripted, w http.ResponseWriter, r *http.Request, msg map[string]any) {
		sse := func(events string) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, events)
		}
		switch {
		case r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") == "e1":
			sse("id: e2\nretry: 10\ndata: \n\n")
		case r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") == "e2":
			sse("id: e3\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"polled\"}]}}\n\n")
		case r.Method == http.MethodGet:
			w.WriteHeader(http.StatusMethodNotAllowed)
		case msg["method"] == "initialize":
			initResult(w, msg, "s1")
		case msg["method"] == "tools/call":
			sse("id: e1\nretry: 10\ndata: \n\n")
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	})
	c := initialized(t, srv.srv.URL)
	c.send(t, callLine(1, "w", "1"))
	if text, isErr := resultText(t, c.recv(t)); text != "polled" || isErr {
		t.Fatalf("the polled call: %q", text)
	}
	resumes := srv.requests(func(r seenRequest) bool { return r.header.Get("Last-Event-ID") != "" })
	if len(resumes) != 2 || resumes[1].at.Sub(resumes[0].at) < time.Second {
		t.Fatalf("resumptions: %+v", resumes)
	}
	c.send(t, callLine(2, "w", "1"))
	if m := c.recv(t); m["result"].(map[string]any)["_meta"].(map[string]any)[MetaReplayed] != true {
		t.Fatalf("the repeat of the polled call: %v", m)
	}
}

// TestHTTPStatelessCancel: a 2026-07-28 request (its revision in _meta, no initialize, no
// session): the client's notifications/cancelled of it closes its POST's
// stream, which is the cancellation in that revision, and is not POSTed;
// the call is recorded unknown (the server may have acted on it), and the
// client gets no answer for it.
func TestHTTPStatelessCancel(t *testing.T) {
	closed := make(chan struct{})
	srv := newScripted(t, func(s *scripted, w http.ResponseWriter, r *http.Request, msg map[string]any) {
		switch msg["method"] {
		case "tools/call":
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			close(closed)
		case "ping":
			answerJSON(w, msg, `{}`)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	})
	c := httpClientSession(t, srv.srv.URL)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	c.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"w","arguments":{"a":"1"},`+meta+`}}`)
	srv.waitFor(1, func(r seenRequest) bool { return rpcMethod(r) == "tools/call" })
	c.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("the call's stream was not closed")
	}
	c.send(t, `{"jsonrpc":"2.0","id":2,"method":"ping","params":{`+meta+`}}`)
	if m := c.recv(t); m["id"] != 2.0 {
		t.Fatalf("after the cancellation the client got %v, want the ping's answer", m)
	}
	if n := len(srv.requests(func(r seenRequest) bool { return rpcMethod(r) == "notifications/cancelled" })); n != 0 {
		t.Fatalf("notifications/cancelled was POSTed %d times", n)
	}
	call := srv.requests(func(r seenRequest) bool { return rpcMethod(r) == "tools/call" })[0]
	if call.header.Get("Mcp-Protocol-Version") != "2026-07-28" || call.header.Get("Mcp-Method") != "tools/call" ||
		call.header.Get("Mcp-Name") != "w" || call.header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("the stateless call's headers: %v", call.header)
	}
	c.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"w","arguments":{"a":"1"},`+meta+`}}`)
	if text, isErr := resultText(t, c.recv(t)); !isErr || !strings.Contains(text, "unknown") {
		t.Fatalf("the cancelled call again: %q", text)
	}
}

// TestHeaderValues: the header values of the spec's Value Encoding table, and the argument
// types a header takes.
func TestHeaderValues(t *testing.T) {
	for in, want := range map[string]string{
		"us-west1":           "us-west1",
		"Hello, 世界":          "=?base64?SGVsbG8sIOS4lueVjA==?=",
		" padded ":           "=?base64?IHBhZGRlZCA=?=",
		"line1\nline2":       "=?base64?bGluZTEKbGluZTI=?=",
		"=?base64?literal?=": "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=",
	} {
		if got := headerValue(in); got != want {
			t.Errorf("headerValue(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{`"x"`: "x", `true`: "true", `42`: "42", `42.0`: "42", `-7`: "-7",
		`1.5`: "", `null`: "", `{}`: "", `[1]`: "", `9007199254740993`: ""} {
		got, ok := primitiveText([]byte(in))
		if got != want || ok != (want != "") {
			t.Errorf("primitiveText(%s) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

// TestHTTPBrokenConnectionNotResent: a keyed call whose connection (a reused one) breaks after the request
// was written is sent once: net/http would send a request with an
// Idempotency-Key header again by itself; the call is unknown.
func TestHTTPBrokenConnectionNotResent(t *testing.T) {
	srv := newScripted(t, func(s *scripted, w http.ResponseWriter, r *http.Request, msg map[string]any) {
		switch {
		case r.Method != http.MethodPost:
			w.WriteHeader(http.StatusMethodNotAllowed)
		case msg["method"] == "initialize":
			initResult(w, msg, "s1")
		case msg["method"] == "tools/call":
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	})
	c := initialized(t, srv.srv.URL)
	c.send(t, callLine(1, "w", "1"))
	if text, isErr := resultText(t, c.recv(t)); !isErr || !strings.Contains(text, "unknown") {
		t.Fatalf("the call whose connection broke: %q", text)
	}
	calls := srv.requests(func(r seenRequest) bool { return rpcMethod(r) == "tools/call" })
	if len(calls) != 1 || calls[0].header.Get("Idempotency-Key") == "" {
		t.Fatalf("the call was POSTed %d times: %+v", len(calls), calls)
	}
}

// TestHTTPMessageCap: a server's answer past the cap on one message, as a
// JSON body or as one server-sent event that never ends, is not read
// whole: the stream is dropped and the call is answered as unknown (the
// server may have acted on it), while the server is still writing.
func TestHTTPMessageCap(t *testing.T) {
	const max = 64 << 10
	for _, shape := range []string{"json", "event"} {
		t.Run(shape, func(t *testing.T) {
			stopped := make(chan struct{})
			srv := newScripted(t, func(s *scripted, w http.ResponseWriter, r *http.Request, msg map[string]any) {
				switch {
				case r.Method == http.MethodGet:
					w.WriteHeader(http.StatusMethodNotAllowed)
				case msg["method"] == "initialize":
					initResult(w, msg, "s1")
				case msg["method"] == "tools/call":
					// Endless: it writes until idemkey drops the connection.
					if shape == "json" {
						w.Header().Set("Content-Type", "application/json")
						io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"`)
					} else {
						w.Header().Set("Content-Type", "text/event-stream")
						io.WriteString(w, "id: e1\n")
					}
					line := strings.Repeat("x", 4096)
					if shape == "event" {
						line = "data: " + line + "\n"
					}
					for r.Context().Err() == nil {
						if _, err := io.WriteString(w, line); err != nil {
							break
						}
					}
					close(stopped)
				default:
					w.WriteHeader(http.StatusAccepted)
				}
			})
			c := httpClientSessionMax(t, srv.srv.URL, max)
			c.send(t, initLine)
			c.recv(t)
			c.send(t, callLine(1, "w", "1"))
			m := c.recv(t)
			text, isErr := resultText(t, m)
			meta, _ := m["result"].(map[string]any)["_meta"].(map[string]any)
			if !isErr || meta[MetaOutcome] != "unknown" || !strings.Contains(text, "cap of 65536 bytes") {
				t.Fatalf("a call whose answer is past the cap: %v", m)
			}
			select {
			case <-stopped:
			case <-time.After(time.Minute):
				t.Fatal("the server is still writing: the connection was not dropped")
			}
		})
	}
}
