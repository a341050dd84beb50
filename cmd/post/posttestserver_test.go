package post_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// fault is what the test server does with one attempt, by attempt number.
type fault int

const (
	faultNone        fault = iota
	faultDrop              // commit the effect, then close the connection without a reply
	faultUnavailable       // 503 with Retry-After, before any effect
	faultStall             // start the effect, stall until a retry has been told 409, then commit
	faultReset             // commit, send half the body, then reset the connection
	faultTruncate          // commit, send half the body, then close cleanly
	faultStatus            // answer idemServer.status before any effect
)

// seenAttempt is one request as the server received it.
type seenAttempt struct {
	Method string
	Key    string
	Body   []byte
	Header http.Header
}

// savedResponse is the first response for a key, replayed for later
// requests with that key.
type savedResponse struct {
	body   []byte // the request body it answered, to detect a cli.Changed payload
	status int
	resp   []byte
}

// idemServer owns a side effect as the IETF Idempotency-Key draft and
// Stripe describe: the first response per key is saved and replayed with
// Idempotent-Replayed: true; a request whose key is in flight gets 409; a
// request that reuses a key with another body gets 422. Faults are
// injected per attempt. It listens on 127.0.0.1 only.
type idemServer struct {
	*httptest.Server
	t          *testing.T
	keyHeader  string
	plan       []fault // fault for attempt i; none beyond the plan
	status     int     // for faultStatus
	retryAfter string  // for faultUnavailable

	mu       sync.Mutex
	attempts []seenAttempt
	effects  map[string]int // key → times the side effect ran
	saved    map[string]*savedResponse
	inflight map[string]chan struct{} // closed once a retry has been told 409
}

func newIdemServer(t *testing.T, plan ...fault) *idemServer {
	t.Helper()
	s := &idemServer{
		t:          t,
		keyHeader:  "Idempotency-Key",
		plan:       plan,
		retryAfter: "0.02",
		effects:    map[string]int{},
		saved:      map[string]*savedResponse{},
		inflight:   map[string]chan struct{}{},
	}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.handle))
	s.Server.Listener.Close()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Server.Listener = l
	s.Server.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *idemServer) handle(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	key := r.Header.Get(s.keyHeader)
	s.mu.Lock()
	n := len(s.attempts)
	s.attempts = append(s.attempts, seenAttempt{Method: r.Method, Key: key, Body: body, Header: r.Header.Clone()})
	f := faultNone
	if n < len(s.plan) {
		f = s.plan[n]
	}
	if key == "" {
		s.mu.Unlock()
		http.Error(w, `{"error":"missing key"}`, http.StatusBadRequest)
		return
	}
	if sv := s.saved[key]; sv != nil {
		s.mu.Unlock()
		if !bytes.Equal(sv.body, body) {
			http.Error(w, `{"error":"key reused with a different payload"}`, http.StatusUnprocessableEntity)
			return
		}
		w.Header().Set("Idempotent-Replayed", "true")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(sv.status)
		w.Write(sv.resp)
		return
	}
	if done, busy := s.inflight[key]; busy {
		select {
		case <-done:
		default:
			close(done)
		}
		s.mu.Unlock()
		http.Error(w, `{"error":"a request with this key is in flight"}`, http.StatusConflict)
		return
	}
	switch f {
	case faultUnavailable:
		s.mu.Unlock()
		w.Header().Set("Retry-After", s.retryAfter)
		http.Error(w, `{"error":"unavailable"}`, http.StatusServiceUnavailable)
		return
	case faultStatus:
		s.mu.Unlock()
		http.Error(w, fmt.Sprintf(`{"error":%d}`, s.status), s.status)
		return
	}
	retried := make(chan struct{})
	s.inflight[key] = retried
	s.mu.Unlock()

	if f == faultStall {
		// Past the client's --max-time: the client gives up on this
		// attempt and retries while the effect is still in flight.
		select {
		case <-retried:
		case <-time.After(5 * time.Second):
		}
	}
	s.mu.Lock()
	s.effects[key]++
	resp := fmt.Appendf(nil, `{"id":"ch_%d","effect":%d,"key":%q}`+"\n", n+1, s.effects[key], key)
	s.saved[key] = &savedResponse{body: body, status: http.StatusCreated, resp: resp}
	delete(s.inflight, key)
	s.mu.Unlock()

	switch f {
	case faultDrop:
		conn := s.hijack(w)
		conn.Close()
	case faultReset, faultTruncate:
		conn := s.hijack(w)
		fmt.Fprintf(conn, "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(resp))
		conn.Write(resp[:len(resp)/2])
		if f == faultReset {
			time.Sleep(10 * time.Millisecond) // let the headers and half the body arrive first
			conn.(*net.TCPConn).SetLinger(0)  // close with RST
		}
		conn.Close()
	default:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(resp)))
		w.WriteHeader(http.StatusCreated)
		w.Write(resp)
	}
}

func (s *idemServer) hijack(w http.ResponseWriter) net.Conn {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		s.t.Errorf("hijack: %v", err)
		panic(http.ErrAbortHandler)
	}
	return conn
}

// seen returns a copy of the attempts received so far.
func (s *idemServer) seen() []seenAttempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seenAttempt(nil), s.attempts...)
}

// effectCount returns how many times the side effect ran for key.
func (s *idemServer) effectCount(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.effects[key]
}

// savedBody returns the response saved for key.
func (s *idemServer) savedBody(key string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sv := s.saved[key]; sv != nil {
		return sv.resp
	}
	return nil
}
