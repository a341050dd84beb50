// Package driftgen writes realistic logs of tool calls with planted
// retries, distinct calls and collapsed writes, and says what it planted:
// the test bed of idemkey drift, and the input of its benchmark.
//
// The log is JSON Lines of call records {"task","tool","call_id","args"}.
// Tasks run concurrently and their calls interleave. Each task has its own
// customer (e-mail, customer id), so entity ids recur across its calls.
// Every call may be
//   - retried 1 to 3 times a few lines later with the same call id: the
//     fields the caller regenerates on every attempt (timestamps, trace
//     and request ids, attempt counters) change, and sometimes also a float
//     picks up noise, an array is reordered or a text is reworded;
//   - followed by a distinct sibling: the same tool and a new call id, one
//     business field changed (amount, recipient, account, start time,
//     priority, issue, price, message), the volatile fields regenerated too;
//   - for tools without volatile fields, repeated with the same arguments:
//     under another call id (a collapse), far away in the log (a collapse),
//     or as a plain retry with the same call id close by (not a finding).
package driftgen

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Config tunes a log.
type Config struct {
	Seed        uint64
	Calls       int     // lines
	Tasks       int     // tasks running at once (default 40)
	RetryRate   float64 // share of calls retried (default 0.25)
	SiblingRate float64 // share of calls followed by a distinct sibling (default 0.1)
	Window      int     // the analysis window in lines; far-apart copies lie beyond it (default 500)
	Client      bool    // add the task's client metadata to every call (lines of about 400 bytes)
}

// Truth is what was planted.
type Truth struct {
	Drift    [][]int             // lines of each retried call and its retries (different keys)
	Collapse [][]int             // lines of each set of distinct calls that share a key
	Suggest  map[string][]string // tool → pointers that vary in at least half its drift clusters
}

type task struct {
	client   map[string]any
	id       string
	email    string
	customer string
	account  string
	left     int
}

type event struct {
	tool   string
	callID string
	args   map[string]any
	task   *task
}

type gen struct {
	r     *rand.Rand
	clock time.Time
	slots []*event
	cfg   Config
}

// Generate writes a log to w and returns what it planted.
func Generate(cfg Config, w io.Writer) (Truth, error) {
	if cfg.Tasks == 0 {
		cfg.Tasks = 40
	}
	if cfg.RetryRate == 0 {
		cfg.RetryRate = 0.25
	}
	if cfg.SiblingRate == 0 {
		cfg.SiblingRate = 0.1
	}
	if cfg.Window == 0 {
		cfg.Window = 500
	}
	g := &gen{r: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5eed)), clock: time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC),
		slots: make([]*event, cfg.Calls), cfg: cfg}
	truth := Truth{Suggest: map[string][]string{}}
	varied := map[string]map[string]int{} // tool → pointer → clusters
	clusters := map[string]int{}
	tasks := make([]*task, 0, cfg.Tasks)
	taskN := 0
	newTask := func() *task {
		taskN++
		t := &task{id: fmt.Sprintf("task-%05d", taskN), email: g.email(), customer: "cus_" + g.base62(14),
			account: fmt.Sprintf("acct_%04d", g.r.IntN(10000)), left: 5 + g.r.IntN(40)}
		if cfg.Client {
			t.client = map[string]any{
				"app": g.pick([]string{"shop-ios", "shop-android", "shop-web"}), "version": fmt.Sprintf("5.%d.%d", g.r.IntN(20), g.r.IntN(10)),
				"locale": g.pick([]string{"de-CH", "en-GB", "fr-FR", "it-IT"}), "tz": g.pick([]string{"Europe/Zurich", "Europe/London"}),
				"user_agent": g.pick([]string{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15", "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36"}),
			}
		}
		return t
	}
	for range cfg.Tasks {
		tasks = append(tasks, newTask())
	}
	for i := 0; i < cfg.Calls; i++ {
		if g.slots[i] != nil {
			continue
		}
		k := g.r.IntN(len(tasks))
		t := tasks[k]
		t.left--
		if t.left == 0 {
			tasks[k] = newTask()
		}
		tool := tools[g.r.IntN(len(tools))]
		ev := &event{tool: tool.name, callID: "call_" + g.base62(24), task: t, args: tool.make(g, t)}
		if t.client != nil {
			ev.args["client"] = clone(t.client)
		}
		g.slots[i] = ev
		switch x := g.r.Float64(); {
		case tool.retry == nil && x < 0.3:
			// A tool without volatile fields, repeated with the same
			// arguments.
			cp := &event{tool: ev.tool, callID: ev.callID, task: t, args: clone(ev.args)}
			switch y := g.r.IntN(3); y {
			case 0: // another call id, close by: a collapse
				cp.callID = "call_" + g.base62(24)
				if j := g.place(i + 1 + g.r.IntN(30)); j >= 0 {
					g.slots[j] = cp
					truth.Collapse = append(truth.Collapse, []int{i + 1, j + 1})
				}
			case 1: // the same call far away: a collapse
				if j := g.place(i + cfg.Window + 50 + g.r.IntN(cfg.Window)); j >= 0 {
					g.slots[j] = cp
					truth.Collapse = append(truth.Collapse, []int{i + 1, j + 1})
				}
			default: // a plain retry with the same key: nothing to find
				if j := g.place(i + 1 + g.r.IntN(20)); j >= 0 {
					g.slots[j] = cp
				}
			}
		case x < cfg.RetryRate && tool.retry != nil:
			lines := []int{i + 1}
			at := i
			prev := ev
			ptrs := map[string]bool{}
			for n := range 1 + g.r.IntN(3) {
				at += 1 + g.r.IntN(25)
				j := g.place(at)
				if j < 0 {
					break
				}
				at = j
				re := &event{tool: ev.tool, callID: ev.callID, task: t, args: clone(prev.args)}
				for _, p := range tool.retry(g, re.args, n+2) {
					ptrs[p] = true
				}
				g.slots[j] = re
				lines = append(lines, j+1)
				prev = re
			}
			if len(lines) > 1 {
				truth.Drift = append(truth.Drift, lines)
				clusters[tool.name]++
				if varied[tool.name] == nil {
					varied[tool.name] = map[string]int{}
				}
				for p := range ptrs {
					varied[tool.name][p]++
				}
			}
		case x < cfg.RetryRate+cfg.SiblingRate && tool.sibling != nil:
			sib := &event{tool: ev.tool, callID: "call_" + g.base62(24), task: t, args: clone(ev.args)}
			tool.sibling(g, sib.args)
			if j := g.place(i + 1 + g.r.IntN(25)); j >= 0 {
				g.slots[j] = sib
			}
		}
	}
	// Render in order, the clock advancing line by line: timestamps are
	// written when their line comes.
	for _, ev := range g.slots {
		g.clock = g.clock.Add(time.Duration(200+g.r.IntN(1800)) * time.Millisecond)
		stamp(g, ev.args)
		line, err := json.Marshal(map[string]any{"task": ev.task.id, "tool": ev.tool, "call_id": ev.callID, "args": ev.args})
		if err != nil {
			return truth, err
		}
		line = append(line, '\n')
		if _, err := w.Write(line); err != nil {
			return truth, err
		}
	}
	for tool, ps := range varied {
		for p, n := range ps {
			if 2*n >= clusters[tool] {
				truth.Suggest[tool] = append(truth.Suggest[tool], p)
			}
		}
		slices.Sort(truth.Suggest[tool])
	}
	return truth, nil
}

// place returns the first free slot at or after i, or -1.
func (g *gen) place(i int) int {
	for ; i < len(g.slots); i++ {
		if g.slots[i] == nil {
			return i
		}
	}
	return -1
}

// A stamp is a value written when its line is rendered: the time of the
// attempt.
type stampKind int

const (
	stampRFC3339 stampKind = iota
	stampSQL
	stampEpochMS
	stampEpochS
)

type stampVal struct{ kind stampKind }

func stamp(g *gen, m map[string]any) {
	for k, v := range m {
		switch x := v.(type) {
		case stampVal:
			switch x.kind {
			case stampRFC3339:
				m[k] = g.clock.Format(time.RFC3339Nano)
			case stampSQL:
				m[k] = g.clock.Format("2006-01-02 15:04:05")
			case stampEpochMS:
				m[k] = g.clock.UnixMilli()
			case stampEpochS:
				m[k] = g.clock.Unix()
			}
		case map[string]any:
			stamp(g, x)
		}
	}
}

func clone(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		switch x := v.(type) {
		case map[string]any:
			c[k] = clone(x)
		case []any:
			c[k] = slices.Clone(x)
		default:
			c[k] = v
		}
	}
	return c
}

const alnum = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

func (g *gen) base62(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alnum[g.r.IntN(len(alnum))]
	}
	return string(b)
}

func (g *gen) hex(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = "0123456789abcdef"[g.r.IntN(16)]
	}
	return string(b)
}

func (g *gen) uuid() string {
	h := g.hex(32)
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:]
}

var first = []string{"ada", "grace", "alan", "edsger", "barbara", "donald", "frances", "ken", "dennis", "radia", "linus", "margaret"}
var domains = []string{"example.com", "example.org", "mail.test", "corp.example"}

func (g *gen) email() string {
	return fmt.Sprintf("%s.%d@%s", first[g.r.IntN(len(first))], g.r.IntN(1000), domains[g.r.IntN(len(domains))])
}

func (g *gen) pick(s []string) string { return s[g.r.IntN(len(s))] }

// A template is a text with slots of synonyms and numbers: rewording it
// picks other synonyms and keeps the numbers.
type template struct {
	parts [][]string // each part: one of several wordings
}

func (t template) render(g *gen, choice []int, nums []int) string {
	var b strings.Builder
	n := 0
	for k, p := range t.parts {
		if k > 0 {
			b.WriteByte(' ')
		}
		w := p[choice[k]%len(p)]
		for strings.Contains(w, "#") && n < len(nums) {
			w = strings.Replace(w, "#", fmt.Sprint(nums[n]), 1)
			n++
		}
		b.WriteString(w)
	}
	return b.String()
}

// text renders one of the templates with random wordings and the numbers.
func (g *gen) text(ts []template, nums ...int) string {
	t := ts[g.r.IntN(len(ts))]
	choice := make([]int, len(t.parts))
	for k := range choice {
		choice[k] = g.r.IntN(8)
	}
	return t.render(g, choice, nums)
}

// reword changes one or two of the text's wordings.
func (g *gen) reword(s string, ts []template) string {
	for _, t := range ts {
		// find the template and choices that render s
		if c, nums, ok := parse(t, s); ok {
			var slots []int
			for k, p := range t.parts {
				if len(p) > 1 {
					slots = append(slots, k)
				}
			}
			for range 1 + g.r.IntN(2) {
				k := slots[g.r.IntN(len(slots))]
				c[k] = (c[k] + 1 + g.r.IntN(len(t.parts[k])-1)) % len(t.parts[k])
			}
			out := t.render(g, c, nums)
			if out != s {
				return out
			}
		}
	}
	return s + " (resent)"
}

// parse finds the choices and numbers of template t that render s.
func parse(t template, s string) ([]int, []int, bool) {
	c := make([]int, len(t.parts))
	var nums []int
	rest := s
	for k, p := range t.parts {
		if k > 0 {
			if !strings.HasPrefix(rest, " ") {
				return nil, nil, false
			}
			rest = rest[1:]
		}
		found := false
		for ci, w := range p {
			pre, _, hasNum := strings.Cut(w, "#")
			if !hasNum {
				if strings.HasPrefix(rest, w) {
					c[k], rest, found = ci, rest[len(w):], true
					break
				}
				continue
			}
			if !strings.HasPrefix(rest, pre) {
				continue
			}
			r := rest[len(pre):]
			n, j := 0, 0
			for j < len(r) && r[j] >= '0' && r[j] <= '9' {
				n = n*10 + int(r[j]-'0')
				j++
			}
			post := w[len(pre)+1:]
			if j == 0 || !strings.HasPrefix(r[j:], post) {
				continue
			}
			c[k], rest, found = ci, r[j+len(post):], true
			nums = append(nums, n)
			break
		}
		if !found {
			return nil, nil, false
		}
	}
	return c, nums, rest == ""
}

var descriptions = []template{
	{[][]string{{"Payment for", "Charge for", "Billing for"}, {"order #"}, {"placed", "submitted"}, {"by the customer", "by the buyer", "online"}, {"today", "this morning"}}},
	{[][]string{{"Monthly", "Recurring"}, {"subscription", "plan"}, {"renewal", "fee"}, {"for invoice #"}}},
}

var bodies = []template{
	{[][]string{{"Hello,", "Hi,", "Dear customer,"}, {"your order #"}, {"has shipped", "is on its way", "was dispatched"}, {"and should arrive", "and will be delivered"}, {"within # days.", "in # days."}, {"Thanks!", "Thank you.", "Best regards."}}},
	{[][]string{{"Reminder:", "Friendly reminder:"}, {"invoice #"}, {"is due", "needs to be paid", "awaits payment"}, {"on the"}, {"#th.", "#th of the month."}}},
}

var titles = []template{
	{[][]string{{"Login", "Sign-in"}, {"fails", "is broken", "does not work"}, {"for user #", "for account #"}, {"after the update", "since the last release"}}},
	{[][]string{{"Export", "CSV export"}, {"times out", "hangs", "never finishes"}, {"on report #"}}},
}

var messages = []template{
	{[][]string{{"I have", "I've"}, {"reset", "restarted"}, {"the job #", "job #"}, {"and it", "and now it"}, {"runs fine", "works again", "completes normally"}, {"on my side.", "here."}}},
	{[][]string{{"Could you", "Can you", "Would you"}, {"send", "share", "attach"}, {"the logs", "the log files"}, {"for build #", "of build #"}, {"please?", "when you can?"}}},
}

var otherMessages = []template{
	{[][]string{{"Closing"}, {"this thread"}, {"as a duplicate of"}, {"ticket #."}}},
	{[][]string{{"Escalated"}, {"to the on-call"}, {"team, see incident #."}}},
}

var comments = []template{
	{[][]string{{"Deployed", "Rolled out"}, {"build #"}, {"to staging."}}},
	{[][]string{{"Customer"}, {"confirmed", "reported"}, {"the fix in case #."}}},
}

type tool struct {
	name     string
	volatile []string
	make     func(g *gen, t *task) map[string]any
	// retry changes what an attempt changes and returns the pointers it
	// changed; attempt is the attempt's number.
	retry   func(g *gen, a map[string]any, attempt int) []string
	sibling func(g *gen, a map[string]any)
}

func money(g *gen) float64 { return float64(100+g.r.IntN(99900)) / 100 }

// noisy returns v off by a few units in the last place, as a float
// computation leaves it (0.1+0.2 is 0.30000000000000004).
func noisy(g *gen, v float64) float64 {
	n := v
	for range 1 + g.r.IntN(3) {
		n = math.Nextafter(n, math.Inf(1))
	}
	return n
}

func shuffled(g *gen, s []any) []any {
	c := slices.Clone(s)
	for {
		g.r.Shuffle(len(c), func(i, j int) { c[i], c[j] = c[j], c[i] })
		if !slices.Equal(c, s) {
			return c
		}
	}
}

var tools = []tool{
	{
		name:     "charge",
		volatile: []string{"/trace_id", "/ts", "/meta/attempt"},
		make: func(g *gen, t *task) map[string]any {
			return map[string]any{
				"amount": money(g), "currency": g.pick([]string{"eur", "usd", "gbp"}), "customer_id": t.customer,
				"description": g.text(descriptions, 1000+g.r.IntN(9000)),
				"trace_id":    g.hex(32), "ts": stampVal{stampRFC3339},
				"meta": map[string]any{"session": g.uuid(), "attempt": 1, "channel": g.pick([]string{"web", "ios", "android"})},
			}
		},
		retry: func(g *gen, a map[string]any, attempt int) []string {
			a["trace_id"], a["ts"] = g.hex(32), stampVal{stampRFC3339}
			a["meta"].(map[string]any)["attempt"] = attempt
			ps := []string{"/trace_id", "/ts", "/meta/attempt"}
			if g.r.IntN(5) == 0 {
				a["amount"] = noisy(g, a["amount"].(float64))
				ps = append(ps, "/amount")
			}
			return ps
		},
		sibling: func(g *gen, a map[string]any) {
			for {
				if v := money(g); v != a["amount"] {
					a["amount"] = v
					break
				}
			}
			a["trace_id"], a["ts"] = g.hex(32), stampVal{stampRFC3339}
		},
	},
	{
		name:     "send_email",
		volatile: []string{"/sent_at_ms", "/trace_id"},
		make: func(g *gen, t *task) map[string]any {
			return map[string]any{
				"to": t.email, "subject": g.pick([]string{"Your order", "Invoice reminder", "Shipping update"}),
				"body":       g.text(bodies, 1000+g.r.IntN(9000), 2+g.r.IntN(20)),
				"sent_at_ms": stampVal{stampEpochMS}, "trace_id": g.hex(16),
			}
		},
		retry: func(g *gen, a map[string]any, _ int) []string {
			a["sent_at_ms"], a["trace_id"] = stampVal{stampEpochMS}, g.hex(16)
			ps := []string{"/sent_at_ms", "/trace_id"}
			if g.r.IntN(3) == 0 {
				a["body"] = g.reword(a["body"].(string), bodies)
				ps = append(ps, "/body")
			}
			return ps
		},
		sibling: func(g *gen, a map[string]any) {
			a["to"] = g.email()
			a["sent_at_ms"], a["trace_id"] = stampVal{stampEpochMS}, g.hex(16)
		},
	},
	{
		name:     "create_ticket",
		volatile: []string{"/client_request_id", "/created"},
		make: func(g *gen, t *task) map[string]any {
			tags := []any{"bug", "backend", "p" + fmt.Sprint(g.r.IntN(4)), g.pick([]string{"auth", "billing", "export", "search"})}
			return map[string]any{
				"title":    g.text(titles, 100+g.r.IntN(9000)),
				"priority": g.pick([]string{"low", "normal", "high", "urgent"}), "tags": tags, "reporter": t.email,
				"client_request_id": "req_" + g.base62(16), "created": stampVal{stampSQL},
			}
		},
		retry: func(g *gen, a map[string]any, _ int) []string {
			a["client_request_id"], a["created"] = "req_"+g.base62(16), stampVal{stampSQL}
			ps := []string{"/client_request_id", "/created"}
			switch g.r.IntN(4) {
			case 0:
				a["tags"] = shuffled(g, a["tags"].([]any))
				ps = append(ps, "/tags")
			case 1:
				a["title"] = g.reword(a["title"].(string), titles)
				ps = append(ps, "/title")
			}
			return ps
		},
		sibling: func(g *gen, a map[string]any) {
			for {
				if p := g.pick([]string{"low", "normal", "high", "urgent"}); p != a["priority"] {
					a["priority"] = p
					break
				}
			}
			a["client_request_id"], a["created"] = "req_"+g.base62(16), stampVal{stampSQL}
		},
	},
	{
		name:     "transfer",
		volatile: []string{"/client_ts", "/nonce"},
		make: func(g *gen, t *task) map[string]any {
			return map[string]any{
				"from": t.account, "to": fmt.Sprintf("acct_%04d", g.r.IntN(10000)), "amount_cents": 100 * (1 + g.r.IntN(5000)),
				"currency": "eur", "client_ts": stampVal{stampEpochS}, "nonce": g.uuid(),
			}
		},
		retry: func(g *gen, a map[string]any, _ int) []string {
			a["client_ts"], a["nonce"] = stampVal{stampEpochS}, g.uuid()
			return []string{"/client_ts", "/nonce"}
		},
		sibling: func(g *gen, a map[string]any) {
			a["to"] = fmt.Sprintf("acct_%04d", g.r.IntN(10000))
			a["client_ts"], a["nonce"] = stampVal{stampEpochS}, g.uuid()
		},
	},
	{
		name:     "schedule_meeting",
		volatile: []string{"/trace"},
		make: func(g *gen, t *task) map[string]any {
			start := time.Date(2025, 4, 1+g.r.IntN(20), 9+g.r.IntN(8), 0, 0, 0, time.UTC)
			return map[string]any{
				"title":     g.pick([]string{"Quarterly review", "Design sync", "Incident retro", "1:1"}),
				"attendees": []any{t.email, g.email(), g.email()}, "start": start.Format(time.RFC3339),
				"duration_min": g.pick([]string{"30", "45", "60"}), "trace": "00-" + g.hex(32) + "-" + g.hex(16) + "-01",
			}
		},
		retry: func(g *gen, a map[string]any, _ int) []string {
			a["trace"] = "00-" + g.hex(32) + "-" + g.hex(16) + "-01"
			ps := []string{"/trace"}
			if g.r.IntN(2) == 0 {
				a["attendees"] = shuffled(g, a["attendees"].([]any))
				ps = append(ps, "/attendees")
			}
			return ps
		},
		sibling: func(g *gen, a map[string]any) {
			t, _ := time.Parse(time.RFC3339, a["start"].(string))
			a["start"] = t.Add(time.Duration(1+g.r.IntN(3)) * time.Hour).Format(time.RFC3339)
			a["trace"] = "00-" + g.hex(32) + "-" + g.hex(16) + "-01"
		},
	},
	{
		name: "add_labels",
		make: func(g *gen, t *task) map[string]any {
			return map[string]any{"issue": 1 + g.r.IntN(5000), "labels": []any{"triage", g.pick([]string{"ux", "perf", "docs"}), "needs-info", "v" + fmt.Sprint(1+g.r.IntN(3))}}
		},
		retry: func(g *gen, a map[string]any, _ int) []string {
			a["labels"] = shuffled(g, a["labels"].([]any))
			return []string{"/labels"}
		},
		sibling: func(g *gen, a map[string]any) { a["issue"] = a["issue"].(int) + 1 + g.r.IntN(100) },
	},
	{
		name: "set_price",
		make: func(g *gen, t *task) map[string]any {
			return map[string]any{"sku": fmt.Sprintf("SKU-%05d", g.r.IntN(100000)), "price": money(g), "vat": g.pick([]string{"0.2", "0.07"})}
		},
		retry: func(g *gen, a map[string]any, _ int) []string {
			a["price"] = noisy(g, a["price"].(float64))
			return []string{"/price"}
		},
		sibling: func(g *gen, a map[string]any) { a["price"] = a["price"].(float64) + 1 },
	},
	{
		name: "reply",
		make: func(g *gen, t *task) map[string]any {
			return map[string]any{"thread": "th_" + fmt.Sprint(g.r.IntN(100000)),
				"message": g.text(messages, 100+g.r.IntN(9000))}
		},
		retry: func(g *gen, a map[string]any, _ int) []string {
			a["message"] = g.reword(a["message"].(string), messages)
			return []string{"/message"}
		},
		sibling: func(g *gen, a map[string]any) {
			a["message"] = g.text(otherMessages, 100+g.r.IntN(9000))
		},
	},
	{
		name: "post_comment",
		make: func(g *gen, t *task) map[string]any {
			return map[string]any{"ticket": 1 + g.r.IntN(90000),
				"text": g.text(comments, 100+g.r.IntN(9000))}
		},
		sibling: func(g *gen, a map[string]any) {
			a["text"] = g.text(otherMessages, 100+g.r.IntN(9000))
		},
	},
}
