package mcp_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The official Go SDK (testdata/gosdk, a module of its own: a server over
// stdio and over stateless Streamable HTTP, and a client), at its newest
// revision, 2026-07-28: no initialize, server/discover, the revision in
// each request's _meta, and over HTTP the headers that mirror each
// request.

// goSDK is testdata/gosdk's server and client, built once for the package
// (goSDKBuild); without the go command, or the module's download, the test
// skips (fails under CI=true).
func (r *mcpRig) goSDK() (server, client string) {
	r.t.Helper()
	gosdkOnce.Do(func() { gosdkDir, gosdkErr = goSDKBuild(filepath.Join(r.repo, "testdata/gosdk")) })
	if gosdkErr != nil {
		if os.Getenv("CI") == "true" {
			r.t.Fatalf("the Go SDK test module: %v", gosdkErr)
		}
		r.t.Skipf("the Go SDK test module: %v", gosdkErr)
	}
	return filepath.Join(gosdkDir, "server"), filepath.Join(gosdkDir, "client")
}

var (
	gosdkOnce sync.Once
	gosdkDir  string
	gosdkErr  error
)

// goSDKBuild builds the module in src (its ./server and ./client) into a
// directory beside the go command's build cache named by a hash of the
// module's files and the go command's version, and returns it: a later
// run (or test binary) with the same sources finds the programs there,
// and a change to any file of the module builds them anew.
func goSDKBuild(src string) (string, error) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("no go command: %v", err)
	}
	// The caller's environment: its module cache and proxy, not a rig's HOME.
	env := append(os.Environ(), "CGO_ENABLED=0")
	envOut, err := exec.Command(goCmd, "env", "GOVERSION", "GOCACHE").Output()
	if err != nil {
		return "", fmt.Errorf("go env: %v", err)
	}
	goVersion, goCache, _ := strings.Cut(strings.TrimSpace(string(envOut)), "\n")
	h := sha256.New()
	fmt.Fprintf(h, "%s\nCGO_ENABLED=0\n", goVersion)
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		fmt.Fprintf(h, "%s %d\n%s", p[len(src):], len(b), b)
		return err
	})
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(goCache) {
		goCache = os.TempDir()
	}
	dir := filepath.Join(filepath.Dir(goCache), "idemkey-gosdk", hex.EncodeToString(h.Sum(nil))[:24])
	if _, err := os.Stat(filepath.Join(dir, "client")); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	c := exec.Command(goCmd, "build", "-o", tmp+"/", "./server", "./client")
	c.Dir, c.Env = src, env
	if b, err := c.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, b)
	}
	// Whole or not at all: another test binary may build the same at once.
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, "client")); serr != nil {
			return "", err
		}
	}
	return dir, nil
}

// goStep is one line of the Go SDK client's.
type goStep struct {
	Op      string          `json:"op"`
	Got     bool            `json:"got"`
	Version string          `json:"version"`
	Result  json.RawMessage `json:"result"`
	Error   string          `json:"error"`
}

// goClient runs the Go SDK client with the command line argv.
func (r *mcpRig) goClient(client string, argv ...string) ([]goStep, string) {
	r.t.Helper()
	c := exec.Command(client, argv...)
	c.Dir, c.Env = r.dir, r.env
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	if err := c.Run(); err != nil {
		r.t.Fatalf("the Go SDK client: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	var steps []goStep
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var s goStep
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			r.t.Fatalf("the Go SDK client wrote %q: %v", sc.Text(), err)
		}
		steps = append(steps, s)
	}
	if len(steps) != 5 || steps[0].Op != "connect" {
		r.t.Fatalf("the Go SDK client's steps: %+v\nstderr:\n%s", steps, errOut.String())
	}
	return steps, errOut.String()
}

// goCall is a call step's result.
func goCall(t *testing.T, s goStep) toolResult {
	t.Helper()
	return mcpStep{Op: s.Op, Result: s.Result, Error: s.Error}.tool(t)
}

// goCountLine is a call the Go SDK server ran.
type goCountLine struct {
	Tool    string            `json:"tool"`
	Key     *string           `json:"key"`
	Attempt *float64          `json:"attempt"`
	Headers map[string]string `json:"headers"`
}

func (r *mcpRig) goCalls() []goCountLine {
	r.t.Helper()
	var out []goCountLine
	r.jsonLines(r.count, func(line []byte) error {
		var c goCountLine
		err := json.Unmarshal(line, &c)
		out = append(out, c)
		return err
	})
	return out
}

// goOnce checks a Go SDK session through idemkey: the version agreed, the
// write run once with the key its first answer carries, the repeat
// replayed, the read-only tool passed, the change of the tools' list
// heard (subscriptions/listen passed through).
func goOnce(t *testing.T, r *mcpRig, version string, steps []goStep, stderr string) goCountLine {
	t.Helper()
	if steps[0].Version != version {
		t.Fatalf("the Go SDK client agreed on %q through idemkey, want %s\n%s", steps[0].Version, version, stderr)
	}
	first, again, look := goCall(t, steps[1]), goCall(t, steps[2]), goCall(t, steps[3])
	if first.IsError || first.Meta[metaKey] == nil || again.Meta[metaReplayed] != true || again.text() != first.text() {
		t.Fatalf("the write %+v, its repeat %+v\n%s", first, again, stderr)
	}
	if look.IsError || look.Meta[metaKey] != nil {
		t.Fatalf("the read-only tool: %+v", look)
	}
	if !steps[4].Got {
		t.Fatalf("the server's tools/list_changed did not reach the client (2026-07-28: on its subscriptions/listen stream)\n%s", stderr)
	}
	c := r.goCalls()
	if len(c) != 1 || c[0].Key == nil || *c[0].Key != first.Meta[metaKey] || *c[0].Attempt != 1 {
		t.Fatalf("the server ran %+v, want once with key %v\n%s", c, first.Meta[metaKey], stderr)
	}
	return c[0]
}

// TestMCPGoSDKStdio: over stdio: the Go SDK client, idemkey (no task id: the session is the
// task; the server's command without --), the Go SDK server.
func TestMCPGoSDKStdio(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	server, client := r.goSDK()
	steps, stderr := r.goClient(client, r.bin, "mcp", server)
	goOnce(t, r, "2026-07-28", steps, stderr)
}

// TestMCPGoSDKStatelessHTTP: over stateless Streamable HTTP: every POST carries the headers the Go
// SDK server requires of a 2026-07-28 request (without them it refuses
// server/discover, and the client falls back to 2025-11-25), the tool's
// x-mcp-header argument as Mcp-Param-Region, the key as Idempotency-Key;
// no session.
func TestMCPGoSDKStatelessHTTP(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	server, client := r.goSDK()
	url := r.goHTTPServer(server, "-http")
	steps, stderr := r.goClient(client, r.bin, "mcp", "--task", "t-go", "--url", url)
	ran := goOnce(t, r, "2026-07-28", steps, stderr)
	want := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "append",
		"Mcp-Param-Region": "eu-west", "Idempotency-Key": *ran.Key}
	if len(ran.Headers) != len(want) {
		t.Fatalf("the call's headers %v, want %v", ran.Headers, want)
	}
	for k, v := range want {
		if ran.Headers[k] != v {
			t.Fatalf("the call's headers %v, want %v", ran.Headers, want)
		}
	}
}

// TestMCPGoSDKStatelessHTTPUnlisted: a client that calls tools without listing them: idemkey lists them
// itself (the stateless server takes its tools/list without a revision
// in _meta), so the read-only tool passes unkeyed.
func TestMCPGoSDKStatelessHTTPUnlisted(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	server, client := r.goSDK()
	url := r.goHTTPServer(server, "-http")
	r.env = append(r.env, "GOSDK_NO_LIST=1")
	steps, stderr := r.goClient(client, r.bin, "mcp", "--task", "t-go", "--url", url)
	goOnce(t, r, "2026-07-28", steps, stderr)
}

// TestMCPGoSDKStatefulHTTP: a Go SDK server with sessions refuses 2026-07-28: the client's
// server/discover through idemkey is refused, it falls back to
// initialize at 2025-11-25, and that revision works as before: a session
// id, the GET stream (where the list change comes), the key in
// Idempotency-Key, and none of the 2026-07-28 headers on the call.
func TestMCPGoSDKStatefulHTTP(t *testing.T) {
	t.Parallel()
	r := newMCPRig(t)
	server, client := r.goSDK()
	url := r.goHTTPServer(server, "-http", "-stateful")
	steps, stderr := r.goClient(client, r.bin, "mcp", "--task", "t-go", "--url", url)
	ran := goOnce(t, r, "2025-11-25", steps, stderr)
	if ran.Headers["Mcp-Session-Id"] == "" || ran.Headers["Idempotency-Key"] != *ran.Key || ran.Headers["Mcp-Method"] != "" ||
		ran.Headers["Mcp-Protocol-Version"] != "2025-11-25" {
		t.Fatalf("the call's headers: %v", ran.Headers)
	}
}

// goHTTPServer starts the Go SDK server over HTTP and returns its URL.
func (r *mcpRig) goHTTPServer(server string, args ...string) string {
	t := r.t
	t.Helper()
	urlFile := r.path("gosdk-url")
	srv := exec.Command(server, args...)
	srv.Env = append(append([]string{}, r.env...), "URL_FILE="+urlFile)
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	url := ""
	for deadline := time.Now().Add(60 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(urlFile); err == nil {
			url = string(b)
		}
	}
	if url == "" {
		t.Fatal("the Go SDK server did not start")
	}
	return url
}
