package probe

import (
	"context"
	"fmt"
	"strings"
	"sync"
)

const noKeyAccepted = "no request with a key was accepted (see key-limits)"

func notTested(rule, why string) Result { return Result{Rule: rule, Verdict: NotTested, Evidence: why} }

func (p *prober) counted() bool { return p.cfg.Count != nil }

// sendCounted sends one request between two counts (-1 without a
// Counter).
func (p *prober) sendCounted(ctx context.Context, rule, key string, body []byte) (r *response, before, after int64, err error) {
	if before, err = p.count(ctx, rule); err != nil {
		return nil, 0, 0, err
	}
	if r, err = p.send(ctx, rule, key, body); err != nil {
		return nil, 0, 0, err
	}
	after, err = p.count(ctx, rule)
	return r, before, after, err
}

// first sends the first request of a rule and says why the rule cannot
// go on, if it cannot: the request was refused, or the Counter did not
// see its effect.
func (p *prober) first(ctx context.Context, rule, key string) (r *response, count int64, why string, err error) {
	r, before, after, err := p.sendCounted(ctx, rule, key, p.cfg.Body)
	switch {
	case err != nil:
		return nil, 0, "", err
	case r.redirected():
		return r, after, fmt.Sprintf("the first request was redirected: %s to %s; probe that URL", statusText(r.status), quote(r.header.Get("Location"))), nil
	case !r.accepted():
		return r, after, "the first request was refused: " + statusText(r.status), nil
	case p.counted() && after == before:
		return r, after, fmt.Sprintf("the count stayed at %d over the first request (%s): the --count command does not count this endpoint's effects",
			after, statusText(r.status)), nil
	}
	return r, after, "", nil
}

// replay sends one request twice with one key. It returns the first
// response, for the retention rule, when the rule could be tested.
func (p *prober) replay(ctx context.Context, s shape) (Result, *response, error) {
	if s == shapeNone {
		return notTested(Replay, noKeyAccepted), nil, nil
	}
	r1, c1, why, err := p.first(ctx, Replay, p.keys.of(s))
	if err != nil || why != "" {
		return notTested(Replay, why), nil, err
	}
	r2, _, c2, err := p.sendCounted(ctx, Replay, r1.key, p.cfg.Body)
	if err != nil {
		return Result{}, nil, err
	}
	v, ev := p.judgeAgain(r1, r2, c1, c2)
	return Result{Rule: Replay, Verdict: v, Evidence: ev}, r1, nil
}

// judgeAgain judges the response to a request sent again with the first
// one's key and body: the first response again (pass), or a second effect
// or a refusal (fail). c1 and c2 are the counts before and after it.
func (p *prober) judgeAgain(r1, r2 *response, c1, c2 int64) (string, string) {
	var notes []string
	if h := replayedHeader(r2.header); h != "" {
		notes = append(notes, h)
	}
	sameID := r1.identity() == r2.identity()
	if r2.accepted() && r2.status != r1.status {
		notes = append(notes, "the status was "+statusText(r1.status)+" the first time")
	}
	if r2.accepted() && sameID && r2.sum != r1.sum {
		notes = append(notes, fmt.Sprintf("the body changed (%d bytes, then %d)", r1.size, r2.size))
	}
	note := ""
	if len(notes) > 0 {
		note = "; " + strings.Join(notes, "; ")
	}
	answer := statusText(r2.status) + " with " + r2.describeIdentity()
	switch {
	case p.counted() && c2 > c1:
		return Fail, fmt.Sprintf("a second effect: the count went from %d to %d; answered %s", c1, c2, answer)
	case !r2.accepted():
		return Fail, fmt.Sprintf("answered %s, not with the first response (%s)%s", statusText(r2.status), statusText(r1.status), note)
	case p.counted():
		return Pass, fmt.Sprintf("no second effect (the count stayed at %d); answered %s%s", c2, answer, note)
	case sameID && r1.identity().kind == "body":
		return Pass, "the first response again: " + answer + " (judged by the body alone: it has no id and no Location)" + note
	case sameID:
		return Pass, "the first response again: " + answer + note
	}
	return Fail, "a second effect: " + differ(r1, r2) + note
}

// differ says how two responses tell two effects apart.
func differ(r1, r2 *response) string {
	if r1.identity().kind == "body" && r2.identity().kind == "body" {
		return fmt.Sprintf("another body than the first (%d bytes, then %d), and neither has an id or a Location", r1.size, r2.size)
	}
	return fmt.Sprintf("%s, then %s", r1.describeIdentity(), r2.describeIdentity())
}

// mismatch sends a request, then one with the same key and a changed
// body.
func (p *prober) mismatch(ctx context.Context, s shape) (Result, error) {
	if s == shapeNone {
		return notTested(Mismatch, noKeyAccepted), nil
	}
	changed, what, ok := changeBody(p.cfg.Body)
	if !ok {
		why := "the body is not a JSON object, so the probe has no value to change"
		if len(p.cfg.Body) == 0 {
			why = "the request has no body to change"
		}
		return notTested(Mismatch, why), nil
	}
	r1, c1, why, err := p.first(ctx, Mismatch, p.keys.of(s))
	if err != nil || why != "" {
		return notTested(Mismatch, why), err
	}
	r2, _, c2, err := p.sendCounted(ctx, Mismatch, r1.key, changed)
	if err != nil {
		return Result{}, err
	}
	counted := ""
	if p.counted() {
		counted = fmt.Sprintf(" (the count stayed at %d)", c2)
	}
	res := Result{Rule: Mismatch}
	switch {
	case p.counted() && c2 > c1:
		res.Verdict, res.Evidence = Fail, fmt.Sprintf("a second effect for the changed body (%s): the count went from %d to %d; answered %s",
			what, c1, c2, statusText(r2.status))
	case r2.status == 422:
		res.Verdict, res.Evidence = Pass, fmt.Sprintf("422 Unprocessable Entity for the changed body (%s)%s", what, counted)
	case !r2.accepted():
		res.Verdict, res.Evidence = Info, fmt.Sprintf("refused the changed body (%s) with %s, not the draft's 422; no second effect%s",
			what, statusText(r2.status), counted)
	case !p.counted() && r1.identity() != r2.identity():
		res.Verdict, res.Evidence = Fail, fmt.Sprintf("a second effect for the changed body (%s): %s", what, differ(r1, r2))
	default:
		res.Verdict, res.Evidence = Fail, fmt.Sprintf("answered the changed body (%s) with the first response (%s with %s)%s: the change is silently dropped, where the draft asks for 422",
			what, statusText(r2.status), r2.describeIdentity(), counted)
	}
	return res, nil
}

// inFlight sends Concurrency requests with one key at once.
func (p *prober) inFlight(ctx context.Context, s shape) (Result, error) {
	if s == shapeNone {
		return notTested(InFlight, noKeyAccepted), nil
	}
	n := p.cfg.Concurrency
	c0, err := p.count(ctx, InFlight)
	if err != nil {
		return Result{}, err
	}
	rs, err := p.together(ctx, InFlight, p.keys.of(s), n)
	if err != nil {
		return Result{}, err
	}
	c1, err := p.count(ctx, InFlight)
	if err != nil {
		return Result{}, err
	}
	seen := fmt.Sprintf("%d concurrent requests with one key got %s", n, tally(rs))
	var ids []identity
	byID := map[identity]*response{}
	for _, r := range rs {
		if id := r.identity(); r.accepted() && byID[id] == nil {
			ids = append(ids, id)
			byID[id] = r
		}
	}
	effects := int64(len(ids))
	if p.counted() {
		effects = c1 - c0
		seen += fmt.Sprintf("; the count went from %d to %d", c0, c1)
	}
	switch {
	case len(ids) == 0:
		return notTested(InFlight, seen+": none was accepted"), nil
	case effects > 1:
		return Result{Rule: InFlight, Verdict: Fail, Evidence: fmt.Sprintf("%d effects: %s%s", effects, seen, listIDs(ids, byID))}, nil
	case effects == 0:
		return notTested(InFlight, seen+": the --count command does not count this endpoint's effects"), nil
	}
	// One effect: the others should be the draft's 409 or the first
	// response again.
	var other []*response
	for _, r := range rs {
		if r.status != 409 && !r.accepted() {
			other = append(other, r)
		}
	}
	if len(other) > 0 {
		return Result{Rule: InFlight, Verdict: Info, Evidence: fmt.Sprintf("one effect, but %d of the others got %s, not the draft's 409 or the first response: %s",
			len(other), tally(other), seen)}, nil
	}
	return Result{Rule: InFlight, Verdict: Pass, Evidence: "one effect: " + seen}, nil
}

// listIDs names up to five of the effects told apart by the responses.
func listIDs(ids []identity, byID map[identity]*response) string {
	if len(ids) < 2 {
		return ""
	}
	var names []string
	for i, id := range ids {
		if i == 5 {
			names = append(names, "…")
			break
		}
		names = append(names, byID[id].describeIdentity())
	}
	return " (" + strings.Join(names, ", ") + ")"
}

// together sends n requests with one key at once: each waits behind a
// barrier until all are ready.
func (p *prober) together(ctx context.Context, rule, key string, n int) ([]*response, error) {
	rs := make([]*response, n)
	errs := make([]error, n)
	atOnce(n, func(i int) { rs[i], errs[i] = p.send(ctx, rule, key, p.cfg.Body) })
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return rs, nil
}

// atOnce runs f(0) … f(n-1) in n goroutines released together from
// behind a barrier, and waits for all.
func atOnce(n int, f func(i int)) {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			f(i)
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
}

// required sends the request without a key. accepted says whether any
// request with a key was accepted: without one, a refusal says nothing
// about the key.
func (p *prober) required(ctx context.Context, accepted bool) (Result, error) {
	r, c0, c1, err := p.sendCounted(ctx, Required, "", p.cfg.Body)
	if err != nil {
		return Result{}, err
	}
	processed := r.accepted()
	counted := ""
	if p.counted() {
		processed = c1 > c0
		counted = fmt.Sprintf(" (the count stayed at %d)", c1)
		if processed {
			counted = fmt.Sprintf(" (the count went from %d to %d)", c0, c1)
		}
	}
	res := Result{Rule: Required}
	switch {
	case processed:
		res.Verdict = Info
		if p.cfg.RequireKey {
			res.Verdict = Fail
		}
		res.Evidence = fmt.Sprintf("processed without a key: %s%s; the key is optional here", statusText(r.status), counted)
	case !accepted:
		return notTested(Required, fmt.Sprintf("refused without a key (%s), but %s", statusText(r.status), noKeyAccepted)), nil
	case r.status == 400:
		res.Verdict, res.Evidence = Pass, "refused without a key: 400 Bad Request, as the draft asks"+counted
	case r.status == 422 || r.status == 428:
		res.Verdict, res.Evidence = Pass, fmt.Sprintf("refused without a key: %s (the draft asks for 400)%s", statusText(r.status), counted)
	default:
		// 401, 403, 429, 5xx…: an answer that need not be about the key.
		res.Verdict, res.Evidence = Info, fmt.Sprintf("refused without a key with %s, which need not be about the key (the draft asks for 400)%s",
			statusText(r.status), counted)
	}
	return res, nil
}

// retention sends the replay rule's key and body again, After after its
// first response.
func (p *prober) retention(ctx context.Context, first *response) (Result, error) {
	switch {
	case p.cfg.After <= 0:
		return notTested(Retention, "no wait was asked for (--after DURATION sends the replay's key again after DURATION)"), nil
	case first == nil:
		return notTested(Retention, "the replay rule could not be tested, so there is no response to replay"), nil
	}
	if err := p.wait(ctx, first.at.Add(p.cfg.After)); err != nil {
		return Result{}, err
	}
	r, c0, c1, err := p.sendCounted(ctx, Retention, first.key, p.cfg.Body)
	if err != nil {
		return Result{}, err
	}
	v, ev := p.judgeAgain(first, r, c0, c1)
	return Result{Rule: Retention, Verdict: v, Evidence: fmt.Sprintf("after %s: %s", p.cfg.After, ev)}, nil
}
