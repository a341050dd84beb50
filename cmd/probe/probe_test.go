package probe_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/derive/probe"
)

type probeReportJSON struct {
	URL   string         `json:"url"`
	Rules []probe.Result `json:"rules"`
}

// probeWant is each rule's verdict and a pattern its evidence matches.
type probeWant map[string][2]string

// probeOwner probes url with a body of {"amount":100} and args, and
// checks the exit code and every rule's verdict and evidence.
func probeOwner(t *testing.T, url string, code int, want probeWant, args ...string) probeReportJSON {
	t.Helper()
	args = append([]string{"probe", url, "--yes", "--json", "-d", `{"amount":100}`}, args...)
	out, errs, got := clitest.Run(t, "", args...)
	if got != code {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", got, code, out, errs)
	}
	var rep probeReportJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("stdout is not the JSON report: %v\n%s", err, out)
	}
	if rep.URL != url {
		t.Errorf("url %q, want %q", rep.URL, url)
	}
	if len(rep.Rules) != len(probe.Rules) {
		t.Fatalf("%d rules, want %d: %s", len(rep.Rules), len(probe.Rules), out)
	}
	for i, r := range rep.Rules {
		if r.Rule != probe.Rules[i] {
			t.Errorf("rule %d is %q, want %q", i, r.Rule, probe.Rules[i])
			continue
		}
		w, ok := want[r.Rule]
		if !ok {
			t.Errorf("no expectation for %s", r.Rule)
			continue
		}
		if r.Verdict != w[0] || !regexp.MustCompile(w[1]).MatchString(r.Evidence) {
			t.Errorf("%s: %s %q\nwant %s matching %s", r.Rule, r.Verdict, r.Evidence, w[0], w[1])
		}
	}
	return rep
}

// Evidence patterns shared by several owners.
const (
	evFirstAgain    = `^the first response again: 201 Created with id "ch_\d+"; Idempotent-Replayed: "true"$`
	evMismatch422   = `^422 Unprocessable Entity for the changed body \(changed "amount" from 100 to 101\)$`
	evOneEffect     = `^one effect: 5 concurrent requests with one key got 201 Created ×1, 409 Conflict ×4$`
	evRefused400    = `^refused without a key: 400 Bad Request, as the draft asks$`
	evProcessed     = `^processed without a key: 201 Created; the key is optional here$`
	evAllKeys       = `^a key of 255 characters accepted \(Stripe's limit; longer ones not tried\); UUID, hex SHA-256 and base64url keys accepted$`
	evNoAfter       = `^no wait was asked for \(--after DURATION`
	evSecondEffect  = `^a second effect: id "ch_(\d+)", then id "ch_(\d+)"$`
	evRetainedAfter = `^after 1.5s: the first response again: 201 Created with id "ch_\d+"; Idempotent-Replayed: "true"$`
)

// draftWant is what an owner that does all the draft asks gets, with
// --after 1.5s.
var draftWant = probeWant{
	probe.Replay:    {probe.Pass, evFirstAgain},
	probe.Mismatch:  {probe.Pass, evMismatch422},
	probe.InFlight:  {probe.Pass, evOneEffect},
	probe.Required:  {probe.Pass, evRefused400},
	probe.KeyLimits: {probe.Pass, evAllKeys},
	probe.Retention: {probe.Pass, evRetainedAfter},
}

// with returns w with some rules' expectations replaced: rule, verdict,
// evidence, rule, verdict, evidence…
func (w probeWant) with(rve ...string) probeWant {
	out := probeWant{}
	for r, v := range w {
		out[r] = v
	}
	for i := 0; i+2 < len(rve); i += 3 {
		out[rve[i]] = [2]string{rve[i+1], rve[i+2]}
	}
	return out
}

// TestProbeOwnOwners probes owners of the project's own, one per way of
// honouring the key or not, and checks every rule's verdict and what it
// was judged from.
func TestProbeOwnOwners(t *testing.T) {
	t.Run("dedupes", func(t *testing.T) {
		t.Parallel()
		o := &ownOwner{}
		probeOwner(t, o.start(t), 0, draftWant, "--after", "1500ms")
	})
	t.Run("ignores the key", func(t *testing.T) {
		t.Parallel()
		o := &ownOwner{ignoreKey: true, optional: true}
		probeOwner(t, o.start(t), 1, probeWant{
			probe.Replay:    {probe.Fail, evSecondEffect},
			probe.Mismatch:  {probe.Fail, `^a second effect for the changed body \(changed "amount" from 100 to 101\): id "ch_\d+", then id "ch_\d+"$`},
			probe.InFlight:  {probe.Fail, `^5 effects: 5 concurrent requests with one key got 201 Created ×5 \(id "ch_\d+", id "ch_\d+", id "ch_\d+", id "ch_\d+", id "ch_\d+"\)$`},
			probe.Required:  {probe.Info, evProcessed},
			probe.KeyLimits: {probe.Pass, evAllKeys},
			probe.Retention: {probe.Fail, `^after 1.5s: a second effect: id "ch_\d+", then id "ch_\d+"$`},
		}, "--after", "1.5s")
	})
	t.Run("replays but never answers 422", func(t *testing.T) {
		t.Parallel()
		o := &ownOwner{noMismatch: true, optional: true}
		probeOwner(t, o.start(t), 1, probeWant{
			probe.Replay: {probe.Pass, evFirstAgain},
			probe.Mismatch: {probe.Fail, `^answered the changed body \(changed "amount" from 100 to 101\) with the first response ` +
				`\(201 Created with id "ch_\d+"\): the change is silently dropped, where the draft asks for 422$`},
			probe.InFlight:  {probe.Pass, evOneEffect},
			probe.Required:  {probe.Fail, evProcessed}, // --require-key
			probe.KeyLimits: {probe.Pass, evAllKeys},
			probe.Retention: {probe.NotTested, evNoAfter},
		}, "--require-key")
	})
	t.Run("double-charges under concurrency", func(t *testing.T) {
		t.Parallel()
		// It also takes UUID keys only: the rules after key-limits send
		// UUIDs.
		o := &ownOwner{racy: true, keyRE: regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)}
		probeOwner(t, o.start(t), 1, probeWant{
			probe.Replay:   {probe.Pass, evFirstAgain},
			probe.Mismatch: {probe.Pass, evMismatch422},
			probe.InFlight: {probe.Fail, `^5 effects: 5 concurrent requests with one key got 201 Created ×5 \(id "ch_\d+", id`},
			probe.Required: {probe.Pass, evRefused400},
			probe.KeyLimits: {probe.Info, `^no key of letters, digits and '-' accepted, of 1 to 255 characters \(400 Bad Request\); ` +
				`UUID accepted, hex SHA-256 \(400 Bad Request\) and base64url SHA-256 \(400 Bad Request\) refused: send keys with idemkey --format uuid$`},
			probe.Retention: {probe.NotTested, evNoAfter},
		})
	})
	t.Run("forgets keys after a second", func(t *testing.T) {
		t.Parallel()
		o := &ownOwner{forget: time.Second, maxKey: 100}
		probeOwner(t, o.start(t), 1, draftWant.with(
			probe.KeyLimits, probe.Pass, `^the longest key of letters, digits and '-' accepted has 100 characters \(101: 400 Bad Request\); `+
				`UUID, hex SHA-256 and base64url keys accepted$`,
			probe.Retention, probe.Fail, `^after 1.5s: a second effect: id "ch_\d+", then id "ch_\d+"$`,
		), "--after", "1.5s")
	})
}

// TestProbeCount judges effects by --count: the same verdicts, from the
// count, and an owner whose constant answer hides a second charge from
// the responses is caught.
func TestProbeCount(t *testing.T) {
	t.Run("dedupes", func(t *testing.T) {
		t.Parallel()
		o := &ownOwner{}
		probeOwner(t, o.start(t), 0, probeWant{
			probe.Replay:    {probe.Pass, `^no second effect \(the count stayed at \d+\); answered 201 Created with id "ch_\d+"; Idempotent-Replayed: "true"$`},
			probe.Mismatch:  {probe.Pass, `^422 Unprocessable Entity for the changed body \(changed "amount" from 100 to 101\) \(the count stayed at \d+\)$`},
			probe.InFlight:  {probe.Pass, `^one effect: 5 concurrent requests with one key got 201 Created ×1, 409 Conflict ×4; the count went from (\d+) to \d+$`},
			probe.Required:  {probe.Pass, `^refused without a key: 400 Bad Request, as the draft asks \(the count stayed at \d+\)$`},
			probe.KeyLimits: {probe.Pass, evAllKeys},
			probe.Retention: {probe.NotTested, evNoAfter},
		}, "--count", "cat "+o.count)
	})
	t.Run("ignores the key", func(t *testing.T) {
		t.Parallel()
		o := &ownOwner{ignoreKey: true, optional: true}
		probeOwner(t, o.start(t), 1, probeWant{
			probe.Replay:    {probe.Fail, `^a second effect: the count went from (\d+) to \d+; answered 201 Created with id "ch_\d+"$`},
			probe.Mismatch:  {probe.Fail, `^a second effect for the changed body \(changed "amount" from 100 to 101\): the count went from \d+ to \d+; answered 201 Created$`},
			probe.InFlight:  {probe.Fail, `^5 effects: 5 concurrent requests with one key got 201 Created ×5; the count went from \d+ to \d+ \(id`},
			probe.Required:  {probe.Info, `^processed without a key: 201 Created \(the count went from \d+ to \d+\); the key is optional here$`},
			probe.KeyLimits: {probe.Pass, evAllKeys},
			probe.Retention: {probe.NotTested, evNoAfter},
		}, "--count", "cat "+o.count)
	})
}

// startNodeOwner starts one of testdata/owners/*.js under node, with the
// packages of testdata/npm/owners, and returns its URL. Without node or
// the packages (scripts/services.sh installs them) the test is skipped,
// except under CI=true, where it fails.
func startNodeOwner(t *testing.T, script string, env ...string) string {
	t.Helper()
	modules, _ := filepath.Abs("../../testdata/npm/owners/node_modules")
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(modules, "express-idempotency", "package.json"))
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the Node owners need node and testdata/npm/owners installed (bash scripts/services.sh): %v", err)
		}
		t.Skipf("no node or testdata/npm/owners/node_modules (bash scripts/services.sh installs them): %v", err)
	}
	c := exec.Command(node, filepath.Join("..", "..", "testdata", "owners", script))
	// NODE_ENV=test: express logs no stack trace for the errors it answers.
	c.Env = append(os.Environ(), append([]string{"NODE_PATH=" + modules, "NODE_ENV=test"}, env...)...)
	c.Stderr = os.Stderr
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Process.Kill()
		c.Wait()
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		port, ok := strings.CutPrefix(strings.TrimSpace(s), "listening ")
		if !ok {
			t.Fatalf("%s said %q, not the port it listens on", script, s)
		}
		return "http://127.0.0.1:" + port + "/charges"
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not say its port within 30s", script)
	}
	return ""
}

// TestProbeExpressIdempotency probes express-idempotency 1.0.6 as its
// README sets it up (testdata/owners/express-idempotency.js). What it
// does, read in testdata/npm/owners/node_modules/express-idempotency/dist:
//
//   - services/idempotencyService.js, provideMiddlewareFunction: a known
//     key whose resource has a response replays its status, body and
//     content-type (buildIdempotencyResponse keeps only that header) and
//     adds no replay header: replay passes, without one.
//   - the intent check (defaults/defaultIntentValidator.js) deep-compares
//     url, method, query and body; a changed body gets
//     res.status(HttpStatus.EXPECTATION_FAILED) and next(error), which
//     express's final handler answers with that status: 417, not 422,
//     and the handler never runs, so no second effect: mismatch is info.
//   - a known key without a response yet (the first request is still at
//     work) gets res.status(HttpStatus.CONFLICT) and next(error): 409.
//     findByIdempotencyKey and create run without I/O between them
//     (defaults/inMemoryDataAdapter.js), so concurrent requests cannot
//     both miss: in-flight passes.
//   - no key: next() and nothing else, so the charge is made: required is
//     info.
//   - no limit on the key (extractIdempotencyKeyFromReq takes the header
//     as it is): key-limits passes; the in-memory adapter keeps keys
//     for the process's life: retention passes.
func TestProbeExpressIdempotency(t *testing.T) {
	t.Parallel()
	url := startNodeOwner(t, "express-idempotency.js")
	probeOwner(t, url, 0, probeWant{
		probe.Replay:    {probe.Pass, `^the first response again: 201 Created with id "ch_\d+"$`},
		probe.Mismatch:  {probe.Info, `^refused the changed body \(changed "amount" from 100 to 101\) with 417 Expectation Failed, not the draft's 422; no second effect$`},
		probe.InFlight:  {probe.Pass, evOneEffect},
		probe.Required:  {probe.Info, evProcessed},
		probe.KeyLimits: {probe.Pass, evAllKeys},
		probe.Retention: {probe.Pass, `^after 1.5s: the first response again: 201 Created with id "ch_\d+"$`},
	}, "--after", "1.5s")
}

// TestProbeNodeIdempotency probes @node-idempotency/core 1.0.11 behind
// the express integration of testdata/owners/node-idempotency.js (the
// nestjs interceptor's, see there). What the core does, read in
// testdata/npm/owners/node_modules/@node-idempotency/core/dist:
//
//   - idempotency.js, onRequest: a completed key whose fingerprint (a
//     blake2s256 of JSON.stringify(body)) matches returns the saved
//     response, replayed with Idempotent-Replayed: true: replay passes.
//   - a fingerprint that differs throws IDEMPOTENCY_FINGERPRINT_MISSMATCH:
//     422, mismatch passes.
//   - the storage's setIfNotExists marks a key IN_PROGRESS at once (the
//     memory adapter checks and sets without awaiting between); another
//     request meanwhile throws REQUEST_IN_PROGRESS (inProgressStrategy.wait
//     is false by default): 409, in-flight passes.
//   - isEnabled: no key is processed unless enforceIdempotency (false by
//     default), which throws, with the code IDEMPOTENCY_KEY_LEN_EXEEDED
//     (sic): 400 either way. Default: required is info; with ENFORCE=1 it
//     passes.
//   - keyMaxLength is 256 (constants.js): a 255-character key is accepted;
//     cacheTTLMS is a day: retention passes.
func TestProbeNodeIdempotency(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		t.Parallel()
		url := startNodeOwner(t, "node-idempotency.js")
		probeOwner(t, url, 0, draftWant.with(probe.Required, probe.Info, evProcessed), "--after", "1.5s")
	})
	t.Run("enforced, counted", func(t *testing.T) {
		t.Parallel()
		count := filepath.Join(t.TempDir(), "count")
		if err := os.WriteFile(count, []byte("0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		url := startNodeOwner(t, "node-idempotency.js", "ENFORCE=1", "COUNT_FILE="+count)
		probeOwner(t, url, 0, probeWant{
			probe.Replay:    {probe.Pass, `^no second effect \(the count stayed at \d+\); answered 201 Created with id "ch_\d+"; Idempotent-Replayed: "true"$`},
			probe.Mismatch:  {probe.Pass, `^422 Unprocessable Entity for the changed body \(changed "amount" from 100 to 101\) \(the count stayed at \d+\)$`},
			probe.InFlight:  {probe.Pass, `^one effect: 5 concurrent requests with one key got 201 Created ×1, 409 Conflict ×4; the count went from \d+ to \d+$`},
			probe.Required:  {probe.Pass, `^refused without a key: 400 Bad Request, as the draft asks \(the count stayed at \d+\)$`},
			probe.KeyLimits: {probe.Pass, evAllKeys},
			probe.Retention: {probe.NotTested, evNoAfter},
		}, "--count", "cat "+count, "--require-key")
	})
}

// TestProbeSendsOnlyWithYes: without --yes, and with --dry-run, the owner
// gets no request; with --yes it gets the probe's 14 (3 key formats, a
// key of 255 characters, 2 for replay, 2 for mismatch, 5 at once, one
// without a key).
func TestProbeSendsOnlyWithYes(t *testing.T) {
	o := &ownOwner{work: time.Millisecond}
	url := o.start(t)
	for _, args := range [][]string{{}, {"--dry-run"}} {
		out, errs, code := clitest.Run(t, "", append([]string{"probe", url, "-d", `{"amount":1}`}, args...)...)
		want := 2
		if len(args) > 0 {
			want = 0
		}
		if code != want || o.sent() != 0 {
			t.Fatalf("probe %v: exit %d (want %d), %d requests sent\n%s%s", args, code, want, o.sent(), out, errs)
		}
	}
	if _, errs, code := clitest.Run(t, "", "probe", url, "-d", `{"amount":1}`, "--yes"); code != 0 || o.sent() != 14 {
		t.Fatalf("probe --yes: exit %d, %d requests, want 0 and 14\n%s", code, o.sent(), errs)
	}
}

// TestProbeStopsWithoutAResponse: a refused connection, a --count that
// fails or prints no number: exit 2, one line on stderr, nothing on
// standard output.
func TestProbeStopsWithoutAResponse(t *testing.T) {
	o := &ownOwner{work: time.Millisecond}
	url := o.start(t)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for _, c := range []struct {
		args []string
		err  string
	}{
		{[]string{closed.URL + "/charges"}, `^idemkey: error: probe stopped at the key-limits rule: failed to connect to 127\.0\.0\.1:\d+: connection refused\nhint: it was the first request: nothing had been sent\n$`},
		{[]string{url, "--count", "echo broken >&2; exit 3"}, `^idemkey: error: probe stopped at the replay rule: --count failed \(exit status 3\): broken\nhint: --count COMMAND must exit 0 and print one whole number`},
		{[]string{url, "--count", "echo many"}, `^idemkey: error: probe stopped at the replay rule: --count printed many, not a whole number of effects\n`},
	} {
		out, errs, code := clitest.Run(t, "", append([]string{"probe", "--yes", "-d", `{"amount":1}`}, c.args...)...)
		if code != 2 || out != "" || !regexp.MustCompile(c.err).MatchString(errs) {
			t.Errorf("probe %v: exit %d, stdout %q, stderr %q\nwant exit 2, no stdout, stderr matching %s", c.args, code, out, errs, c.err)
		}
	}
}

// TestProbeCountSeesWhatBodiesHide: an owner that ignores the key and
// answers every charge {"ok":true} looks like a replayer from the
// responses alone (and the evidence says that it was judged by the body
// alone); --count sees the second charge.
func TestProbeCountSeesWhatBodiesHide(t *testing.T) {
	o := &ownOwner{ignoreKey: true, optional: true, plain: true, work: time.Millisecond}
	url := o.start(t)
	probeOwner(t, url, 1, probeWant{
		probe.Replay:    {probe.Pass, `^the first response again: 201 Created with a body of 11 bytes \(judged by the body alone: it has no id and no Location\)$`},
		probe.Mismatch:  {probe.Fail, `^answered the changed body .* with the first response \(201 Created with a body of 11 bytes\): the change is silently dropped`},
		probe.InFlight:  {probe.Pass, `^one effect: 5 concurrent requests with one key got 201 Created ×5$`},
		probe.Required:  {probe.Info, evProcessed},
		probe.KeyLimits: {probe.Pass, evAllKeys},
		probe.Retention: {probe.NotTested, evNoAfter},
	})
	probeOwner(t, url, 1, probeWant{
		probe.Replay:    {probe.Fail, `^a second effect: the count went from (\d+) to \d+; answered 201 Created with a body of 11 bytes$`},
		probe.Mismatch:  {probe.Fail, `^a second effect for the changed body`},
		probe.InFlight:  {probe.Fail, `^5 effects: 5 concurrent requests with one key got 201 Created ×5; the count went from \d+ to \d+$`},
		probe.Required:  {probe.Info, `^processed without a key: 201 Created \(the count went from \d+ to \d+\)`},
		probe.KeyLimits: {probe.Pass, evAllKeys},
		probe.Retention: {probe.NotTested, evNoAfter},
	}, "--count", "cat "+o.count)
}

// TestProbeOtherAnswers: an owner that refuses every request (401) is
// not tested on the rules that need an accepted request, and fails
// key-limits; one that answers a key in flight with 429 is info there.
func TestProbeOtherAnswers(t *testing.T) {
	t.Run("refuses everything", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusUnauthorized)
		}))
		t.Cleanup(srv.Close)
		noKey := `^no request with a key was accepted \(see key-limits\)$`
		probeOwner(t, srv.URL, 1, probeWant{
			probe.Replay:   {probe.NotTested, noKey},
			probe.Mismatch: {probe.NotTested, noKey},
			probe.InFlight: {probe.NotTested, noKey},
			probe.Required: {probe.NotTested, `^refused without a key \(401 Unauthorized\), but no request with a key was accepted \(see key-limits\)$`},
			probe.KeyLimits: {probe.Fail, `^no key of letters, digits and '-' accepted, of 1 to 255 characters \(401 Unauthorized\); ` +
				`none of idemkey's key formats accepted: UUID \(401 Unauthorized\), hex SHA-256 \(401 Unauthorized\), base64url SHA-256 \(401 Unauthorized\) refused$`},
			probe.Retention: {probe.NotTested, evNoAfter},
		})
	})
	t.Run("429 for a key in flight", func(t *testing.T) {
		t.Parallel()
		o := &ownOwner{conflict: http.StatusTooManyRequests}
		probeOwner(t, o.start(t), 0, draftWant.with(
			probe.InFlight, probe.Info, `^one effect, but 4 of the others got 429 Too Many Requests ×4, not the draft's 409 or the first response: `+
				`5 concurrent requests with one key got 201 Created ×1, 429 Too Many Requests ×4$`,
			probe.Retention, probe.NotTested, evNoAfter))
	})
}

// TestProbeTable: the table on standard output, a server's text in it
// escaped (an id that would clear the screen).
func TestProbeTable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"\u001b[2Jch_1"}`)
	}))
	t.Cleanup(srv.Close)
	out, errs, code := clitest.Run(t, "", "probe", srv.URL, "--yes", "-d", `{"amount":1}`)
	if code != 1 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	want := []string{
		`^RULE        VERDICT     EVIDENCE$`,
		`^replay      pass        the first response again: 201 Created with id "\\x1b\[2Jch_1"$`,
		`^mismatch    fail        answered the changed body \(changed "amount" from 1 to 2\) with the first response`,
		`^in-flight   pass        one effect: 5 concurrent requests with one key got 201 Created ×5$`,
		`^required    info        processed without a key: 201 Created; the key is optional here$`,
		`^key-limits  pass        `,
		`^retention   not-tested  no wait was asked for`,
	}
	if len(lines) != len(want) || strings.ContainsRune(out, 0x1b) {
		t.Fatalf("table:\n%s", out)
	}
	for i, w := range want {
		if !regexp.MustCompile(w).MatchString(lines[i]) {
			t.Errorf("line %d %q does not match %s", i+1, lines[i], w)
		}
	}
}
