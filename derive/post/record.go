package post

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// recConn records, on the one connection an attempt uses (keep-alives are
// off), the request head exactly as it was written and the response heads
// exactly as they arrived, so that -v shows what was actually sent (Go's
// client drops or rewrites some headers) and -i, -D and %{header_json}
// give the server's headers in the server's order.
type recConn struct {
	net.Conn

	mu        sync.Mutex
	wrote     []byte
	wroteDone bool
	read      []byte
	cur       int      // start of the head being read in read
	heads     [][]byte // complete response heads (1xx included), in order
	final     bool     // a final (non-1xx) head is complete
	tail      int      // body bytes recorded after the final head
}

// maxRecord bounds what a connection records: a head larger than this is
// not recorded (Go's client refuses it anyway, see MaxResponseHeaderBytes).
const maxRecord = 1 << 20

// tailRecord is how much of the body after the final head is kept, for a
// response that arrives before the upload fails (see earlyResponse).
const tailRecord = 64 << 10

// Write records the request head as it is written.
func (c *recConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.mu.Lock()
	if !c.wroteDone && n > 0 {
		from := max(len(c.wrote)-3, 0)
		c.wrote = append(c.wrote, p[:n]...)
		if i := bytes.Index(c.wrote[from:], []byte("\r\n\r\n")); i >= 0 {
			c.wrote = c.wrote[:from+i+4]
			c.wroteDone = true
		} else if len(c.wrote) > maxRecord {
			c.wrote, c.wroteDone = nil, true
		}
	}
	c.mu.Unlock()
	return n, err
}

// Read records the response heads as they arrive.
func (c *recConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		c.record(p[:n])
		c.mu.Unlock()
	}
	return n, err
}

// record appends received bytes, splitting off each complete head, and
// keeps at most tailRecord body bytes after the final one.
func (c *recConn) record(p []byte) {
	if c.final {
		k := min(len(p), tailRecord-c.tail)
		c.read = append(c.read, p[:k]...)
		c.tail += k
		return
	}
	if len(c.read)+len(p) > maxRecord {
		c.final, c.tail = true, tailRecord // give up recording
		c.read = nil
		return
	}
	c.read = append(c.read, p...)
	for !c.final {
		end := headEnd(c.read[c.cur:])
		if end < 0 {
			return
		}
		head := c.read[c.cur : c.cur+end]
		c.heads = append(c.heads, head)
		c.cur += end
		if code := headStatus(head); code < 100 || code > 199 || code == http.StatusSwitchingProtocols {
			c.final = true
			c.tail = len(c.read) - c.cur
		}
	}
}

// headEnd returns the length of the head at the start of b, through the
// blank line that ends it, or -1.
func headEnd(b []byte) int {
	for i := 0; i < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		if i+1 < len(b) && b[i+1] == '\n' {
			return i + 2
		}
		if i+2 < len(b) && b[i+1] == '\r' && b[i+2] == '\n' {
			return i + 3
		}
	}
	return -1
}

// headStatus returns the status code of a response head, or 0.
func headStatus(head []byte) int {
	line, _, _ := bytes.Cut(head, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 2 {
		return 0
	}
	code, err := strconv.Atoi(f[1])
	if err != nil {
		return 0
	}
	return code
}

// sentHead returns the request head as written, or nil.
func (c *recConn) sentHead() []byte {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.wroteDone {
		return nil
	}
	return c.wrote
}

// responseHeads returns the complete response heads received so far.
func (c *recConn) responseHeads() [][]byte {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]byte(nil), c.heads...)
}

// earlyResponse returns a final response that arrived complete in its
// head, with the body bytes that followed it, when the attempt failed
// while the request was still being written: a server that answers 413
// or 401 before reading the upload and then resets the connection. curl
// reports that response; so does idemkey, instead of a send error.
func (c *recConn) earlyResponse(req *http.Request) (*http.Response, []byte, bool) {
	if c == nil {
		return nil, nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.final || len(c.heads) == 0 || c.read == nil {
		return nil, nil, false
	}
	head := c.heads[len(c.heads)-1]
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(head)), req)
	if err != nil || resp.StatusCode < 200 {
		return nil, nil, false
	}
	return resp, append([]byte(nil), c.read[c.cur:]...), true
}
