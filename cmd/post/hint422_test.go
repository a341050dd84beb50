package post_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
)

// payloadOwner is a server that honours Idempotency-Key: the first body sent
// under a key is kept, the same body again gets the first answer, another
// body 422.
func payloadOwner(t *testing.T) *httptest.Server {
	var mu sync.Mutex
	seen := map[string][]byte{}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		key := r.Header.Get("Idempotency-Key")
		mu.Lock()
		first, ok := seen[key]
		if !ok {
			seen[key] = body
		}
		mu.Unlock()
		if ok && !bytes.Equal(first, body) {
			http.Error(w, `{"error":"key reused with a different payload"}`, http.StatusUnprocessableEntity)
			return
		}
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"id":"ch_1"}` + "\n"))
	}))
	t.Cleanup(s.Close)
	return s
}

func runPost(t *testing.T, args ...string) (stdout, stderr string, code int) {
	return clitest.Run(t, "", append([]string{"post"}, args...)...)
}

// TestHint422NamesSelection: two payloads that share a key because --omit
// or --only (or a config file's tools section) left their difference out
// of it get the owner's 422, and the hint names the selection in force;
// without one, the hint is about the bytes sent.
func TestHint422NamesSelection(t *testing.T) {
	s := payloadOwner(t)
	for _, c := range []struct {
		sel  []string
		hint string
	}{
		{[]string{"--omit", "/ts"}, "hint: the key was derived under --omit /ts, while the whole arguments are sent: a body that differs only outside that selection gets the same key"},
		{[]string{"--only", "/amount", "--only", "/to"}, "hint: the key was derived under --only /amount, /to, while the whole arguments are sent"},
	} {
		task := "t" + strings.Join(c.sel, "")
		args := append([]string{s.URL, "--task", task, "--tool", "pay"}, c.sel...)
		if _, errs, code := runPost(t, append(args, "-d", `{"amount":5,"to":"acct_1","ts":"2025-03-14T10:00:00Z"}`)...); code != 0 {
			t.Fatalf("%v: first post: exit %d, %s", c.sel, code, errs)
		}
		_, errs, code := runPost(t, append(args, "-d", `{"amount":5,"to":"acct_1","ts":"2025-03-14T10:00:09Z"}`)...)
		if code != 22 || !strings.Contains(errs, "HTTP 422: the server has seen key") || !strings.Contains(errs, c.hint) {
			t.Errorf("%v: second post: exit %d, stderr:\n%s\nwant the hint %q", c.sel, code, errs, c.hint)
		}
	}
	// No selection: the same arguments spelled otherwise and sent as they are.
	args := []string{s.URL, "--task", "t-whole", "--tool", "pay"}
	if _, errs, code := runPost(t, append(args, "-d", `{"amount":5}`)...); code != 0 {
		t.Fatalf("first post: exit %d, %s", code, errs)
	}
	_, errs, code := runPost(t, append(args, "-d", `{ "amount": 5 }`, "--send-as-is")...)
	if code != 22 || !strings.Contains(errs, "hint: the server compares the request bytes") || strings.Contains(errs, "derived under") {
		t.Errorf("no selection: exit %d, stderr:\n%s", code, errs)
	}
}
