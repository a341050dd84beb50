package probe

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestChangeBody(t *testing.T) {
	for _, c := range []struct{ in, out, what string }{
		{`{"amount":100}`, `{"amount":101}`, `changed "amount" from 100 to 101`},
		{`{ "note": "x", "amount" : -1 , "n": 2 }`, `{ "note": "x", "amount" : 0 , "n": 2 }`, `changed "amount" from -1 to 0`},
		{`{"big":123456789012345678901234567890}`, `{"big":123456789012345678901234567891}`, `changed "big" from 123456789012345678901234567890 to 123456789012345678901234567891`},
		{`{"x":1.5}`, `{"x":1.51}`, `changed "x" from 1.5 to 1.51`},
		{`{"x":2e999999999}`, `{"x":2.1e999999999}`, `changed "x" from 2e999999999 to 2.1e999999999`},
		{`{"x":-0.5E-3}`, `{"x":-0.51E-3}`, `changed "x" from -0.5E-3 to -0.51E-3`},
		{`{"to":"bob","tags":[1]}`, `{"to":"bob-probe","tags":[1]}`, `changed "to" from "bob" to "bob-probe"`},
		{`{"to":"\u00e9\"","a":{"b":1}}`, `{"to":"\u00e9\"-probe","a":{"b":1}}`, `changed "to" from "\u00e9\"" to "\u00e9\"-probe"`},
		{`{"a":{"amount":1},"b":[2]}`, `{"idemkey_probe":true,"a":{"amount":1},"b":[2]}`, `added the member "idemkey_probe": true`},
		{` { } `, ` {"idemkey_probe":true } `, `added the member "idemkey_probe": true`},
	} {
		out, what, ok := changeBody([]byte(c.in))
		if !ok || string(out) != c.out || what != c.what {
			t.Errorf("changeBody(%s) = %s, %q, %v; want %s, %q", c.in, out, what, ok, c.out, c.what)
		}
	}
	for _, in := range []string{``, `[1,2]`, `"x"`, `12`, `{"a":1`, `{"a":1}{"b":2}`, `amount=1`} {
		if out, _, ok := changeBody([]byte(in)); ok {
			t.Errorf("changeBody(%q) = %q, want no change", in, out)
		}
	}
}

func TestKeys(t *testing.T) {
	k := keys{rand.Reader}
	shapes := map[string]*regexp.Regexp{
		k.uuid():             regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`),
		k.hex():              regexp.MustCompile(`^[0-9a-f]{64}$`),
		k.base64url():        regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`),
		k.of(shapePrefixed):  regexp.MustCompile(`^idemkey-probe-[0-9a-v]{32}$`),
		k.ofLen(MaxKeyLen):   regexp.MustCompile(`^idemkey-probe-[0-9a-v]{241}$`),
		k.ofLen(35):          regexp.MustCompile(`^[0-9a-v]{35}$`),
		k.ofLen(1):           regexp.MustCompile(`^[0-9a-v]$`),
		k.of(shapeUUID):      regexp.MustCompile(`^[0-9a-f-]{36}$`),
		k.of(shapeBase64URL): regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`),
	}
	for key, re := range shapes {
		if !re.MatchString(key) {
			t.Errorf("key %q does not match %s", key, re)
		}
	}
	for n := 1; n <= MaxKeyLen; n++ {
		if got := len(k.ofLen(n)); got != n {
			t.Fatalf("ofLen(%d) has %d characters", n, got)
		}
	}
	// Fresh: no two keys of a shape alike.
	seen := map[string]bool{}
	for range 1000 {
		for _, key := range []string{k.uuid(), k.hex(), k.base64url(), k.of(shapePrefixed), k.ofLen(8)} {
			if seen[key] {
				t.Fatalf("key %q made twice", key)
			}
			seen[key] = true
		}
	}
}

func TestIdentity(t *testing.T) {
	for _, c := range []struct {
		body, loc, want string
	}{
		{`{"id":"ch_1","amount":1}`, "/x", `id "ch_1"`},
		{`{"id":17}`, "", `id "17"`},
		{`{"id":null}`, "/charges/9", `Location "/charges/9"`},
		{`{"id":{"a":1}}`, "", `a body of 14 bytes`},
		{`[{"id":1}]`, "", `a body of 10 bytes`},
		{`{"id":"` + strings.Repeat("x", 100) + `"}`, "", `id "` + strings.Repeat("x", 60) + `…"`},
		{`{"id":"\u001b[2J"}`, "", `id "\x1b[2J"`},
	} {
		r := &response{body: []byte(c.body), size: int64(len(c.body)), header: http.Header{}}
		if c.loc != "" {
			r.header.Set("Location", c.loc)
		}
		if got := r.describeIdentity(); got != c.want {
			t.Errorf("%s, Location %q: %s, want %s", c.body, c.loc, got, c.want)
		}
	}
}

// TestHugeBody: a response body larger than what is kept is judged by
// its hash, whole, and costs at most maxKept of memory.
func TestHugeBody(t *testing.T) {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		w.WriteHeader(201)
		b := []byte(strings.Repeat("a", 1<<20))
		for range 8 {
			w.Write(b)
		}
		if n%2 == 0 {
			w.Write([]byte("b")) // the second response of each pair differs at its very end
		}
	}))
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL, nil)
	p, err := newProber(Config{Client: srv.Client(), Request: req, KeyHeader: "Idempotency-Key", Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	r1, err := p.send(context.Background(), Replay, "k", nil)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := p.send(context.Background(), Replay, "k", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r1.body) != maxKept || r1.size != 8<<20 || r2.size != 8<<20+1 {
		t.Fatalf("kept %d, sizes %d and %d", len(r1.body), r1.size, r2.size)
	}
	if v, ev := p.judgeAgain(r1, r2, -1, -1); v != Fail || !strings.Contains(ev, "8388608 bytes, then 8388609") {
		t.Errorf("%s: %s", v, ev)
	}
}

func runOn(t *testing.T, h http.HandlerFunc, after time.Duration) map[string]Result {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL, nil)
	rep, err := Run(context.Background(), Config{Client: srv.Client(), Request: req, Body: []byte(`{"a":1}`),
		KeyHeader: "Idempotency-Key", Concurrency: 2, After: after})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Result{}
	for _, r := range rep.Rules {
		got[r.Rule] = r
	}
	return got
}

// TestShapeFollowsKeyLimits: an endpoint that takes UUID keys only is
// probed with UUIDs after key-limits.
func TestShapeFollowsKeyLimits(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{}
	got := runOn(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		key := r.Header.Get("Idempotency-Key")
		if len(key) != 36 || key[8] != '-' {
			w.WriteHeader(400)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		w.WriteHeader(201)
		if !seen[key] {
			seen[key] = true
			fmt.Fprintf(w, `{"id":%d}`, len(seen))
			return
		}
		fmt.Fprintf(w, `{"id":"%s"}`, "replayed") // another id: a second effect
	}, time.Millisecond)
	if got[KeyLimits].Verdict != Info || !strings.Contains(got[KeyLimits].Evidence, "send keys with idemkey --format uuid") {
		t.Errorf("%+v", got[KeyLimits])
	}
	if got[Replay].Verdict != Fail || !regexp.MustCompile(`^a second effect: id "\d", then id "replayed"$`).MatchString(got[Replay].Evidence) {
		t.Errorf("%+v", got[Replay])
	}
	if got[Retention].Verdict != Fail {
		t.Errorf("%+v", got[Retention])
	}
}

// TestFirstRefused: an endpoint that stops accepting requests (429 after
// the key-limits ones) leaves the rules not tested, saying why.
func TestFirstRefused(t *testing.T) {
	var n atomic.Int32
	got := runOn(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) > 4 {
			w.WriteHeader(429)
			return
		}
		w.WriteHeader(201)
	}, time.Second)
	want := "the first request was refused: 429 Too Many Requests"
	for _, rule := range []string{Replay, Mismatch} {
		if got[rule].Verdict != NotTested || got[rule].Evidence != want {
			t.Errorf("%+v", got[rule])
		}
	}
	if got[InFlight].Verdict != NotTested || got[InFlight].Evidence != "2 concurrent requests with one key got 429 Too Many Requests ×2: none was accepted" {
		t.Errorf("%+v", got[InFlight])
	}
	if got[Required].Verdict != Info || got[Required].Evidence != "refused without a key with 429 Too Many Requests, which need not be about the key (the draft asks for 400)" ||
		got[Retention].Verdict != NotTested {
		t.Errorf("%+v %+v", got[Required], got[Retention])
	}
}

// TestRedirect: an endpoint that redirects is not taken to replay: its
// Location is the same for every request.
func TestRedirect(t *testing.T) {
	got := runOn(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://elsewhere.test/charges", http.StatusPermanentRedirect)
	}, 0)
	if got[KeyLimits].Verdict != Fail || !strings.HasSuffix(got[KeyLimits].Evidence, `the endpoint redirects to "https://elsewhere.test/charges": probe that URL`) {
		t.Errorf("%+v", got[KeyLimits])
	}
	if got[Replay].Verdict != NotTested || got[InFlight].Verdict != NotTested {
		t.Errorf("%+v %+v", got[Replay], got[InFlight])
	}
}
