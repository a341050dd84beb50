package probe_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
)

// The probe --mcp tests run idemkey (this test binary) against real MCP
// servers on the official TypeScript SDK: testdata/mcp/probe-server.mjs,
// whose write tools each keep or break one promise about retries, and
// server-everything over Streamable HTTP. Without node or the npm
// packages they skip, except under CI=true, where they fail.

type rig struct {
	t       *testing.T
	dir     string
	bin     string
	node    string
	repo    string
	effects string
	env     []string
}

func newRig(t *testing.T) *rig {
	t.Helper()
	node, repo := clitest.NodeMCP(t)
	r := newBinRig(t)
	r.node, r.repo = node, repo
	return r
}

// newBinRig is a directory with idemkey in it and a hermetic environment.
func newBinRig(t *testing.T) *rig {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "idemkey")
	exe, err := os.Executable()
	if err == nil {
		err = os.Symlink(exe, bin)
	}
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, dir: dir, bin: bin, effects: filepath.Join(dir, "effects.jsonl")}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "IDEMKEY_") && !strings.HasPrefix(kv, "EFFECTS_FILE=") && !strings.HasPrefix(kv, "PROBE_TOOLS=") &&
			!strings.HasPrefix(kv, "XDG_") && !strings.HasPrefix(kv, "HOME=") {
			r.env = append(r.env, kv)
		}
	}
	r.env = append(r.env, "EFFECTS_FILE="+r.effects, "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
		"XDG_STATE_HOME="+filepath.Join(dir, "state"), "NO_COLOR=1")
	return r
}

// server is probe-server.mjs's command line over stdio.
func (r *rig) server() []string {
	return []string{r.node, filepath.Join(r.repo, "testdata/mcp/probe-server.mjs")}
}

// run runs idemkey with args; it returns stdout, stderr and the exit
// code.
func (r *rig) run(args ...string) (string, string, int) {
	r.t.Helper()
	c := exec.Command(r.bin, args...)
	c.Env, c.Dir = r.env, r.dir
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		r.t.Fatal(err)
	}
	return out.String(), errb.String(), c.ProcessState.ExitCode()
}

type report struct {
	Server string `json:"server"`
	Tools  []struct {
		Tool  string `json:"tool"`
		Rules []struct {
			Rule     string `json:"rule"`
			Verdict  string `json:"verdict"`
			Evidence string `json:"evidence"`
			KeyIn    string `json:"key_in"`
		} `json:"rules"`
	} `json:"tools"`
}

// probe runs probe --mcp --json and reads its report.
func (r *rig) probe(wantCode int, args ...string) *report {
	r.t.Helper()
	out, errs, code := r.run(append([]string{"probe", "--mcp", "--yes", "--json"}, args...)...)
	if code != wantCode {
		r.t.Fatalf("probe exited %d, want %d\nstdout: %s\nstderr: %s", code, wantCode, out, errs)
	}
	var rep report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		r.t.Fatalf("the report is not JSON: %v\n%s", err, out)
	}
	return &rep
}

// verdict is the verdict and evidence of a tool's rule (keyIn "" for the
// rules without a key place, or the only one).
func (rep *report) verdict(t *testing.T, tool, rule, keyIn string) (string, string) {
	t.Helper()
	for _, tr := range rep.Tools {
		if tr.Tool != tool {
			continue
		}
		for _, r := range tr.Rules {
			if r.Rule == rule && (keyIn == "" || r.KeyIn == keyIn) {
				return r.Verdict, r.Evidence
			}
		}
	}
	t.Fatalf("no %s rule for %s in the report: %+v", rule, tool, rep)
	return "", ""
}

func (rep *report) want(t *testing.T, tool, rule, keyIn, verdict, evidence string) {
	t.Helper()
	v, ev := rep.verdict(t, tool, rule, keyIn)
	if v != verdict || !strings.Contains(ev, evidence) {
		t.Errorf("%s %s (%s): %s %q; want %s with %q", tool, rule, keyIn, v, ev, verdict, evidence)
	}
}

// effectsByTool: effects counts the effects the server made, by tool.
func (r *rig) effectsByTool() map[string]int {
	r.t.Helper()
	n := map[string]int{}
	f, err := os.Open(r.effects)
	if errors.Is(err, os.ErrNotExist) {
		return n
	}
	if err != nil {
		r.t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		var e struct{ Tool string }
		if err := json.Unmarshal(s.Bytes(), &e); err != nil {
			r.t.Fatal(err)
		}
		n[e.Tool]++
	}
	return n
}

func tools(names ...string) []string {
	var a []string
	for _, n := range names {
		a = append(a, "--tool", n)
	}
	return a
}

func cat(parts ...[]string) []string {
	var a []string
	for _, p := range parts {
		a = append(a, p...)
	}
	return a
}

const chargeArgs = `{"amount":100,"currency":"usd"}`

// TestProbeMCPRulesByAnswers: each rule passes on the tool built to keep its promise and fails on the
// one built to break it, judged by the answers' identity (no count).
func TestProbeMCPRulesByAnswers(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	rep := r.probe(1, cat(tools("charge_meta", "charge_nokey", "charge_lax", "charge_racy", "charge_session", "charge_hint", "charge_uuid", "peek"),
		[]string{"--args", chargeArgs, "--concurrency", "4", "--"}, r.server())...)
	if rep.Server != "idemkey-probe-server 1.0.0" {
		t.Errorf("server %q", rep.Server)
	}
	// charge_meta keeps every promise.
	rep.want(t, "charge_meta", "replay", "meta", "pass", "the first answer again: id")
	rep.want(t, "charge_meta", "lost-response", "meta", "pass", "the first answer again")
	rep.want(t, "charge_meta", "mismatch", "meta", "pass", `refused the changed arguments (changed "amount" from 100 to 101)`)
	rep.want(t, "charge_meta", "in-flight", "meta", "pass", "one effect: 4 concurrent calls")
	rep.want(t, "charge_meta", "no-key", "", "info", "two calls without a key got id")
	rep.want(t, "charge_meta", "description", "", "pass", "keep the same key when")
	// charge_nokey ignores every key.
	rep.want(t, "charge_nokey", "replay", "meta", "fail", "a second effect: id")
	rep.want(t, "charge_nokey", "lost-response", "meta", "fail", "a second effect")
	rep.want(t, "charge_nokey", "mismatch", "meta", "fail", "a second effect for the changed arguments")
	rep.want(t, "charge_nokey", "in-flight", "meta", "fail", "4 effects")
	rep.want(t, "charge_nokey", "description", "", "info", "no key parameter")
	// The others break one promise each.
	rep.want(t, "charge_lax", "replay", "meta", "pass", "the first answer again")
	rep.want(t, "charge_lax", "mismatch", "meta", "fail", "the change is silently dropped")
	rep.want(t, "charge_racy", "replay", "meta", "pass", "the first answer again")
	// Calls that all checked before the first inserted each make an
	// effect: at least two of the four.
	if v, ev := rep.verdict(t, "charge_racy", "in-flight", "meta"); v != "fail" || !regexp.MustCompile(`^[234] effects: 4 concurrent calls`).MatchString(ev) {
		t.Errorf("charge_racy in-flight: %s %q; want fail with 2 to 4 effects", v, ev)
	}
	rep.want(t, "charge_session", "replay", "meta", "pass", "the first answer again")
	rep.want(t, "charge_session", "lost-response", "meta", "fail", "a second effect")
	rep.want(t, "charge_hint", "no-key", "", "fail", "it says idempotentHint: true, yet two calls without a key")
	rep.want(t, "charge_uuid", "description", "", "fail", `"Generate a new random UUID for each request`)
	rep.want(t, "peek", "no-key", "", "fail", "it says readOnlyHint: true, yet each call answered a new id")
	// What the report says is what the server did.
	n := r.effectsByTool()
	if n["charge_meta"] != 4+2 { // replay, lost-response, mismatch, in-flight: one each; no-key: two
		t.Errorf("charge_meta made %d effects, want 6 (one per keyed rule, two without a key)", n["charge_meta"])
	}
	if n["charge_racy"] < 1+1+1+2 {
		t.Errorf("charge_racy made %d effects; its in-flight calls should have made at least 2", n["charge_racy"])
	}
}

// TestProbeMCPRulesByCount: the rules judged by a count: --count-tool with a pointer, and --count.
func TestProbeMCPRulesByCount(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	rep := r.probe(1, cat(tools("charge_arg", "charge_nokey", "peek", "charge_hint", "count"),
		[]string{"--args", chargeArgs, "--key-in", "arg:idempotency_key", "--concurrency", "3",
			"--count-tool", "count", "--count-pointer", "/count", "--"}, r.server())...)
	rep.want(t, "charge_arg", "replay", "arg:idempotency_key", "pass", "no second effect (the count stayed at 1)")
	rep.want(t, "charge_arg", "lost-response", "arg:idempotency_key", "pass", "no second effect")
	rep.want(t, "charge_arg", "mismatch", "arg:idempotency_key", "pass", "refused the changed arguments")
	rep.want(t, "charge_arg", "in-flight", "arg:idempotency_key", "pass", "one effect")
	rep.want(t, "charge_arg", "description", "", "pass", "parameter idempotency_key")
	rep.want(t, "charge_nokey", "replay", "arg:idempotency_key", "fail", `a second effect: the count went from`)
	rep.want(t, "charge_nokey", "replay", "arg:idempotency_key", "fail", `its inputSchema has no argument "idempotency_key"`)
	rep.want(t, "charge_nokey", "in-flight", "arg:idempotency_key", "fail", "3 effects")
	rep.want(t, "charge_nokey", "no-key", "", "info", "two calls without a key made 2 effects")
	rep.want(t, "peek", "no-key", "", "fail", "it says readOnlyHint: true, yet two calls without a key made 2 effects")
	rep.want(t, "charge_hint", "no-key", "", "fail", "idempotentHint: true, yet two calls without a key made 2 effects")
	// An honest read: no effect, so nothing to replay, and no-key is info.
	rep.want(t, "count", "replay", "arg:idempotency_key", "not-tested", "the count stayed at")
	rep.want(t, "count", "no-key", "", "info", "it says readOnlyHint: true; two calls without a key made 0 effects")
}

// TestProbeMCPOtherCounts: --count COMMAND, a pointer to an array, and a count blind to the tool.
func TestProbeMCPOtherCounts(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	count := "cat " + strconv.Quote(r.effects) + " 2>/dev/null | wc -l"
	rep := r.probe(1, cat(tools("charge_meta", "charge_nokey"), []string{"--args", chargeArgs, "--count", count, "--"}, r.server())...)
	rep.want(t, "charge_meta", "replay", "meta", "pass", "no second effect")
	rep.want(t, "charge_meta", "lost-response", "meta", "pass", "no second effect")
	rep.want(t, "charge_nokey", "replay", "meta", "fail", "a second effect: the count went from")
	rep = r.probe(0, cat(tools("charge_meta"), []string{"--args", chargeArgs, "--count-tool", "count",
		"--count-args", `{"tool":"charge_meta"}`, "--count-pointer", "/effects", "--"}, r.server())...)
	rep.want(t, "charge_meta", "in-flight", "meta", "pass", "one effect")

	// A count that does not see the tool's effects: not-tested, not pass.
	rep = r.probe(0, cat(tools("charge_meta"), []string{"--args", chargeArgs, "--count-tool", "count",
		"--count-args", `{"tool":"peek"}`, "--count-pointer", "/count", "--"}, r.server())...)
	rep.want(t, "charge_meta", "replay", "meta", "not-tested", "it does not count this tool's effects")
}

// TestProbeMCPHTTP: over Streamable HTTP: the key in the Idempotency-Key header, a new
// session for the lost response, and server-everything as a reference.
func TestProbeMCPHTTP(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	for _, mode := range []string{"--http", "--json"} {
		urlFile := filepath.Join(r.dir, "url"+mode)
		args := append(r.server(), "--http")
		if mode == "--json" {
			args = append(args, "--json")
		}
		srv := exec.Command(args[0], args[1:]...)
		srv.Env = append(r.env, "URL_FILE="+urlFile)
		srv.Stderr = os.Stderr
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
		url := waitFile(t, urlFile)
		rep := r.probe(1, cat(tools("charge_header", "charge_session"),
			[]string{"--url", url, "-H", "X-Test: 1", "--args", chargeArgs, "--key-in", "header", "--key-in", "meta"})...)
		rep.want(t, "charge_header", "replay", "header", "pass", "the first answer again")
		rep.want(t, "charge_header", "lost-response", "header", "pass", "the first answer again")
		rep.want(t, "charge_header", "mismatch", "header", "pass", "refused")
		rep.want(t, "charge_header", "in-flight", "header", "pass", "one effect")
		rep.want(t, "charge_header", "replay", "meta", "fail", "a second effect")
		rep.want(t, "charge_session", "replay", "meta", "pass", "the first answer again")
		rep.want(t, "charge_session", "lost-response", "meta", "fail", "a second effect")
	}

	// server-everything over Streamable HTTP: its echo tool answers the
	// same twice (judged by the whole result); tools without --args are
	// listed as not tested, never called.
	port := freePort(t)
	ev := exec.Command(r.node, "--import", loopbackOnly,
		filepath.Join(r.repo, "testdata/npm/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js"), "streamableHttp")
	ev.Env = append(r.env, "PORT="+port)
	if err := ev.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ev.Process.Kill(); _ = ev.Wait() })
	url := "http://127.0.0.1:" + port + "/mcp"
	waitListening(t, "127.0.0.1:"+port)
	rep := r.probe(1, "--url", url, "--tool", "echo", "--tool", "get-sum", "--args", `echo={"message":"probe"}`)
	rep.want(t, "echo", "replay", "meta", "pass", "judged by the whole result")
	rep.want(t, "echo", "lost-response", "meta", "pass", "the first answer again")
	rep.want(t, "get-sum", "replay", "", "not-tested", "no --args for this tool")
}

// loopbackOnly makes a Node server that listens on a bare port (as
// server-everything does, on every interface) listen on 127.0.0.1 only.
const loopbackOnly = `data:text/javascript,import net from "node:net";
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (port, ...rest) {
  if (typeof port === "number" || typeof port === "string") {
    return listen.call(this, { port: Number(port), host: "127.0.0.1" }, rest.find((a) => typeof a === "function"));
  }
  return listen.call(this, port, ...rest);
};`

func waitFile(t *testing.T, p string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(p); err == nil && len(b) > 0 {
			return string(b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the server did not write %s", p)
	return ""
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

func waitListening(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("nothing listens on %s", addr)
}

// TestProbeMCPReconcile: --reconcile is checked against a key with an effect and a key never
// sent: an honest reconciler passes, one that lies either way or hangs
// fails.
func TestProbeMCPReconcile(t *testing.T) {
	t.Parallel()
	// It reads the arguments on its standard input, as run --reconcile's.
	honest := `grep -q '"amount":100' && grep -q "\"key\":\"$IDEMPOTENCY_KEY\"" "$EFFECTS_FILE" && test "$IDEMKEY_TOOL" = charge_meta && test "$IDEMPOTENCY_ATTEMPT" = 1`
	for _, c := range []struct {
		name, command, verdict, evidence string
		code                             int
	}{
		{"honest", honest, "pass", "for a key with an effect it said happened (exit 0); for a key never sent, not happened (exit 1)", 0},
		{"always 0", "exit 0", "fail", "a reconciler that says happened for a key never sent would record lost writes as done", 1},
		{"always 1", "exit 1", "fail", "for a key with an effect it said not happened", 1},
		{"hangs", "sleep 30", "fail", "timed out after 500ms", 1},
		{"other arguments", strings.Replace(honest, "100", "999", 1), "fail", "for a key with an effect it said not happened", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			rep := r.probe(c.code, cat(tools("charge_meta"), []string{"--args", chargeArgs, "--concurrency", "2",
				"--reconcile", c.command, "--reconcile-timeout", timeout(c.name == "hangs", "500ms"), "--"}, r.server())...)
			rep.want(t, "charge_meta", "reconcile", "", c.verdict, c.evidence)
		})
	}
}

// TestProbeMCPNoEffectWithoutYes: nothing is called without --yes or with --dry-run: the server makes no
// effect.
func TestProbeMCPNoEffectWithoutYes(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	args := cat([]string{"probe", "--mcp", "--args", chargeArgs}, tools("charge_nokey"), []string{"--"}, r.server())
	out, errs, code := r.run(args...)
	if code != 2 || out != "" || !strings.Contains(errs, "--yes") {
		t.Errorf("without --yes: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if err := os.WriteFile(filepath.Join(r.dir, "charge.json"), []byte(`{"amount":5}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, code = r.run(append([]string{"probe", "--mcp", "--dry-run", "--args", chargeArgs, "--args", "charge_meta=@charge.json",
		"--reconcile", "exit 0", "--"}, r.server()...)...)
	for _, want := range []string{"charge_nokey: up to 13 calls with arguments " + chargeArgs, `charge_meta: up to 13 calls with arguments {"amount":5}`,
		"only initialize and tools/list were sent", "--reconcile runs twice per tool"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("--dry-run: exit %d, want %q\nstdout: %s\nstderr: %s", code, want, out, errs)
		}
	}
	if strings.Contains(out, "\ncount:") || strings.Contains(out, "\npeek:") {
		t.Errorf("--dry-run lists read-only tools as probed:\n%s", out)
	}
	// tools/list in pages of two: every write tool is found.
	r.env = append(r.env, "PAGE_SIZE=2")
	paged, errs, code := r.run(append([]string{"probe", "--mcp", "--dry-run", "--args", chargeArgs, "--args", "charge_meta=@charge.json",
		"--reconcile", "exit 0", "--"}, r.server()...)...)
	if code != 0 || paged != out {
		t.Errorf("--dry-run with tools/list in pages: exit %d\nstdout: %s\nwant: %s\nstderr: %s", code, paged, out, errs)
	}
	if n := strings.Count(out, ": up to 13 calls"); n != 9 {
		t.Errorf("--dry-run lists %d write tools, want 9:\n%s", n, out)
	}
	if n := r.effectsByTool(); len(n) != 0 {
		t.Errorf("effects without --yes or with --dry-run: %v", n)
	}
}

// TestProbeMCPUsage: usage errors exit 2 and call nothing.
func TestProbeMCPUsage(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--mcp", "--yes"}, "no server"},
		{cat([]string{"--mcp", "--yes", "--key-in", "header", "--"}, r.server()), "a stdio server has no HTTP headers"},
		{cat([]string{"--mcp", "--yes", "--key-in", "body", "--"}, r.server()), "invalid --key-in"},
		{cat([]string{"--mcp", "--yes", "--args", "[1]", "--"}, r.server()), "want a JSON object"},
		{cat([]string{"--mcp", "--yes", "-d", "{}", "--"}, r.server()), "--data is for an HTTP endpoint"},
		{cat([]string{"--mcp", "--yes", "--count-tool", "count", "--"}, r.server()), "--count-pointer"},
		{cat([]string{"--mcp", "--yes", "-k", "--"}, r.server()), "--insecure is for a --url server"},
		{cat([]string{"--mcp", "--yes", "--tool", "nosuch", "--args", chargeArgs, "--"}, r.server()), "--tool nosuch: the server has no such tool"},
		{[]string{"--mcp", "--yes", "--url", "http://127.0.0.1:1/mcp", "-H", "Idempotency-Key: x"}, "-H sets Idempotency-Key"},
		{[]string{"http://127.0.0.1:1/", "--yes", "--tool", "charge"}, "--tool is for --mcp"},
		// A count that fails stops the probe: exit 2.
		{cat([]string{"--mcp", "--yes", "--tool", "charge_meta", "--args", chargeArgs, "--count", "exit 3", "--"}, r.server()),
			"probe stopped at charge_meta's replay rule: --count failed (exit status 3)\nhint: no tools/call had been sent"},
		// A server that cannot be probed: exit 2, nothing called.
		{[]string{"--mcp", "--yes", "--", filepath.Join(r.dir, "no-such-server")}, "the server could not be started"},
		{[]string{"--mcp", "--yes", "--", "true"}, "the server could not be probed: no answer to initialize"},
		{[]string{"--mcp", "--yes", "--max-time", "0.5", "--", "sleep", "30"}, "the server could not be probed: no answer to initialize"},
		{[]string{"--mcp", "--yes", "--url", "http://127.0.0.1:" + freePort(t) + "/mcp?token=secret"}, "the server could not be probed"},
	} {
		out, errs, code := r.run(append([]string{"probe"}, c.args...)...)
		if code != 2 || out != "" || !strings.Contains(errs, c.want) || strings.Contains(errs, "secret") {
			t.Errorf("probe %q: exit %d, stdout %q, stderr %q; want 2 and %q", c.args, code, out, errs, c.want)
		}
	}
	if n := r.effectsByTool(); len(n) != 0 {
		t.Errorf("effects after usage errors: %v", n)
	}
}
