// Package probe tests whether an HTTP endpoint honours the Idempotency-Key
// header as draft-ietf-httpapi-idempotency-key-header-09 asks of the
// resource server that owns an effect, rule by rule:
//
//   - replay: the same key and body again get the first response, not a
//     second effect (the draft's section 2.6: "respond with the result of
//     the previously completed operation");
//   - mismatch: the same key with another body gets 422 (section 2.7);
//   - in-flight: concurrent requests with one key make one effect, the
//     others get 409 (section 2.7) or the first response;
//   - required: a request without a key gets 400 where the key is
//     required (section 2.7), or is processed (reported, not failed,
//     unless the key is meant to be required);
//   - key-limits: the longest key accepted, up to 255 characters (Stripe's
//     limit), and whether a UUID, a hex SHA-256 and a base64url key are
//     accepted (the formats idemkey sends);
//   - retention: the same key after a while still replays.
//
// Every key the probe sends is made fresh for it and can never be a key
// that idemkey derives for a real step (see keys.go). The probe makes
// real writes: every request it sends may have an effect.
//
// Effects are judged from the responses: a replay returns the first
// response's identity (its JSON "id" member, else its Location header,
// else its whole body). A Counter, where the caller has one, counts them
// instead: how many effects the endpoint has made so far.
//
// RunMCP probes an MCP server's write tools the same way (see mcp.go):
// replay, lost-response, mismatch, in-flight, no-key and description,
// the key in params._meta, an argument or the Idempotency-Key header.
// With a Reconciler, both probes check it against a key that made an
// effect and a key never sent (the reconcile rule).
//
// The package is the exchange of `idemkey probe`; it reads no file and no
// setting, and starts no process: the caller gives it the client, the
// request (or a way to start an MCP server) and the counter.
package probe

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// The rules, in the order a report lists them.
const (
	Replay    = "replay"
	Mismatch  = "mismatch"
	InFlight  = "in-flight"
	Required  = "required"
	KeyLimits = "key-limits"
	Retention = "retention"
)

// Rules are the rules' names in the order a report lists them.
var Rules = []string{Replay, Mismatch, InFlight, Required, KeyLimits, Retention}

// The verdicts.
const (
	Pass      = "pass"       // the endpoint does what the draft asks
	Fail      = "fail"       // it does not: a second effect, a change silently dropped
	Info      = "info"       // neither: what it did is reported (a 417 for a changed body)
	NotTested = "not-tested" // the rule could not be tested (it says why)
)

// Result is one rule's verdict and what it was judged from.
type Result struct {
	Rule     string `json:"rule"`
	Verdict  string `json:"verdict"`
	Evidence string `json:"evidence"`
	// KeyIn is where the key went, for an MCP probe's rules that send
	// one (meta, arg:NAME, header).
	KeyIn string `json:"key_in,omitempty"`
}

// Report is a probe's outcome: one Result per rule, in Rules' order.
type Report struct {
	URL   string   `json:"url"`
	Rules []Result `json:"rules"`
}

// Failed reports whether a rule failed.
func (r *Report) Failed() bool {
	for _, res := range r.Rules {
		if res.Verdict == Fail {
			return true
		}
	}
	return false
}

// Counter returns how many effects the endpoint has made so far (a count
// of charges in a test deployment).
type Counter func(context.Context) (int64, error)

// Config is what a probe sends and how.
type Config struct {
	// Client sends every request; the probe never lets it follow a
	// redirect (a Location is an identity the probe compares).
	Client *http.Client
	// Request is the request every probe request is a copy of: method,
	// URL, headers and Host, without a body and without the key.
	Request *http.Request
	// Body is sent with every request (nil: none).
	Body []byte
	// KeyHeader names the header that carries the key (Idempotency-Key).
	KeyHeader string
	// Concurrency is the number of concurrent requests of the in-flight
	// rule (at least 2).
	Concurrency int
	// After, when positive, is how long after the replay rule's first
	// request the retention rule sends its key again.
	After time.Duration
	// RequireKey makes a request processed without a key a failure.
	RequireKey bool
	// Count, when not nil, counts the endpoint's effects.
	Count Counter
	// MaxTime bounds each request, the reading of its response included
	// (0: no limit).
	MaxTime time.Duration
	// Rand is where keys come from (crypto/rand when nil).
	Rand io.Reader
	// Reconcile, when not nil, is checked after the replay rule against
	// its key (which made an effect) and a key never sent.
	Reconcile Reconciler
	// Log, when not nil, receives a line for people while the probe
	// waits (the retention rule's wait).
	Log func(string)
}

// SendError is a request that got no complete response: nothing can be
// judged from it, so the probe stops.
type SendError struct {
	Rule   string
	Sent   int   // requests sent before this one
	Err    error // the transport's error
	InBody bool  // the status and headers had arrived, the body had not
}

func (e *SendError) Error() string { return e.Rule + ": " + e.Err.Error() }
func (e *SendError) Unwrap() error { return e.Err }

// CountError is a failure of the Counter.
type CountError struct {
	Rule string
	Err  error
}

func (e *CountError) Error() string { return e.Rule + ": " + e.Err.Error() }
func (e *CountError) Unwrap() error { return e.Err }

type prober struct {
	cfg  Config
	keys keys
	sent atomic.Int64
}

func newProber(cfg Config) (*prober, error) {
	if cfg.Request == nil || cfg.KeyHeader == "" {
		return nil, errors.New("probe: a request and a key header are needed")
	}
	if cfg.Concurrency < 2 {
		return nil, fmt.Errorf("probe: a concurrency of %d: want at least 2", cfg.Concurrency)
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	if cfg.Client != nil {
		// A redirect is an answer to judge, not to follow: a copy of the
		// client that never follows one.
		c := *cfg.Client
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		cfg.Client = &c
	}
	return &prober{cfg: cfg, keys: keys{cfg.Rand}}, nil
}

// Run probes the endpoint, rule by rule, and returns the report. An error
// is a request that got no response (*SendError), a failed count
// (*CountError) or the context's end; the requests sent until then stand.
//
// key-limits runs first: the other rules use a key of the first shape it
// found accepted, so that an endpoint that takes only UUIDs is probed
// with UUIDs.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	p, err := newProber(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Client == nil {
		return nil, errors.New("probe: a client is needed")
	}
	limits, shape, err := p.keyLimits(ctx)
	if err != nil {
		return nil, err
	}
	replay, first, err := p.replay(ctx, shape)
	if err != nil {
		return nil, err
	}
	var rules []Result
	if cfg.Reconcile != nil {
		rec := notTested(Reconcile, "the replay rule made no effect to check the reconciler against")
		if first != nil {
			rec = judgeReconcile(ctx, cfg.Reconcile, first.key, p.keys.of(shape), "", cfg.Body)
		}
		rules = append(rules, rec)
	}
	mismatch, err := p.mismatch(ctx, shape)
	if err != nil {
		return nil, err
	}
	inFlight, err := p.inFlight(ctx, shape)
	if err != nil {
		return nil, err
	}
	required, err := p.required(ctx, shape != shapeNone)
	if err != nil {
		return nil, err
	}
	retention, err := p.retention(ctx, first)
	if err != nil {
		return nil, err
	}
	return &Report{
		URL:   cfg.Request.URL.Redacted(),
		Rules: append([]Result{replay, mismatch, inFlight, required, limits, retention}, rules...),
	}, nil
}

// count returns the Counter's count, or -1 without one.
func (p *prober) count(ctx context.Context, rule string) (int64, error) {
	if p.cfg.Count == nil {
		return -1, nil
	}
	n, err := p.cfg.Count(ctx)
	if err != nil {
		return 0, &CountError{Rule: rule, Err: err}
	}
	return n, nil
}

func (p *prober) wait(ctx context.Context, until time.Time) error {
	d := time.Until(until)
	if d <= 0 {
		return nil
	}
	if p.cfg.Log != nil && d >= time.Second {
		p.cfg.Log(fmt.Sprintf("retention: waiting %s to send the replay's key again", d.Round(time.Second)))
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
