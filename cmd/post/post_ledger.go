package post

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/ledgeropts"
	"github.com/idemkey/idemkey/cmd/internal/settings"
	"github.com/idemkey/idemkey/cmd/internal/step"
	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/idemkey/idemkey/derive/ledger/stores"
	"github.com/idemkey/idemkey/derive/post"
	"github.com/spf13/pflag"
)

// postLedger is post --ledger: the final response of a request is kept in
// the ledger under the request's key and replayed by later invocations
// without the network.
type postLedger struct {
	on     bool          // a ledger records the request (--ledger, IDEMKEY_LEDGER or the config, and no --no-ledger)
	spec   string        // which ledger
	lease  time.Duration // --lease: of the running request on shared stores
	retain time.Duration // --retain: older finished records are not replayed
	wait   time.Duration // --wait: for a request in flight elsewhere
	args   []byte        // the canonical arguments as they enter the key
	task   string        // the call's task and tool, as the key has them
	tool   string

	fl    *pflag.FlagSet // for --reconcile, read per tool at the claim
	store ledger.Store
	hold  *ledger.Holding // the claimed attempt, until it is recorded
}

// addPostLedgerFlag registers --ledger and the flags that go with it.
func addPostLedgerFlag(fl *pflag.FlagSet) *postLedger {
	fl.String("ledger", "", "keep the final response in this ledger (a SQLite file PATH, or a postgres:// or redis:// URL; IDEMKEY_LEDGER) and replay it later without the network")
	fl.Bool("no-ledger", false, "no ledger, even with IDEMKEY_LEDGER or a ledger in the config file")
	ledgeropts.AddHoldFlags(fl,
		ledgeropts.Wait.Default("0").Help("with a ledger, when the request with this key is in flight elsewhere: wait up to DURATION for it to end, then replay or send (default: exit 75 at once)"),
		ledgeropts.Lease.Help("with a ledger on a shared store (postgres://, redis://): lease of the request in flight, renewed every third of it"),
		ledgeropts.Retain.Help("with a ledger: a saved response older than this is not replayed, as run's records (0: kept for ever)"))
	fl.String("recover", "retry", "with a ledger, a request whose outcome is unknown (it may have reached the server): retry (send it again with the same key, for the server to dedupe) or fail (exit 76 and say how to settle it); per tool: tools.NAME.recover")
	settings.ReadPerTool(fl, "recover")
	step.AddReconcileFlags(fl, "a request")
	return &postLedger{}
}

// load reads --ledger (flag, IDEMKEY_LEDGER or the config file, as run
// reads it; --no-ledger: none) and --wait, --lease and --retain (flag,
// IDEMKEY_WAIT, IDEMKEY_LEASE, IDEMKEY_RETAIN or the config file, as
// run's: one retention for run, post and ledger gc). Without a ledger they
// mean nothing: given on the command line they are a usage error, and
// from the environment (shared with run) they are not read.
func (l *postLedger) load(v *settings.Settings, fl *pflag.FlagSet) error {
	if cli.Changed(fl, "ledger") && cli.Changed(fl, "no-ledger") {
		return &cli.UsageError{Err: errors.New("--ledger and --no-ledger contradict each other")}
	}
	l.spec, l.fl = v.GetString("ledger"), fl
	l.on = l.spec != "" && !v.GetBool("no-ledger")
	if !l.on {
		for _, name := range []string{"wait", "lease", "retain", "recover", "reconcile", "reconcile-timeout"} {
			if cli.Changed(fl, name) {
				return &cli.UsageError{Err: fmt.Errorf("--%s applies only with a ledger", name),
					HintText: "--wait, --lease, --retain, --recover and --reconcile are about a request the ledger records: add --ledger PATH|URL (or set IDEMKEY_LEDGER)"}
			}
		}
		return nil
	}
	if isRequestURL(l.spec) {
		return requestURLAsLedger(v.Source("ledger"), l.spec)
	}
	hold, err := ledgeropts.HoldSettings(v, ledgeropts.Wait, ledgeropts.Lease, ledgeropts.Retain)
	l.wait, l.lease, l.retain = hold.Wait, hold.Lease, hold.Retain
	return err
}

// ledgerFlagValue refuses a --ledger value that was meant as something
// else, as a bare --ledger (which post once had) takes the next word: a
// flag, or the request's URL when no other is left.
func ledgerFlagValue(fl *pflag.FlagSet, nargs int) error {
	if !cli.Changed(fl, "ledger") {
		return nil
	}
	v, _ := fl.GetString("ledger")
	switch {
	case strings.HasPrefix(v, "-"):
		return &cli.UsageError{Err: fmt.Errorf("--ledger %q: want a ledger's PATH or URL, not a flag", v),
			HintText: "--ledger takes a value, as run's does: --ledger PATH|URL; with IDEMKEY_LEDGER set, post records without --ledger"}
	case nargs == 0 && isRequestURL(v):
		return requestURLAsLedger("--ledger", v)
	}
	return nil
}

// isRequestURL reports whether a ledger spec is an http:// or https://
// URL: a request's, not a ledger's.
func isRequestURL(spec string) bool {
	scheme, ok := stores.URLScheme(spec)
	return ok && (strings.EqualFold(scheme, "http") || strings.EqualFold(scheme, "https"))
}

// requestURLAsLedger refuses a request URL given where a ledger belongs.
func requestURLAsLedger(source, spec string) error {
	return &cli.UsageError{Err: fmt.Errorf("%s %q is a request URL, not a ledger", source, spec),
		HintText: "--ledger takes a value: --ledger PATH|URL https://api.example.com/…"}
}

// postSaved is what the ledger keeps of a response besides its body.
type postSaved struct {
	Proto  string      `json:"proto"`
	Status string      `json:"status"`
	Code   int         `json:"code"`
	Header http.Header `json:"header"`
	Head   []byte      `json:"head,omitempty"` // the final response head as received (records without Hops)
	// Hops are the requests of the final attempt and the response heads
	// each received (-L: the redirects, then the final one), so that -i,
	// -D and -w write a replay as they wrote the response.
	Hops []savedHop `json:"hops,omitempty"`
}

// savedHop is one request of a redirect chain: its method, its URL (a
// password in it redacted), the response heads it received (1xx
// included) and its status.
type savedHop struct {
	Method string   `json:"method"`
	URL    string   `json:"url"`
	Heads  [][]byte `json:"heads"`
	Status int      `json:"status"`
}

// saveHops is what a ledger keeps of an attempt's hops.
func saveHops(hops []post.Hop) []savedHop {
	s := make([]savedHop, len(hops))
	for i, h := range hops {
		s[i] = savedHop{Method: h.Method, URL: h.URL.Redacted(), Heads: h.Heads, Status: h.Status}
	}
	return s
}

// replayHops returns the hops of a saved response; a record written
// before hops were saved has the final head only.
func (s *postSaved) replayHops(req *http.Request) []post.Hop {
	if len(s.Hops) == 0 {
		return []post.Hop{{Method: req.Method, URL: req.URL, Heads: [][]byte{s.Head}, Status: s.Code}}
	}
	hops := make([]post.Hop, len(s.Hops))
	for i, h := range s.Hops {
		u, err := url.Parse(h.URL)
		if err != nil {
			u = req.URL
		}
		hops[i] = post.Hop{Method: h.Method, URL: u, Heads: h.Heads, Status: h.Status}
	}
	return hops
}

// savedStatus reports whether a final response is saved: 2xx, and 4xx
// other than 408, 409, 425 and 429 (which ask for a retry). 5xx is not
// saved: the next invocation tries again with the same key.
func savedStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests:
		return false
	}
	return code >= 200 && code < 300 || code >= 400 && code < 500
}

// ledgerExchange is exchange with post --ledger: the request is looked up
// in the ledger before it is sent; a saved response is replayed without
// the network (an exchange made from the record), a request in flight
// elsewhere is busy (75), and otherwise the key is claimed, the request
// sent, and its final response recorded. A running record whose holder
// died is taken over with the same key: post always forwards the key, so
// its recovery policy is retry. Without --ledger, it is exchange.
func (o *Options) ledgerExchange(client *http.Client, req *http.Request, body []byte, key string) (*post.Result, error) {
	pl := o.ledger
	if pl == nil || !pl.on {
		return o.exchange(client, req, body), nil
	}
	ex, err := o.ledgerClaim(key, req)
	if ex != nil || err != nil {
		return ex, err
	}
	defer pl.store.Close()
	stopSignals := o.ledgerSignals(key)
	o.leaseLost = pl.hold.Lost() // no retry is sent once the key is another's
	ex = o.exchange(client, req, body)
	stopSignals()
	o.ledgerRecord(ex, key)
	return ex, nil
}

// ledgerSignals: SIGINT, SIGTERM or SIGHUP while the claimed request is
// in flight records the attempt as unknown (the request may have reached
// the server) and then ends idemkey by that signal, as it would have
// without a ledger. The next invocation then retries at once with the
// same key, instead of finding the record running and exiting 75 until
// its lease ran out. A signal ignored when idemkey started (a background
// job's SIGINT) stays ignored.
func (o *Options) ledgerSignals(key string) (stop func()) {
	var sigs []os.Signal
	for _, s := range []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		if !signal.Ignored(s) {
			sigs = append(sigs, s)
		}
	}
	if len(sigs) == 0 {
		return func() {}
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
		case sig := <-ch:
			o.ledgerInterrupted(key, sig)
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}

// ledgerInterrupted records the claimed attempt as unknown, if it is not
// recorded yet, and ends the process by sig.
func (o *Options) ledgerInterrupted(key string, sig os.Signal) {
	pl := o.ledger
	n := 0
	if s, ok := sig.(syscall.Signal); ok {
		n = int(s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	c := pl.hold.Complete(ctx, ledger.Outcome{State: ledger.Unknown, ExitCode: 128 + n,
		Reason: fmt.Sprintf("interrupted by %s with the request in flight: it may have reached the server", sigName(sig))})
	cancel()
	if !errors.Is(c.Err, ledger.ErrCompleted) && (!o.Silent || o.ShowError) {
		if c.Err != nil {
			fmt.Fprintf(o.f.IO.Err, "idemkey: warning: interrupted; attempt %d of %s was not recorded: %s\n", c.Attempt, key, step.NotRecordedWhy(c))
		} else {
			fmt.Fprintf(o.f.IO.Err, "idemkey: interrupted: attempt %d of %s recorded as unknown; the next post with this key %s\n", c.Attempt, key, o.nextAfterUnknown())
		}
	}
	pl.store.Close()
	signal.Reset(sig)
	if p, err := os.FindProcess(os.Getpid()); err == nil && p.Signal(sig) == nil {
		time.Sleep(5 * time.Second) // the signal's default action ends the process
	}
	os.Exit(128 + n)
}

// sigName is a signal's conventional name: SIGTERM, SIGINT, SIGHUP.
func sigName(sig os.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return sig.String()
}

// ledgerClaim opens the ledger and holds the key: nil, nil when the
// request is to be sent; the exchange of a saved response to replay; or
// the error that ends post (busy, a mismatch, the ledger unavailable).
func (o *Options) ledgerClaim(key string, req *http.Request) (*post.Result, error) {
	pl := o.ledger
	ctx := context.Background()
	spec := pl.spec
	store, err := ledgeropts.Open(ctx, o.f, spec)
	if err != nil {
		return nil, err
	}
	// The fingerprint: the arguments as they enter the key (a field
	// --omit drops, or --only leaves out, may change between retries of
	// the same call, as in run), the method and the URL.
	request := append([]byte(`{"body":`), pl.args...)
	request = append(request, `,"method":`...)
	request = canon.AppendQuoted(request, req.Method)
	request = append(request, `,"url":`...)
	request = canon.AppendQuoted(request, req.URL.Redacted())
	request = append(request, '}')
	sum := sha256.Sum256(request)
	policy, err := ledgeropts.RecoverPolicyOf(o.f, pl.fl, pl.tool)
	if err != nil {
		store.Close()
		return nil, err
	}
	hr := ledger.HoldRequest{
		Claim: ledger.ClaimRequest{
			Record: ledger.Record{
				Key: key, Task: pl.task, Tool: pl.tool, Kind: "post",
				Fingerprint: hex.EncodeToString(sum[:]), Request: ledger.KeptRequest(request), Holder: stores.Holder(),
			},
			Lease: pl.lease,
			// An unknown outcome (the request may have reached the
			// server): retry by default, as post always sends the key.
			Recover: policy,
			Retain:  pl.retain,
			// A running record whose lock is free: its holder may live.
			HolderAlive: stores.HolderCheck(store),
		},
		Wait:   pl.wait,
		Events: o.holdEvents(key),
	}
	if kl, ok := store.(stores.KeyLocker); ok {
		hr.Locker = stores.FileLocker{KL: kl}
	}
	if err := o.reconcileHook(&hr); err != nil {
		store.Close()
		return nil, err
	}
	held, err := ledger.Hold(ctx, store, hr)
	if err != nil || held.Action != ledger.ActRun {
		store.Close()
	}
	if err != nil {
		var se *ledger.StoreError
		if errors.As(err, &se) {
			err = se.Err
		}
		return nil, &ledgeropts.Unavailable{Spec: spec, Err: err}
	}
	o.sayReconciled(key, held)
	switch held.Action {
	case ledger.ActRun:
		pl.store, pl.hold = store, held.Hold
		if o.Verbose {
			fmt.Fprintf(o.f.IO.Err, "* ledger: attempt %d of key %s claimed in %s\n", held.Hold.Attempt(), key, stores.Redact(spec))
		}
		return nil, nil
	case ledger.ActReplay:
		return o.ledgerReplay(held.Record, key, req)
	case ledger.ActMismatch:
		return nil, &cli.UsageError{
			Err:      fmt.Errorf("key %s was recorded for another request: %s", key, postDifference(held.Record, request)),
			HintText: fmt.Sprintf("the same key must mean the same request; drop the record with 'idemkey ledger forget %s'", key),
		}
	case ledger.ActUnknown:
		return nil, o.ledgerUnknown(key, held)
	}
	return nil, o.ledgerBusy(key, held.Record)
}

// reconcileHook sets the hold's reconcile from --reconcile (or the
// tool's tools.NAME.reconcile): the canonical arguments on its standard
// input, as run's gets them.
func (o *Options) reconcileHook(hr *ledger.HoldRequest) error {
	pl := o.ledger
	rc, err := step.ReconcileSettings(o.f, pl.fl, pl.tool)
	if err != nil || rc == nil {
		return err
	}
	rc.Args = func(*ledger.Record) ([]byte, error) { return pl.args, nil }
	hr.Reconcile = rc.Reconciler()
	hr.Events.Reconciling = func(rec *ledger.Record) {
		if o.Verbose {
			fmt.Fprintf(o.f.IO.Err, "* ledger: the outcome of attempt %d of %s is unknown: asking the owner (--reconcile)\n", rec.Attempt, rec.Key)
		}
	}
	return nil
}

// sayReconciled says what a reconcile answered and what follows.
func (o *Options) sayReconciled(key string, held *ledger.Held) {
	r := held.Reconciled
	if r == nil || o.Silent && !o.ShowError {
		return
	}
	fmt.Fprint(o.f.IO.Err, step.DuplicatedWarning(key, r))
	note := ""
	if r.Note != "" {
		note = ": " + cli.DiagLine(r.Note)
	}
	w := o.f.IO.Err
	switch {
	case r.Verdict == ledger.Happened:
		said := "the owner says the request took effect"
		if r.Duplicated {
			said += " more than once (duplicated)"
		}
		fmt.Fprintf(w, "idemkey: reconciled %s: %s%s; recorded as succeeded, not sent again\n", key, said, note)
	case r.Verdict == ledger.NotHappened && held.Action == ledger.ActRun:
		fmt.Fprintf(w, "idemkey: reconciled %s: the owner says the request did not take effect%s; sending it as attempt %d\n", key, note, held.Hold.Attempt())
	case held.Action == ledger.ActRun:
		fmt.Fprintf(w, "idemkey: the reconcile of %s could not tell%s; sending it again as attempt %d, with the same key\n", key, note, held.Hold.Attempt())
	}
}

// holdEvents are the hold's diagnostics, as post writes them.
func (o *Options) holdEvents(key string) ledger.HoldEvents {
	say := !o.Silent || o.ShowError
	return ledger.HoldEvents{
		Waiting: func(*ledger.Record) {
			if o.Verbose {
				fmt.Fprintf(o.f.IO.Err, "* ledger: the request with key %s is in flight elsewhere: waiting up to %s\n", key, o.ledger.wait)
			}
		},
		RenewFailed: func(err error) {
			if o.Verbose {
				fmt.Fprintf(o.f.IO.Err, "* ledger: renewing the lease: %v\n", err)
			}
		},
		Lost: func(error) {
			if say {
				pl := o.ledger
				fmt.Fprintf(o.f.IO.Err, "idemkey: warning: %s; no retry will be sent\n",
					step.LossLine(context.Background(), pl.store, pl.hold, key, pl.lease))
			}
		},
	}
}

// nextAfterUnknown says what the next post of an unknown request does.
func (o *Options) nextAfterUnknown() string {
	if p, err := ledgeropts.RecoverPolicyOf(o.f, o.ledger.fl, o.ledger.tool); err == nil && p == ledger.RecoverFail {
		return "sends nothing and exits 76 (--recover fail) until it is settled"
	}
	return "sends it again, with the same key (--recover retry)"
}

// postDifference says how the request recorded under a key differs from
// this one. The arguments cannot differ (they make the key): the method
// or the URL does, or the record is run's.
func postDifference(rec *ledger.Record, now []byte) string {
	if rec.Kind != "post" {
		return fmt.Sprintf("it is a record of 'idemkey %s' (task %q, tool %q), not of a request", rec.Kind, rec.Task, rec.Tool)
	}
	type request struct{ Method, URL string }
	var a, b request
	if json.Unmarshal(rec.Request, &a) == nil && json.Unmarshal(now, &b) == nil {
		var diffs []string
		if a.Method != b.Method {
			diffs = append(diffs, fmt.Sprintf("the method differs: recorded %s, now %s", a.Method, b.Method))
		}
		if a.URL != b.URL {
			diffs = append(diffs, fmt.Sprintf("the URL differs: recorded %q, now %q", a.URL, b.URL))
		}
		if len(diffs) > 0 {
			return strings.Join(diffs, "; ")
		}
	}
	return ledger.DescribeDifference(rec.Request, now)
}

// ledgerBusy says that the request is in flight elsewhere: exit 75.
func (o *Options) ledgerBusy(key string, rec *ledger.Record) error {
	if !o.Silent || o.ShowError {
		if rec != nil && rec.State == ledger.Running {
			fmt.Fprintf(o.f.IO.Err, "idemkey: the request with key %s is in flight elsewhere: attempt %d started at %s by %s\n",
				key, rec.Attempt, cli.Stamp(rec.StartedAt), ledger.HolderName(rec.Holder))
		} else {
			fmt.Fprintf(o.f.IO.Err, "idemkey: the request with key %s is in flight elsewhere\n", key)
		}
		if o.ledger.wait == 0 {
			fmt.Fprintf(o.f.IO.Err, "hint: --wait DURATION waits for it to end, then replays its saved response or sends the request again\n")
		}
	}
	return &cli.ExitError{Code: cli.ExitBusy}
}

// ledgerUnknown reports a request whose outcome is unknown, with --recover
// fail: exit 76, and how to settle it.
func (o *Options) ledgerUnknown(key string, held *ledger.Held) error {
	rec := held.Record
	if !o.Silent || o.ShowError {
		w := o.f.IO.Err
		fmt.Fprintf(w, "idemkey: outcome unknown, no request sent: %s\n", key)
		fmt.Fprintf(w, "  attempt %d of task %q, tool %q, started at %s by %s\n", rec.Attempt, rec.Task, rec.Tool, cli.Stamp(rec.StartedAt), ledger.HolderName(rec.Holder))
		fmt.Fprintf(w, "  how it ended: %s (recorded at %s)\n", cli.DiagLine(rec.Reason), cli.Stamp(rec.EndedAt))
		if r := held.Reconciled; r != nil {
			fmt.Fprintf(w, "  reconcile: the owner could not tell: %s\n", cli.DiagLine(r.Note))
		}
		fmt.Fprintf(w, "hint: check whether the request took effect, then settle it: idemkey ledger resolve %s --as failed (send it again) or --as succeeded; --recover retry sends it again with the same key, for a server that dedupes by it\n", key)
	}
	return &cli.ExitError{Code: cli.ExitUnknown}
}

// ledgerReplay makes the exchange of a saved response, as if it had just
// arrived: finish and -w write it as they write a fresh one.
func (o *Options) ledgerReplay(rec *ledger.Record, key string, req *http.Request) (*post.Result, error) {
	if len(rec.Meta) == 0 && len(rec.Stdout.Data) > 0 {
		// Settled by a reconcile command (its standard output is the
		// step's): no response head was saved, only that output.
		if !o.Silent {
			fmt.Fprintf(o.f.IO.Err, "idemkey: no request sent: key %s is recorded as succeeded without a saved response; replayed the output its reconcile gave (attempt %d: %s)\n",
				key, rec.Attempt, cli.DiagLine(rec.Reason))
		}
		data := rec.Stdout.Data
		if err := o.writeBody(post.Attempt{Body: post.NewSpool(data)}); err != nil {
			return nil, err
		}
		return nil, &cli.ExitError{Code: cli.ExitOK}
	}
	if len(rec.Meta) == 0 {
		// Settled as succeeded by a person (ledger resolve) after its
		// outcome was unknown: the effect happened, and no response was
		// saved. As run replays such a record with no output, exit 0 and
		// write nothing; sending the request again is what the person
		// settled against.
		if !o.Silent {
			fmt.Fprintf(o.f.IO.Err, "idemkey: no request sent: key %s is recorded as succeeded with no response saved to replay (attempt %d, ended at %s: %s)\n",
				key, rec.Attempt, cli.Stamp(rec.EndedAt), cli.DiagLine(rec.Reason))
			fmt.Fprintf(o.f.IO.Err, "hint: to get the server's response, 'idemkey ledger forget %s' and send it again: the server answers a repeated key with what it saved\n", key)
		}
		return nil, &cli.ExitError{Code: cli.ExitOK}
	}
	var s postSaved
	if err := json.Unmarshal(rec.Meta, &s); err != nil {
		return nil, fmt.Errorf("the ledger's record of key %s has no saved response: %v", key, err)
	}
	if !o.Silent {
		fmt.Fprintf(o.f.IO.Err, "idemkey: replayed from the ledger, no request sent: HTTP %s saved at %s (attempt %d, key %s)\n",
			cli.DiagLine(s.Status), cli.Stamp(rec.EndedAt), rec.Attempt, key) // a server's reason phrase is not trusted
		if s.Code >= 400 {
			// A refusal is saved like a success (its cause may be an
			// expired credential, which the fingerprint does not see).
			fmt.Fprintf(o.f.IO.Err, "hint: this is the server's saved refusal; once its cause is fixed, 'idemkey ledger forget %s' lets the request be sent again\n", key)
		}
	}
	resp := &http.Response{Proto: s.Proto, Status: s.Status, StatusCode: s.Code, Header: s.Header}
	data := rec.Stdout.Data
	res := post.Attempt{
		Resp: resp, Body: post.NewSpool(data),
		Hops:  s.replayHops(req),
		Start: time.Now(),
	}
	return &post.Result{Final: res, Start: res.Start}, nil
}

// ledgerRecord records the outcome of the claimed request: its final
// response if it is saved, else failed (the next invocation tries again
// with the same key).
func (o *Options) ledgerRecord(ex *post.Result, key string) {
	pl := o.ledger
	out := o.ledgerOutcome(ex)
	c := pl.hold.Complete(context.Background(), out)
	if !o.Silent || o.ShowError {
		step.WarnOutputsDropped(o.f.IO.Err, key, c)
	}
	switch {
	case errors.Is(c.Err, ledger.ErrCompleted):
		// Recorded by the interruption's handler.
	case c.Err != nil:
		if !o.Silent || o.ShowError {
			fmt.Fprintf(o.f.IO.Err, "idemkey: warning: the response was not recorded in the ledger: attempt %d of %s: %s\n", c.Attempt, key, step.NotRecordedWhy(c))
		}
	case out.State == ledger.Unknown && (!o.Silent || o.ShowError):
		fmt.Fprintf(o.f.IO.Err, "idemkey: warning: attempt %d of %s recorded as unknown: %s\n", c.Attempt, key, cli.DiagLine(out.Reason))
		fmt.Fprintf(o.f.IO.Err, "hint: the next post with this key %s; 'idemkey ledger resolve %s' settles it\n", o.nextAfterUnknown(), key)
	case o.Verbose:
		fmt.Fprintf(o.f.IO.Err, "* ledger: %s\n", cli.DiagLine(out.Reason))
	}
}

// ledgerOutcome is the outcome of the claimed request: its final response
// if it is saved, else failed.
func (o *Options) ledgerOutcome(ex *post.Result) ledger.Outcome {
	res := ex.Final
	var data []byte
	var readErr error
	tooLarge := res.Err == nil && savedStatus(res.Resp.StatusCode) && res.Body.Size() > step.MaxRecordedOutput
	if res.Err == nil && savedStatus(res.Resp.StatusCode) && !tooLarge {
		data, readErr = io.ReadAll(res.Body.Reader())
	}
	failed := func(code int, why string) ledger.Outcome {
		return ledger.Outcome{State: ledger.Failed, ExitCode: code, Reason: "not saved: " + why}
	}
	// With no answer that settles it, a request (this one, or an earlier
	// try of it) that may have reached the server is unknown.
	unanswered := func(code int, why string) ledger.Outcome {
		if ex.Reached {
			return ledger.Outcome{State: ledger.Unknown, ExitCode: code,
				Reason: "no answer after the request was sent, it may have reached the server: " + why}
		}
		return failed(code, why)
	}
	switch {
	case res.Err != nil:
		return unanswered(res.Err.Code, res.Err.Error())
	case !savedStatus(res.Resp.StatusCode):
		return unanswered(1, "HTTP "+res.Resp.Status)
	case tooLarge:
		// A replay must give the whole body, and a record is one row
		// held in memory: a response past the cap is not saved, and the
		// next invocation sends the request again, with the same key.
		out := failed(1, fmt.Sprintf("the response body (%d bytes) is larger than the ledger keeps (%d)", res.Body.Size(), step.MaxRecordedOutput))
		if !o.Silent || o.ShowError {
			fmt.Fprintf(o.f.IO.Err, "idemkey: warning: %s; the next invocation sends the request again, with the same key\n", out.Reason)
		}
		return out
	case readErr != nil:
		return failed(1, "reading the body: "+readErr.Error())
	}
	meta, err := json.Marshal(postSaved{Proto: res.Resp.Proto, Status: res.Resp.Status, Code: res.Resp.StatusCode, Header: res.Resp.Header, Head: res.Head(), Hops: saveHops(res.Hops)})
	if err != nil {
		return failed(1, err.Error())
	}
	rec := step.NewRecorder(int64(len(data)))
	rec.Write(data)
	return ledger.Outcome{State: ledger.Succeeded, ExitCode: 0, Meta: meta, Stdout: rec.Output(), Reason: "saved: HTTP " + res.Resp.Status}
}
