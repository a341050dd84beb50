package mcp_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// secretServer is a Streamable HTTP server the test scripts: it answers
// initialize and takes notifications, and drops the connection of every
// tools/call after reading it (the server may have acted: unknown).
func secretServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(req.Body)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		json.Unmarshal(body, &m)
		switch {
		case m.ID == nil:
			w.WriteHeader(http.StatusAccepted)
		case m.Method == "initialize":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Mcp-Session-Id", "s1")
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"protocolVersion":"`+m.Params.ProtocolVersion+`","capabilities":{"tools":{}},"serverInfo":{"name":"secret","version":"1"}}}`)
		case m.Method == "tools/call":
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{}}`)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// TestMCPURLSecrets: the secrets of --url (its password, its query string) are never told
// to the model, recorded in the ledger's reason, nor printed.
func TestMCPURLSecrets(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	addr := secretServer(t)
	url := "http://user:pw-S3CRET-pass@" + addr + "/mcp?api_key=Q-S3CRET-key&token=T-S3CRET-tok"
	s := r.raw("mcp", "--task", "t-secret", "--url", url, "-v")
	s.initialize("2025-11-25")
	s.send(toolCall("1", "charge", `{"n":1}`))
	m := s.msg()
	s.in.Close()
	s.cmd.Wait()
	var reasons strings.Builder
	for _, rec := range r.records() {
		reasons.WriteString(rec["reason"].(string) + "\n")
	}
	if !strings.Contains(m.raw, "outcome") || reasons.Len() == 0 {
		t.Fatalf("want the call unknown and recorded: %s; records: %q", m.raw, reasons.String())
	}
	for what, text := range map[string]string{"the answer": m.raw, "the record": reasons.String(), "stderr": s.errb.String()} {
		if strings.Contains(text, "S3CRET") {
			t.Errorf("%s shows a secret of --url:\n%s", what, text)
		}
	}
	if !strings.Contains(m.raw, "api_key=xxxxx") {
		t.Errorf("the answer does not say which URL: %s", m.raw)
	}
}

// TestMCPServerEnv: the server gets the environment a step of run gets: none of idemkey's
// own settings (IDEMKEY_*: the ledger's URL and password), but those
// --env names.
func TestMCPServerEnv(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	r.env = append(r.env, "IDEMKEY_PASSED=1", "IDEMKEY_KEY_SECRET=s3cret")
	s := r.shapes("--env", "IDEMKEY_PASSED")
	s.initialize("2025-11-25")
	s.send(toolCall("1", "env", `{}`))
	if got := resultText(s.answer("1")); got != "IDEMKEY_PASSED" {
		t.Fatalf("the server's IDEMKEY_* variables: %q, want IDEMKEY_PASSED only", got)
	}
}

// TestMCPLogTrusted: --log is opened as the ledger is: a file others can write, one of
// another user's, or one in a directory others can write is refused
// (idemkey drift trusts its records), and nothing is written to it.
func TestMCPLogTrusted(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	server := []string{r.node, r.script("shapes-server.mjs")}
	open := r.path("open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o777) // whatever the umask
	writable := r.write("writable.jsonl", "")
	os.Chmod(writable, 0o666)
	cases := map[string]string{"writable by others": writable, "in a directory others can write": filepath.Join(open, "log.jsonl")}
	if os.Geteuid() == 0 {
		theirs := r.write("theirs.jsonl", "")
		if err := os.Chown(theirs, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		cases["another user's"] = theirs
	}
	for what, log := range cases {
		_, stderr, code := r.idemkey(proxy([]string{"--task", "t-log", "--log", log}, server)...)
		if code != 125 || !strings.Contains(stderr, "--log: refusing") {
			t.Errorf("a log %s: exit %d, stderr %s", what, code, stderr)
		}
		if b, _ := os.ReadFile(log); len(b) != 0 {
			t.Errorf("a log %s was written: %q", what, b)
		}
	}
	ok := r.path("ok.jsonl")
	if _, stderr, code := r.idemkey(proxy([]string{"--task", "t-log", "--log", ok}, server)...); code != 0 {
		t.Fatalf("a log of one's own: exit %d, stderr %s", code, stderr)
	}
	if fi, err := os.Stat(ok); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the log made: %v %v", fi, err)
	}
}
