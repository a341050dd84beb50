package post

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// countingServer answers 503 to the first fails requests, then 201; it
// records each request's key and body.
type countingServer struct {
	mu     sync.Mutex
	fails  int
	keys   []string
	bodies []string
}

func (s *countingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.keys = append(s.keys, r.Header.Get("Idempotency-Key"))
	s.bodies = append(s.bodies, string(b))
	n := len(s.keys)
	s.mu.Unlock()
	if n <= s.fails {
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("X-Seen", "yes")
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, "created")
}

// newExchange starts a countingServer and returns an exchange to it, with
// up to retry retries.
func newExchange(t *testing.T, fails, retry int) (Exchange, *countingServer) {
	t.Helper()
	srv := &countingServer{fails: fails}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	client, err := NewClient(Transport{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, ts.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Idempotency-Key", "k1")
	x := Exchange{Client: client, Request: req, Body: []byte(`{"a":1}`), Retry: retry, RetryDelay: time.Millisecond, KeyHeader: "Idempotency-Key"}
	return x, srv
}

// TestDoRetriesWithTheSameKeyAndBody: a 503 is retried with the same key
// and body bytes, each retry is reported, and the final response is the
// one whose body the result holds.
func TestDoRetriesWithTheSameKeyAndBody(t *testing.T) {
	t.Parallel()
	x, srv := newExchange(t, 2, 3)
	var sent []int
	var retries []Retry
	x.Events = Events{
		Sending:  func(attempt int, total uint64) { sent = append(sent, attempt) },
		Retrying: func(r Retry) { retries = append(retries, r) },
	}
	res := Do(x)
	defer res.Final.Close()
	status, h, body, err := res.Response()
	got, _ := io.ReadAll(body)
	if err != nil || status != http.StatusCreated || h.Get("X-Seen") != "yes" || string(got) != "created" {
		t.Fatalf("response %d %v %q %v", status, h, got, err)
	}
	if res.Retries != 2 || len(sent) != 3 || len(retries) != 2 || retries[0].Why != "HTTP 503 Service Unavailable" || retries[1].Left != 2 {
		t.Errorf("retries %d, sent %v, reported %+v", res.Retries, sent, retries)
	}
	for i := range srv.keys {
		if srv.keys[i] != "k1" || srv.bodies[i] != `{"a":1}` {
			t.Errorf("request %d: key %q, body %q", i+1, srv.keys[i], srv.bodies[i])
		}
	}
	if len(srv.keys) != 3 {
		t.Errorf("%d requests, want 3", len(srv.keys))
	}
}

// TestDoSendsNoRetryOnceTheLeaseIsLost: with the ledger's claim lost, the
// failed attempt stays the final one and no retry is sent.
func TestDoSendsNoRetryOnceTheLeaseIsLost(t *testing.T) {
	t.Parallel()
	x, srv := newExchange(t, 5, 3)
	lost := make(chan struct{})
	close(lost)
	x.LeaseLost = lost
	var why string
	x.Events.Lost = func(w string) { why = w }
	res := Do(x)
	defer res.Final.Close()
	if len(srv.keys) != 1 || res.Retries != 0 || res.Final.Resp.StatusCode != http.StatusServiceUnavailable || why != "HTTP 503 Service Unavailable" {
		t.Errorf("%d requests, %d retries, status %d, lost %q", len(srv.keys), res.Retries, res.Final.Resp.StatusCode, why)
	}
}

// TestWriteOutVariables: -w's variables read the exchange, %{stderr}
// switches the stream, escapes and %% are literal text.
func TestWriteOutVariables(t *testing.T) {
	t.Parallel()
	x, _ := newExchange(t, 0, 0)
	res := Do(x)
	defer res.Final.Close()
	w, err := ParseWriteOut(`%{http_code} %{method} %{idempotency_key} %{size_download} %{num_retries} %header{x-seen}\t100%%\n%{stderr}%{exitcode} %{content_type}`)
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := w.Write(&out, &errOut, res, Info{URL: x.Request.URL, Method: "POST", Key: "k1", ExitCode: 0}); err != nil {
		t.Fatal(err)
	}
	if want := "201 POST k1 7 0 yes\t100%\n"; out.String() != want {
		t.Errorf("stdout %q, want %q", out.String(), want)
	}
	if want := "0 text/plain; charset=utf-8"; errOut.String() != want {
		t.Errorf("stderr %q, want %q", errOut.String(), want)
	}
	var ue *UsageError
	if _, err := ParseWriteOut("%{nope}"); err == nil || !strings.Contains(err.Error(), "unknown variable %{nope}") || !errors.As(err, &ue) || ue.ExitCode() != 2 {
		t.Errorf("unknown variable: %v", err)
	}
}
