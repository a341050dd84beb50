package probe_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
)

// keyedOwner: an HTTP owner on 127.0.0.1 that dedupes by Idempotency-Key and keeps
// the key of every effect, one a line, in a file a reconciler can read.
func keyedOwner(t *testing.T, keysFile string) *httptest.Server {
	var mu sync.Mutex
	type first struct{ body, id string }
	seen := map[string]first{}
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		key := r.Header.Get("Idempotency-Key")
		mu.Lock()
		defer mu.Unlock()
		if f, ok := seen[key]; ok && key != "" {
			if f.body != string(b) {
				w.WriteHeader(http.StatusUnprocessableEntity)
				return
			}
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, `{"id":%q}`, f.id)
			return
		}
		n++
		id := fmt.Sprintf("ch_%d", n)
		if key != "" {
			seen[key] = first{string(b), id}
			f, err := os.OpenFile(keysFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err == nil {
				fmt.Fprintln(f, key)
				f.Close()
			}
		}
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":%q}`, id)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestProbeHTTPReconcile: the HTTP probe checks --reconcile after its replay rule, with the body
// on the command's standard input.
func TestProbeHTTPReconcile(t *testing.T) {
	t.Parallel()
	r := newBinRig(t)
	srv := keyedOwner(t, r.effects)
	honest := `grep -qx "$IDEMPOTENCY_KEY" "$EFFECTS_FILE" && grep -q '"amount":7'`
	// A command that answers gets 30s (under load a shell may take more
	// than a moment); the one that hangs is stopped after 300ms.
	for _, c := range []struct {
		name, command, verdict, evidence string
		code                             int
	}{
		{"honest", honest, "pass", "for a key with an effect it said happened (exit 0); for a key never sent, not happened (exit 1)", 0},
		{"exit 3 for a key with an effect", `if grep -qx "$IDEMPOTENCY_KEY" "$EFFECTS_FILE"; then exit 3; fi; exit 1`, "pass", "for a key with an effect it said happened (exit 3, more than once); for a key never sent, not happened (exit 1)", 0},
		{"exit 3 for a key never sent", `grep -qx "$IDEMPOTENCY_KEY" "$EFFECTS_FILE" || exit 3`, "fail", "a reconciler that says happened for a key never sent would record lost writes as done", 1},
		{"always 0", "exit 0", "fail", "a reconciler that says happened for a key never sent would record lost writes as done", 1},
		{"always 1", "exit 1", "fail", "for a key with an effect it said not happened", 1},
		{"hangs", "sleep 30", "fail", "timed out after 300ms", 1},
		{"exit 2", "exit 2", "fail", "could not tell", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, errs, code := r.run("probe", srv.URL+"/charges", "--yes", "--json", "-d", `{"amount":7}`,
				"--reconcile", c.command, "--reconcile-timeout", timeout(c.name == "hangs", "300ms"), "--concurrency", "2")
			if code != c.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, c.code, out, errs)
			}
			var rep struct {
				Rules []struct{ Rule, Verdict, Evidence string }
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			found := false
			for _, res := range rep.Rules {
				if res.Rule == "reconcile" {
					found = true
					if res.Verdict != c.verdict || !strings.Contains(res.Evidence, c.evidence) {
						t.Errorf("reconcile: %s %q; want %s with %q", res.Verdict, res.Evidence, c.verdict, c.evidence)
					}
				}
			}
			if !found {
				t.Errorf("no reconcile rule: %s", out)
			}
		})
	}
	// Without --reconcile the report has no reconcile rule.
	out, _, _ := r.run("probe", srv.URL+"/charges", "--yes", "--json", "-d", `{"amount":7}`, "--concurrency", "2")
	if strings.Contains(out, `"reconcile"`) {
		t.Errorf("a reconcile rule without --reconcile: %s", out)
	}
}

// timeout is short for the reconcile command that hangs, whose timeout the
// test is about, and 30s for one that answers.
func timeout(hangs bool, short string) string {
	if hangs {
		return short
	}
	return "30s"
}
