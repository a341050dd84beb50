package probe

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// mcpclient.go is the MCP client the probe needs: initialize, tools/list
// and tools/call, over stdio (newline-delimited JSON-RPC on a stream the
// caller opens) or Streamable HTTP (MCP basic/transports 2025-06-18). It
// answers a server's ping and refuses its other requests; every message
// it reads is capped at maxMCPMessage.

// mcpProtocolVersion is the version the probe asks for in initialize.
const mcpProtocolVersion = "2025-06-18"

// maxMCPMessage bounds one message read from a server.
const maxMCPMessage = 8 << 20

// rpcError is a JSON-RPC error answer.
type rpcError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

// rpcMessage is one JSON-RPC message read from a server.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

// conn is one connection to a server: a stdio server's process, or a
// Streamable HTTP session.
type conn interface {
	// call sends a request and waits for its answer; header is sent with
	// it over HTTP (the key, for --key-in header).
	call(ctx context.Context, method string, params any, header http.Header) (json.RawMessage, *rpcError, error)
	notify(ctx context.Context, method string, params any) error
	// cut drops the connection as a broken one would be dropped: no
	// goodbye (a stdio server's input is closed, an HTTP session is left
	// without its DELETE).
	cut()
	// close ends the connection as a client that is done would.
	close()
}

// request is a JSON-RPC request; id nil makes a notification.
func request(id any, method string, params any) ([]byte, error) {
	m := map[string]any{"jsonrpc": "2.0", "method": method}
	if id != nil {
		m["id"] = id
	}
	if params != nil {
		m["params"] = params
	}
	return json.Marshal(m)
}

// stdioConn speaks JSON-RPC over a stream: one message a line.
type stdioConn struct {
	rw     io.ReadWriteCloser
	wmu    sync.Mutex
	next   atomic.Int64
	mu     sync.Mutex
	wait   map[string]chan rpcMessage
	done   chan struct{}
	err    error // why reading ended, once done is closed
	closed sync.Once
	gone   chan struct{} // closed once the stream is closed (a server stopped)
	// answering bounds the answers to the server's requests being
	// written at once.
	answering chan struct{}
}

func newStdioConn(rw io.ReadWriteCloser) *stdioConn {
	c := &stdioConn{rw: rw, wait: map[string]chan rpcMessage{}, done: make(chan struct{}), gone: make(chan struct{}),
		answering: make(chan struct{}, 8)}
	go c.read()
	return c
}

func (c *stdioConn) read() {
	r := bufio.NewReaderSize(c.rw, 64<<10)
	var err error
	for {
		var line []byte
		if line, err = readLine(r, maxMCPMessage); err != nil {
			break
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var m rpcMessage
		if json.Unmarshal(line, &m) != nil {
			continue // not a message: a server's stray output
		}
		switch {
		case m.Method != "" && len(m.ID) > 0: // the server's request
			c.answerServer(m)
		case m.Method == "" && len(m.ID) > 0:
			c.mu.Lock()
			ch := c.wait[string(m.ID)]
			delete(c.wait, string(m.ID))
			c.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		}
	}
	if errors.Is(err, io.EOF) {
		err = errors.New("the server closed its output (it exited?)")
	}
	c.err = err
	close(c.done)
}

// answerServer answers a server's request: ping with an empty result,
// anything else (sampling, roots, elicitation) with method not found.
func (c *stdioConn) answerServer(m rpcMessage) {
	var b []byte
	if m.Method == "ping" {
		b, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{}})
	} else {
		b, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": rpcError{Code: -32601, Message: "the idemkey probe does not serve " + m.Method}})
	}
	select {
	case c.answering <- struct{}{}:
		go func() {
			defer func() { <-c.answering }()
			_ = c.write(b)
		}()
	default: // a server that floods requests: the rest go unanswered
	}
}

func (c *stdioConn) write(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.rw.Write(append(b, '\n'))
	return err
}

func (c *stdioConn) call(ctx context.Context, method string, params any, _ http.Header) (json.RawMessage, *rpcError, error) {
	id := c.next.Add(1)
	b, err := request(id, method, params)
	if err != nil {
		return nil, nil, err
	}
	ch := make(chan rpcMessage, 1)
	k := strconv.FormatInt(id, 10)
	c.mu.Lock()
	c.wait[k] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.wait, k)
		c.mu.Unlock()
	}()
	if err := c.write(b); err != nil {
		// A server that exited: say so, rather than how the pipe broke.
		t := time.NewTimer(time.Second)
		defer t.Stop()
		select {
		case <-c.done:
			return nil, nil, fmt.Errorf("no answer to %s: %w", method, c.err)
		case <-t.C:
			return nil, nil, fmt.Errorf("sending %s: %w", method, err)
		}
	}
	select {
	case m := <-ch:
		return m.Result, m.Error, nil
	case <-c.done:
		return nil, nil, fmt.Errorf("no answer to %s: %w", method, c.err)
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("no answer to %s: %w", method, ctx.Err())
	}
}

func (c *stdioConn) notify(_ context.Context, method string, params any) error {
	b, err := request(nil, method, params)
	if err != nil {
		return err
	}
	return c.write(b)
}

// cut closes the stream in the background (stopping a server takes a
// grace); close waits for it.
func (c *stdioConn) cut() {
	c.closed.Do(func() {
		go func() {
			_ = c.rw.Close()
			close(c.gone)
		}()
	})
}

func (c *stdioConn) close() {
	c.cut()
	<-c.gone
}

// readLine reads one line of at most max bytes (its newline excluded).
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		part, err := r.ReadSlice('\n')
		line = append(line, part...)
		if len(line) > max+1 {
			return nil, fmt.Errorf("a message longer than %d bytes", max)
		}
		switch {
		case err == nil:
			return bytes.TrimRight(line, "\r\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return line, nil
		default:
			return nil, err
		}
	}
}

// httpConn is a Streamable HTTP session.
type httpConn struct {
	client  *http.Client
	url     string
	header  http.Header
	next    atomic.Int64
	mu      sync.Mutex
	session string
	version string
}

func (c *httpConn) post(ctx context.Context, body []byte, header http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, v := range c.header {
		req.Header[k] = append([]string(nil), v...)
	}
	for k, v := range header {
		req.Header[k] = append([]string(nil), v...)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	c.mu.Lock()
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	if c.version != "" {
		req.Header.Set("Mcp-Protocol-Version", c.version)
	}
	c.mu.Unlock()
	return c.client.Do(req)
}

func (c *httpConn) call(ctx context.Context, method string, params any, header http.Header) (json.RawMessage, *rpcError, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // an event stream's connection is dropped with its answer
	id := c.next.Add(1)
	b, err := request(id, method, params)
	if err != nil {
		return nil, nil, err
	}
	resp, err := c.post(ctx, b, header)
	if err != nil {
		return nil, nil, fmt.Errorf("no answer to %s: %w", method, withoutURL(err))
	}
	defer resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" && method == "initialize" {
		c.mu.Lock()
		c.session = sid
		c.mu.Unlock()
	}
	body := io.LimitReader(resp.Body, maxMCPMessage+1)
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(body, 512))
		var m rpcMessage
		if json.Unmarshal(msg, &m) == nil && m.Error != nil {
			return nil, m.Error, nil // a JSON-RPC error on an HTTP error status
		}
		return nil, nil, fmt.Errorf("%s: the server answered %s", method, resp.Status)
	}
	want := strconv.FormatInt(id, 10)
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ct == "text/event-stream" {
		m, err := readEventAnswer(resp.Body, want)
		if err != nil {
			return nil, nil, fmt.Errorf("no answer to %s: %w", method, err)
		}
		return m.Result, m.Error, nil
	}
	all, err := io.ReadAll(body)
	if err != nil {
		return nil, nil, fmt.Errorf("no answer to %s: %w", method, err)
	}
	if len(all) > maxMCPMessage {
		return nil, nil, fmt.Errorf("the answer to %s is longer than %d bytes", method, maxMCPMessage)
	}
	var m rpcMessage
	if err := json.Unmarshal(all, &m); err != nil || string(m.ID) != want {
		return nil, nil, fmt.Errorf("the answer to %s is not its JSON-RPC response", method)
	}
	return m.Result, m.Error, nil
}

// readEventAnswer reads server-sent events until the response with id
// want; other messages (notifications, the server's requests) are
// skipped.
func readEventAnswer(r io.Reader, want string) (rpcMessage, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var data []byte
	for {
		line, err := readLine(br, maxMCPMessage)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("the event stream ended before the answer")
			}
			return rpcMessage{}, err
		}
		switch {
		case len(line) == 0:
			var m rpcMessage
			if len(data) > 0 && json.Unmarshal(data, &m) == nil && m.Method == "" && string(m.ID) == want {
				return m, nil
			}
			data = data[:0]
		case bytes.HasPrefix(line, []byte("data:")):
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))...)
			if len(data) > maxMCPMessage {
				return rpcMessage{}, fmt.Errorf("an event longer than %d bytes", maxMCPMessage)
			}
		}
	}
}

func (c *httpConn) notify(ctx context.Context, method string, params any) error {
	b, err := request(nil, method, params)
	if err != nil {
		return err
	}
	resp, err := c.post(ctx, b, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", method, withoutURL(err))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: the server answered %s", method, resp.Status)
	}
	return nil
}

// withoutURL is a transport's error without the URL it names: its query
// may hold a secret.
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func (c *httpConn) cut() {}

// close ends the session with a DELETE (MCP basic/transports, session
// management); a server may refuse it with 405.
func (c *httpConn) close() {
	c.mu.Lock()
	sid := c.session
	c.mu.Unlock()
	if sid == "" {
		return
	}
	req, err := http.NewRequest(http.MethodDelete, c.url, nil)
	if err != nil {
		return
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	req.Header.Set("Mcp-Session-Id", sid)
	if resp, err := c.client.Do(req); err == nil {
		resp.Body.Close()
	}
}

// mcpTool is a tool as tools/list describes it.
type mcpTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Annotations struct {
		ReadOnlyHint   *bool `json:"readOnlyHint"`
		IdempotentHint *bool `json:"idempotentHint"`
	} `json:"annotations"`
}

// hasParam reports whether the tool's inputSchema names the argument.
func (t *mcpTool) hasParam(name string) bool {
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(t.InputSchema, &schema)
	_, ok := schema.Properties[name]
	return ok
}

func (t *mcpTool) readOnly() bool {
	return t.Annotations.ReadOnlyHint != nil && *t.Annotations.ReadOnlyHint
}
func (t *mcpTool) idempotent() bool {
	return t.Annotations.IdempotentHint != nil && *t.Annotations.IdempotentHint
}

// maxToolPages bounds tools/list's pagination: a server whose cursors
// never end is an error, not a loop.
const maxToolPages = 1000

// maxTools bounds how many tools a server may list.
const maxTools = 10000

// initialize opens the session: initialize, then notifications/initialized.
func initialize(ctx context.Context, c conn, version string) (serverName string, err error) {
	res, rerr, err := c.call(ctx, "initialize", map[string]any{
		"protocolVersion": mcpProtocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "idemkey-probe", "version": version},
	}, nil)
	if err == nil && rerr != nil {
		err = fmt.Errorf("initialize was refused: %s", rerr.Message)
	}
	if err != nil {
		return "", err
	}
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerInfo      struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"serverInfo"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return "", fmt.Errorf("initialize: the answer is not an InitializeResult: %v", err)
	}
	if h, ok := c.(*httpConn); ok {
		h.mu.Lock()
		h.version = r.ProtocolVersion
		h.mu.Unlock()
	}
	if err := c.notify(ctx, "notifications/initialized", nil); err != nil {
		return "", err
	}
	return strings.TrimSpace(r.ServerInfo.Name + " " + r.ServerInfo.Version), nil
}

// listTools reads every page of tools/list.
func listTools(ctx context.Context, c conn) ([]mcpTool, error) {
	var tools []mcpTool
	cursor := ""
	for range maxToolPages {
		var params any
		if cursor != "" {
			params = map[string]any{"cursor": cursor}
		}
		res, rerr, err := c.call(ctx, "tools/list", params, nil)
		if err == nil && rerr != nil {
			err = fmt.Errorf("tools/list was refused: %s", rerr.Message)
		}
		if err != nil {
			return nil, err
		}
		var page struct {
			Tools      []mcpTool `json:"tools"`
			NextCursor string    `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &page); err != nil {
			return nil, fmt.Errorf("tools/list: the answer is not a ListToolsResult: %v", err)
		}
		tools = append(tools, page.Tools...)
		if len(tools) > maxTools {
			return nil, fmt.Errorf("tools/list: more than %d tools", maxTools)
		}
		if page.NextCursor == "" {
			return tools, nil
		}
		cursor = page.NextCursor
	}
	return nil, fmt.Errorf("tools/list: more than %d pages", maxToolPages)
}
