package probe_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"
)

// ownOwner is an owner of the project's own: POST makes a charge (an
// effect, counted in a file that `--count 'cat FILE'` reads) after work,
// and answers 201 {"id":"ch_N","amount":…}. Its fields say how it treats
// the Idempotency-Key; the zero value dedupes as the draft asks.
type ownOwner struct {
	ignoreKey  bool          // every request is a new charge
	noMismatch bool          // a cli.Changed body with a known key gets the first response, never 422
	racy       bool          // looks the key up, works, then records it: concurrent requests all miss
	forget     time.Duration // a key is forgotten this long after its response (0: never)
	optional   bool          // a request without a key is processed (else 400)
	maxKey     int           // longer keys get 400 (0: 255)
	keyRE      *regexp.Regexp
	work       time.Duration // time spent making a charge
	conflict   int           // the status for a key in flight (0: 409)
	plain      bool          // a charge is answered {"ok":true}, without its id

	mu       sync.Mutex
	requests int // every request, answered or not
	charges  int
	keys     map[string]*ownSaved
	count    string // the count file
}

type ownSaved struct {
	body   []byte // the request's
	done   bool
	answer []byte
	at     time.Time
}

// start serves the owner on 127.0.0.1 (a free port) and returns its URL.
func (o *ownOwner) start(t *testing.T) string {
	o.keys = map[string]*ownSaved{}
	o.count = filepath.Join(t.TempDir(), "count")
	o.writeCount()
	if o.work == 0 {
		o.work = 300 * time.Millisecond
	}
	srv := httptest.NewServer(o)
	t.Cleanup(srv.Close)
	return srv.URL + "/charges"
}

// sent is the number of requests the owner has had.
func (o *ownOwner) sent() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.requests
}

func (o *ownOwner) writeCount() {
	tmp := o.count + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(o.charges)+"\n"), 0o644); err == nil {
		os.Rename(tmp, o.count) // a reader never sees a half-written file
	}
}

func ownAnswer(w http.ResponseWriter, status int, body []byte, replayed bool) {
	w.Header().Set("Content-Type", "application/json")
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(status)
	w.Write(body)
}

func ownProblem(w http.ResponseWriter, status int, title string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"title":%q}`, title)
}

// charge makes one charge and returns its answer.
func (o *ownOwner) charge(body []byte) []byte {
	time.Sleep(o.work)
	var args struct{ Amount json.Number }
	json.Unmarshal(body, &args)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.charges++
	o.writeCount()
	if o.plain {
		return []byte(`{"ok":true}`)
	}
	return fmt.Appendf(nil, `{"id":"ch_%d","amount":%q}`, o.charges, args.Amount)
}

func (o *ownOwner) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	o.requests++
	o.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	key := r.Header.Get("Idempotency-Key")
	maxKey := o.maxKey
	if maxKey == 0 {
		maxKey = 255
	}
	switch {
	case key == "" && !o.optional:
		ownProblem(w, 400, "Idempotency-Key is missing")
	case len(key) > maxKey || (key != "" && o.keyRE != nil && !o.keyRE.MatchString(key)):
		ownProblem(w, 400, "Idempotency-Key is not a valid key")
	case key == "" || o.ignoreKey:
		ownAnswer(w, 201, o.charge(body), false)
	case o.racy:
		o.racyServe(w, key, body)
	default:
		o.serve(w, key, body)
	}
}

// serve claims the key before the charge: a request with a claimed key
// gets 409 while the charge is made, then its answer.
func (o *ownOwner) serve(w http.ResponseWriter, key string, body []byte) {
	o.mu.Lock()
	s := o.keys[key]
	if s != nil && s.done && o.forget > 0 && time.Since(s.at) > o.forget {
		s = nil
	}
	if s == nil {
		s = &ownSaved{body: body}
		o.keys[key] = s
		o.mu.Unlock()
		answer := o.charge(body)
		o.mu.Lock()
		s.done, s.answer, s.at = true, answer, time.Now()
		o.mu.Unlock()
		ownAnswer(w, 201, answer, false)
		return
	}
	defer o.mu.Unlock()
	switch {
	case !s.done && o.conflict != 0:
		ownProblem(w, o.conflict, "Busy")
	case !s.done:
		ownProblem(w, 409, "A request is outstanding for this Idempotency-Key")
	case !o.noMismatch && !bytes.Equal(s.body, body):
		ownProblem(w, 422, "Idempotency-Key is already used")
	default:
		ownAnswer(w, 201, s.answer, true)
	}
}

// racyServe looks the key up, makes the charge, and only then records
// the key: requests that overlap all make a charge.
func (o *ownOwner) racyServe(w http.ResponseWriter, key string, body []byte) {
	o.mu.Lock()
	s := o.keys[key]
	o.mu.Unlock()
	switch {
	case s != nil && !bytes.Equal(s.body, body):
		ownProblem(w, 422, "Idempotency-Key is already used")
	case s != nil:
		ownAnswer(w, 201, s.answer, true)
	default:
		answer := o.charge(body)
		o.mu.Lock()
		o.keys[key] = &ownSaved{body: body, done: true, answer: answer, at: time.Now()}
		o.mu.Unlock()
		ownAnswer(w, 201, answer, false)
	}
}
