package post_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// owner is an HTTP owner on loopback that counts the requests it read
// whole (their effects) and answers each as answer says: "close" closes
// the connection without a reply, "hold" keeps it open until released,
// anything else is a 201 with that body.
type owner struct {
	ln      net.Listener
	mu      sync.Mutex
	effects int
	answer  string
	got     chan struct{} // a request read whole
	release chan struct{}
}

func newOwner(t *testing.T, answer string) *owner {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := &owner{ln: ln, answer: answer, got: make(chan struct{}, 16), release: make(chan struct{})}
	t.Cleanup(func() { ln.Close(); close(o.release) })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go o.serve(c)
		}
	}()
	return o
}

func (o *owner) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return
		}
		o.mu.Lock()
		o.effects++
		answer := o.answer
		o.mu.Unlock()
		o.got <- struct{}{}
		switch answer {
		case "close":
			return
		case "hold":
			<-o.release
			return
		}
		resp := &http.Response{StatusCode: 201, ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{"Content-Type": {"application/json"}},
			ContentLength: int64(len(answer)), Body: io.NopCloser(strings.NewReader(answer))}
		if resp.Write(c) != nil {
			return
		}
	}
}

func (o *owner) url() string { return "http://" + o.ln.Addr().String() + "/charges" }

func (o *owner) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.effects
}

func (o *owner) set(answer string) {
	o.mu.Lock()
	o.answer = answer
	o.mu.Unlock()
}
