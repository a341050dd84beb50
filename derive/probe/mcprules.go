package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// keyPlace is where a call carries its key: "meta", "arg:NAME" or
// "header".
type keyPlace string

func (k keyPlace) arg() (string, bool) { return strings.CutPrefix(string(k), "arg:") }

// answer is what one tools/call got.
type answer struct {
	key     string
	result  json.RawMessage
	rpcErr  *rpcError
	isError bool
	text    string // the first text content, for the evidence
	id      string // the structuredContent's id, if any
}

// accepted reports whether the call was taken: a result that is not an
// error.
func (a *answer) accepted() bool { return a.rpcErr == nil && !a.isError }

// identity is what tells two effects apart: the structuredContent's id,
// else the whole result.
func (a *answer) identity() string {
	if a.id != "" {
		return "id:" + a.id
	}
	return "result:" + string(a.result)
}

func (a *answer) describe() string {
	switch {
	case a.rpcErr != nil:
		return fmt.Sprintf("a JSON-RPC error %d %s", a.rpcErr.Code, quote(a.rpcErr.Message))
	case a.isError:
		return "an error result " + quote(a.text)
	case a.id != "":
		return "id " + quote(a.id)
	}
	return fmt.Sprintf("a result of %d bytes without an id", len(a.result))
}

// refusalText is what a refusal says.
func (a *answer) refusalText() string {
	if a.rpcErr != nil {
		return a.rpcErr.Message
	}
	return a.text
}

// callArgs are args with the key set where kp says (and any key the
// caller's arguments hold at that name replaced).
func callArgs(args json.RawMessage, kp keyPlace, key string) json.RawMessage {
	name, ok := kp.arg()
	if !ok {
		return args
	}
	v := json.RawMessage(nil)
	if key != "" {
		v, _ = json.Marshal(key)
	}
	return withMember(args, name, v)
}

// withMember returns the JSON object obj without its members called name,
// and with name: v at its end (v nil: without it). Other members keep
// their bytes and order.
func withMember(obj json.RawMessage, name string, v json.RawMessage) json.RawMessage {
	d := json.NewDecoder(bytes.NewReader(obj))
	var out bytes.Buffer
	out.WriteByte('{')
	n := 0
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return obj
	}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return obj
		}
		var raw json.RawMessage
		if err := d.Decode(&raw); err != nil {
			return obj
		}
		if k, _ := t.(string); k == name {
			continue
		}
		if n > 0 {
			out.WriteByte(',')
		}
		kb, _ := json.Marshal(t)
		out.Write(kb)
		out.WriteByte(':')
		out.Write(raw)
		n++
	}
	if v != nil {
		if n > 0 {
			out.WriteByte(',')
		}
		kb, _ := json.Marshal(name)
		out.Write(kb)
		out.WriteByte(':')
		out.Write(v)
	}
	out.WriteByte('}')
	return out.Bytes()
}

// callTool sends one tools/call on c with the key placed as kp says (""
// sends none).
func (p *mcpProber) callTool(ctx context.Context, c conn, rule, tool string, args json.RawMessage, kp keyPlace, key string) (*answer, error) {
	params := map[string]any{"name": tool, "arguments": callArgs(args, kp, key)}
	var header http.Header
	switch {
	case key != "" && kp == "meta":
		params["_meta"] = map[string]any{MetaKey: key}
	case key != "" && kp == "header":
		header = http.Header{"Idempotency-Key": {key}}
	}
	ctx, cancel := p.callCtx(ctx)
	defer cancel()
	p.mu.Lock()
	p.sent++
	p.mu.Unlock()
	res, rerr, err := c.call(ctx, "tools/call", params, header)
	if err != nil {
		return nil, &MCPError{Rule: rule, Err: err}
	}
	a := &answer{key: key, result: res, rpcErr: rerr}
	if rerr == nil {
		var r struct {
			IsError bool `json:"isError"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			Structured map[string]json.RawMessage `json:"structuredContent"`
		}
		if err := json.Unmarshal(res, &r); err != nil {
			return nil, &MCPError{Rule: rule, Err: fmt.Errorf("the answer to tools/call %s is not a CallToolResult: %v", tool, err)}
		}
		a.isError = r.IsError
		for _, c := range r.Content {
			if c.Type == "text" {
				a.text = c.Text
				break
			}
		}
		if id := r.Structured["id"]; len(id) > 0 && string(id) != "null" {
			if s, err := strconv.Unquote(string(id)); err == nil {
				a.id = s
			} else {
				a.id = string(id)
			}
		}
	}
	return a, nil
}

func (p *mcpProber) counted() bool { return p.cfg.Count != nil || p.count != nil }

// countNow returns how many effects the server has made so far, or -1
// when effects are judged by the answers.
func (p *mcpProber) countNow(ctx context.Context, rule string) (int64, error) {
	switch {
	case p.cfg.Count != nil:
		n, err := p.cfg.Count(ctx)
		if err != nil {
			return 0, &MCPError{Rule: rule, Err: err}
		}
		return n, nil
	case p.count == nil:
		return -1, nil
	}
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	res, rerr, err := p.main.call(cctx, "tools/call", map[string]any{"name": p.count.Name, "arguments": p.cfg.CountArgs}, nil)
	if err == nil && rerr != nil {
		err = fmt.Errorf("--count-tool %s was refused: %s", p.count.Name, rerr.Message)
	}
	if err != nil {
		return 0, &MCPError{Rule: rule, Err: err}
	}
	n, err := countAt(res, p.cfg.CountPointer)
	if err != nil {
		return 0, &MCPError{Rule: rule, Err: fmt.Errorf("--count-tool %s: %v", p.count.Name, err)}
	}
	return n, nil
}

// countAt reads the count at pointer in a CallToolResult: in its
// structuredContent, else in its first text content read as JSON. A
// number is the count; an array, its length.
func countAt(res json.RawMessage, pointer string) (int64, error) {
	var r struct {
		IsError    bool            `json:"isError"`
		Structured json.RawMessage `json:"structuredContent"`
		Content    []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return 0, fmt.Errorf("its answer is not a CallToolResult")
	}
	if r.IsError {
		return 0, fmt.Errorf("it answered an error result")
	}
	var docs []json.RawMessage
	if len(r.Structured) > 0 {
		docs = append(docs, r.Structured)
	}
	for _, c := range r.Content {
		if c.Type == "text" {
			if json.Valid([]byte(c.Text)) {
				docs = append(docs, json.RawMessage(c.Text))
			}
			break
		}
	}
	for _, doc := range docs {
		v, ok := lookup(doc, pointer)
		if !ok {
			continue
		}
		var n json.Number
		var arr []json.RawMessage
		d := json.NewDecoder(bytes.NewReader(v))
		d.UseNumber()
		if c := bytes.TrimSpace(v); len(c) > 0 && (c[0] == '-' || c[0] >= '0' && c[0] <= '9') && d.Decode(&n) == nil {
			if i, err := n.Int64(); err == nil && i >= 0 {
				return i, nil
			}
			return 0, fmt.Errorf("%s is %s, not a whole number of effects", pointer, n)
		}
		if json.Unmarshal(v, &arr) == nil {
			return int64(len(arr)), nil
		}
		return 0, fmt.Errorf("%s is neither a number nor an array", pointer)
	}
	return 0, fmt.Errorf("its structuredContent (or first text content, as JSON) has nothing at %s", pointer)
}

// lookup returns the value at an RFC 6901 pointer.
func lookup(doc json.RawMessage, pointer string) (json.RawMessage, bool) {
	if pointer == "" {
		return doc, true
	}
	if !strings.HasPrefix(pointer, "/") {
		return nil, false
	}
	for _, tok := range strings.Split(pointer[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		var obj map[string]json.RawMessage
		var arr []json.RawMessage
		switch {
		case json.Unmarshal(doc, &obj) == nil && obj != nil:
			v, ok := obj[tok]
			if !ok {
				return nil, false
			}
			doc = v
		case json.Unmarshal(doc, &arr) == nil:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(arr) || (len(tok) > 1 && tok[0] == '0') {
				return nil, false
			}
			doc = arr[i]
		default:
			return nil, false
		}
	}
	return doc, true
}

// countedCall sends one call between two counts.
func (p *mcpProber) countedCall(ctx context.Context, c conn, rule, tool string, args json.RawMessage, kp keyPlace, key string) (a *answer, before, after int64, err error) {
	if before, err = p.countNow(ctx, rule); err != nil {
		return nil, 0, 0, err
	}
	if a, err = p.callTool(ctx, c, rule, tool, args, kp, key); err != nil {
		return nil, 0, 0, err
	}
	after, err = p.countNow(ctx, rule)
	return a, before, after, err
}

// firstCall makes a rule's first call and says why the rule cannot go on,
// if it cannot: it was refused, or the count did not see its effect.
func (p *mcpProber) firstCall(ctx context.Context, c conn, rule, tool string, args json.RawMessage, kp keyPlace) (*answer, int64, string, error) {
	a, before, after, err := p.countedCall(ctx, c, rule, tool, args, kp, p.keys.uuid())
	switch {
	case err != nil:
		return nil, 0, "", err
	case !a.accepted():
		return a, after, "the first call was refused: " + a.describe(), nil
	case p.counted() && after == before:
		return a, after, fmt.Sprintf("the count stayed at %d over the first call (%s): it does not count this tool's effects", after, a.describe()), nil
	}
	return a, after, "", nil
}

func keyed(r Result, kp keyPlace) Result {
	r.KeyIn = string(kp)
	return r
}

// mcpReplay calls the tool twice with one key. It returns the first
// answer when it made an effect.
func (p *mcpProber) mcpReplay(ctx context.Context, t *mcpTool, args json.RawMessage, kp keyPlace) (Result, *answer, error) {
	a1, c1, why, err := p.firstCall(ctx, p.main, Replay, t.Name, args, kp)
	if err != nil || why != "" {
		return keyed(notTested(Replay, why), kp), nil, err
	}
	a2, _, c2, err := p.countedCall(ctx, p.main, Replay, t.Name, args, kp, a1.key)
	if err != nil {
		return Result{}, nil, err
	}
	v, ev := p.judgeAgainMCP(a1, a2, c1, c2)
	if name, ok := kp.arg(); ok && !t.hasParam(name) {
		ev += fmt.Sprintf(" (its inputSchema has no argument %s: a server may drop it)", quote(name))
	}
	return keyed(Result{Rule: Replay, Verdict: v, Evidence: ev}, kp), a1, nil
}

// refusesDuplicate reports whether a refusal says the call was a
// duplicate.
func refusesDuplicate(s string) bool {
	s = strings.ToLower(s)
	for _, w := range []string{"duplicate", "already", "idempoten", "replay", "exists", "in use", "conflict", "in progress", "seen"} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// judgeAgainMCP judges the answer to a call sent again with the first
// one's key and arguments.
func (p *mcpProber) judgeAgainMCP(a1, a2 *answer, c1, c2 int64) (string, string) {
	switch {
	case p.counted() && c2 > c1:
		return Fail, fmt.Sprintf("a second effect: the count went from %d to %d; answered %s", c1, c2, a2.describe())
	case p.counted():
		return Pass, fmt.Sprintf("no second effect (the count stayed at %d); answered %s", c2, a2.describe())
	case !a2.accepted() && refusesDuplicate(a2.refusalText()):
		return Pass, "refused as a call already made: " + a2.describe()
	case !a2.accepted():
		return Info, fmt.Sprintf("answered %s, not the first answer (%s); without a count, whether it made an effect is not known", a2.describe(), a1.describe())
	case a1.identity() == a2.identity() && a1.id == "":
		return Pass, "the first answer again, byte for byte (judged by the whole result: it has no structuredContent id)"
	case a1.identity() == a2.identity():
		return Pass, "the first answer again: " + a2.describe()
	}
	return Fail, fmt.Sprintf("a second effect: %s, then %s", a1.describe(), a2.describe())
}

// lostResponse makes a call on a connection of its own and cuts that
// connection once the answer came (the answer kept only to judge by, as
// a client whose connection broke never sees it), then sends the call
// again with the same key on a new connection.
func (p *mcpProber) lostResponse(ctx context.Context, t *mcpTool, args json.RawMessage, kp keyPlace) (Result, error) {
	c1, _, err := p.dial(ctx)
	if err != nil {
		return Result{}, &MCPError{Rule: LostResponse, Err: fmt.Errorf("a new connection: %w", err)}
	}
	a1, n1, why, err := p.firstCall(ctx, c1, LostResponse, t.Name, args, kp)
	c1.cut()
	if err != nil || why != "" {
		return keyed(notTested(LostResponse, why), kp), err
	}
	c2, _, err := p.dial(ctx)
	if err != nil {
		return Result{}, &MCPError{Rule: LostResponse, Err: fmt.Errorf("a new connection: %w", err)}
	}
	defer c2.close()
	a2, _, n2, err := p.countedCall(ctx, c2, LostResponse, t.Name, args, kp, a1.key)
	if err != nil {
		return Result{}, err
	}
	v, ev := p.judgeAgainMCP(a1, a2, n1, n2)
	return keyed(Result{Rule: LostResponse, Verdict: v,
		Evidence: "the first answer dropped with its connection, the call sent again on a new one: " + ev}, kp), nil
}

// changedArgs changes the first number of the arguments (plus one), else
// the first string; ok is false when they have neither.
func changedArgs(args json.RawMessage, kp keyPlace) (json.RawMessage, string, bool) {
	if name, ok := kp.arg(); ok {
		args = withMember(args, name, nil) // never change the key itself
	}
	changed, what, ok := changeBody(args)
	if !ok || strings.HasPrefix(what, "added") {
		return nil, "", false
	}
	return changed, what, true
}

// mcpMismatch calls the tool, then with the same key and changed
// arguments.
func (p *mcpProber) mcpMismatch(ctx context.Context, t *mcpTool, args json.RawMessage, kp keyPlace) (Result, error) {
	changed, what, ok := changedArgs(args, kp)
	if !ok {
		return keyed(notTested(Mismatch, "the arguments have no number or string at their top level to change"), kp), nil
	}
	if name, isArg := kp.arg(); isArg {
		args = withMember(args, name, nil)
	}
	a1, c1, why, err := p.firstCall(ctx, p.main, Mismatch, t.Name, args, kp)
	if err != nil || why != "" {
		return keyed(notTested(Mismatch, why), kp), err
	}
	a2, _, c2, err := p.countedCall(ctx, p.main, Mismatch, t.Name, changed, kp, a1.key)
	if err != nil {
		return Result{}, err
	}
	res := Result{Rule: Mismatch}
	switch {
	case p.counted() && c2 > c1:
		res.Verdict, res.Evidence = Fail, fmt.Sprintf("a second effect for the changed arguments (%s): the count went from %d to %d; answered %s", what, c1, c2, a2.describe())
	case !a2.accepted():
		res.Verdict, res.Evidence = Pass, fmt.Sprintf("refused the changed arguments (%s): %s", what, a2.describe())
	case a1.identity() == a2.identity():
		res.Verdict, res.Evidence = Fail, fmt.Sprintf("answered the changed arguments (%s) with the first answer (%s): the change is silently dropped", what, a2.describe())
	case p.counted():
		res.Verdict, res.Evidence = Info, fmt.Sprintf("took the changed arguments (%s) without a second effect (the count stayed at %d), answering %s", what, c2, a2.describe())
	default:
		res.Verdict, res.Evidence = Fail, fmt.Sprintf("a second effect for the changed arguments (%s): %s, then %s", what, a1.describe(), a2.describe())
	}
	return keyed(res, kp), nil
}

// mcpInFlight sends Concurrency identical calls with one key at once.
func (p *mcpProber) mcpInFlight(ctx context.Context, t *mcpTool, args json.RawMessage, kp keyPlace) (Result, error) {
	n := p.cfg.Concurrency
	c0, err := p.countNow(ctx, InFlight)
	if err != nil {
		return Result{}, err
	}
	key := p.keys.uuid()
	as := make([]*answer, n)
	errs := make([]error, n)
	atOnce(n, func(i int) { as[i], errs[i] = p.callTool(ctx, p.main, InFlight, t.Name, args, kp, key) })
	for _, err := range errs {
		if err != nil {
			return Result{}, err
		}
	}
	c1, err := p.countNow(ctx, InFlight)
	if err != nil {
		return Result{}, err
	}
	ids := map[string]bool{}
	accepted := 0
	for _, a := range as {
		if a.accepted() {
			accepted++
			ids[a.identity()] = true
		}
	}
	seen := fmt.Sprintf("%d concurrent calls with one key: %d answered, %d refused", n, accepted, n-accepted)
	effects := int64(len(ids))
	if p.counted() {
		effects = c1 - c0
		seen += fmt.Sprintf("; the count went from %d to %d", c0, c1)
	} else {
		seen += fmt.Sprintf("; %d distinct %s", len(ids), map[bool]string{true: "answer", false: "answers"}[len(ids) == 1])
	}
	switch {
	case accepted == 0:
		return keyed(notTested(InFlight, seen+": none was taken"), kp), nil
	case effects > 1:
		return keyed(Result{Rule: InFlight, Verdict: Fail, Evidence: fmt.Sprintf("%d effects: %s", effects, seen)}, kp), nil
	case effects == 0:
		return keyed(notTested(InFlight, seen+": the count does not count this tool's effects"), kp), nil
	}
	return keyed(Result{Rule: InFlight, Verdict: Pass, Evidence: "one effect: " + seen}, kp), nil
}

// noKey calls the tool twice without a key.
func (p *mcpProber) noKey(ctx context.Context, t *mcpTool, args json.RawMessage) (Result, error) {
	for _, where := range p.cfg.KeyIn {
		if name, ok := keyPlace(where).arg(); ok {
			args = withMember(args, name, nil)
		}
	}
	c0, err := p.countNow(ctx, NoKey)
	if err != nil {
		return Result{}, err
	}
	var as []*answer
	for range 2 {
		a, err := p.callTool(ctx, p.main, NoKey, t.Name, args, "meta", "")
		if err != nil {
			return Result{}, err
		}
		as = append(as, a)
	}
	c1, err := p.countNow(ctx, NoKey)
	if err != nil {
		return Result{}, err
	}
	ids := map[string]bool{}
	for _, a := range as {
		if a.accepted() {
			ids[a.identity()] = true
		}
	}
	var effects int64
	var seen string
	if p.counted() {
		effects = c1 - c0
		seen = fmt.Sprintf("two calls without a key made %d %s (the count went from %d to %d)", effects, plural(effects), c0, c1)
	} else {
		effects = int64(len(ids))
		seen = fmt.Sprintf("two calls without a key got %s, then %s", as[0].describe(), as[1].describe())
	}
	switch {
	case t.readOnly() && p.counted() && effects > 0:
		return Result{Rule: NoKey, Verdict: Fail, Evidence: "it says readOnlyHint: true, yet " + seen}, nil
	case t.readOnly() && !p.counted() && as[0].accepted() && as[1].accepted() && as[0].id != "" && as[1].id != "" && as[0].id != as[1].id:
		return Result{Rule: NoKey, Verdict: Fail, Evidence: "it says readOnlyHint: true, yet each call answered a new id, as a write that creates does: " + seen}, nil
	case t.readOnly():
		return Result{Rule: NoKey, Verdict: Info, Evidence: "it says readOnlyHint: true; " + seen + " (without a count, only a new id per call would show an effect)"}, nil
	case t.idempotent() && effects >= 2:
		return Result{Rule: NoKey, Verdict: Fail, Evidence: "it says idempotentHint: true, yet " + seen}, nil
	case t.idempotent() && effects == 1:
		return Result{Rule: NoKey, Verdict: Pass, Evidence: "it says idempotentHint: true, and " + seen}, nil
	}
	return Result{Rule: NoKey, Verdict: Info, Evidence: seen}, nil
}

func plural(n int64) string {
	if n == 1 {
		return "effect"
	}
	return "effects"
}

// reconcileWords are the reconcile rule's words on a reconciler that says
// happened for a key never sent.
const reconcileWords = "a reconciler that says happened for a key never sent would record lost writes as done"

// reconcile checks the reconcile command against two controls: the key
// the replay rule made an effect with (it must say happened) and a fresh
// key never sent (it must say not happened).
func (p *mcpProber) reconcile(ctx context.Context, tool string, args json.RawMessage, first *answer) Result {
	if first == nil {
		return notTested(Reconcile, "the replay rule made no effect to check the reconciler against")
	}
	return judgeReconcile(ctx, p.cfg.Reconcile, first.key, p.keys.uuid(), tool, args)
}

// judgeReconcile runs rc for a key with an effect (pos) and one never
// sent (neg) and judges its two answers.
func judgeReconcile(ctx context.Context, rc Reconciler, pos, neg, tool string, args []byte) Result {
	ps, pw := rc(ctx, pos, tool, args)
	ns, nw := rc(ctx, neg, tool, args)
	ev := fmt.Sprintf("for a key with an effect it said %s (%s); for a key never sent, %s (%s)", saidText(ps), pw, saidText(ns), nw)
	var why []string
	if ns == SaidHappened {
		why = append(why, reconcileWords)
	}
	if ps == SaidNotHappened {
		why = append(why, "a reconciler that says not happened for a write that happened would make it again")
	}
	if ps == SaidUnknown || ns == SaidUnknown {
		why = append(why, "a reconciler that cannot tell leaves every unknown outcome unknown")
	}
	if len(why) > 0 {
		return Result{Rule: Reconcile, Verdict: Fail, Evidence: ev + ": " + strings.Join(why, "; ")}
	}
	return Result{Rule: Reconcile, Verdict: Pass, Evidence: ev}
}

func saidText(s Said) string {
	switch s {
	case SaidHappened:
		return "happened"
	case SaidNotHappened:
		return "not happened"
	}
	return "it could not tell"
}
