package drift

import (
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/derive/diff"
)

// Finish waits for the calls added so far and returns the report: the
// retry rule learnt from the whole log, then the collapses and the drift
// clusters it decides.
func (a *Analyzer) Finish() *Report {
	a.drain()
	rule := a.retryRule()
	idsTell := a.callIDsTell(rule)
	collapses := a.collapses(idsTell)
	clusters := a.clusters(rule, idsTell)
	rep := &Report{Calls: a.calls}
	for _, f := range a.driftFindings(clusters) {
		if len(f.Keys) > 1 {
			rep.Findings = append(rep.Findings, f)
		}
	}
	sort.SliceStable(rep.Findings, func(i, j int) bool { return rep.Findings[i].Lines[0] < rep.Findings[j].Lines[0] })
	rep.Suggestions = suggestions(&a.o, rep.Findings)
	rep.Findings = append(rep.Findings, collapses...)
	return rep
}

// drain hands every shard its last calls and waits for them.
func (a *Analyzer) drain() {
	for _, s := range a.shards {
		if len(s.pending) > 0 {
			s.in <- s.pending
			s.pending = nil
		}
		close(s.in)
	}
	a.wg.Wait()
}

// counterKey names a counter: a tool and a pointer.
type counterKey struct{ tool, ptr string }

// retryRule is what the whole log says of its fields: per tool and leaf,
// how often near-duplicate pairs differ there (freshness), and per tool
// and pointer, how many integer differences are steps of 1 to MaxStep.
type retryRule struct {
	o        *Options
	stats    map[uint64][2]int32
	counters map[counterKey][2]int32
}

// retryRule merges the shards' statistics into the rule.
func (a *Analyzer) retryRule() *retryRule {
	r := &retryRule{o: &a.o, stats: map[uint64][2]int32{}, counters: map[counterKey][2]int32{}}
	for _, s := range a.shards {
		for k, v := range s.stats {
			t := r.stats[k]
			t[0] += v[0]
			t[1] += v[1]
			r.stats[k] = t
		}
		s.stats = nil
		for k, v := range s.counters {
			key := counterKey{s.names.strs[k[0]], s.names.strs[k[1]]}
			c := r.counters[key]
			c[0] += v[0]
			c[1] += v[1]
			r.counters[key] = c
		}
		s.counters = nil
	}
	return r
}

// fresh tells whether the tool's leaf differs in most near-duplicate
// pairs that have it on both sides.
func (r *retryRule) fresh(tool string, unit uint64) bool {
	t := r.stats[mix(hashString(tool)^unit)]
	return t[0] > 0 && float64(t[1]) >= r.o.MinFresh*float64(t[0])
}

// retry tells whether every difference of the pair is one a retry makes.
func (r *retryRule) retry(s *shard, p *pair) bool {
	tool := s.names.strs[s.kept[p.a].tool]
	for _, e := range s.pairEntries(p) {
		var ok bool
		switch e.kind {
		case kReordered, kFloat:
			ok = true
		case kTimestamp:
			ok = e.near
		case kID:
			ok = r.fresh(tool, e.unit)
		case kCounter:
			c := r.counters[counterKey{tool, s.names.strs[e.ptr]}]
			// An attempt counter steps up in most differences at its
			// pointer, and like every regenerated field it differs in
			// most near-duplicate pairs: a quantity that a distinct
			// call raised by one does not.
			ok = e.step >= 1 && int(e.step) <= r.o.MaxStep && float64(c[1]) >= r.o.CounterShare*float64(c[0]) && r.fresh(tool, e.unit)
		case kReworded:
			ok = e.near
		}
		if !ok {
			return false
		}
	}
	return true
}

// callIDsTell decides whether the log's call ids tell distinct calls
// apart. A call id is the model's tool call id, which its retries keep:
// two ids are two calls, unless the log shows otherwise (most retry-like
// pairs, and more than one, carry different ids: a log that gives every
// attempt an id of its own).
func (a *Analyzer) callIDsTell(rule *retryRule) bool {
	same, other := 0, 0
	for _, s := range a.shards {
		for k := range s.pairs {
			p := &s.pairs[k]
			ia, ib := s.bytes.get(s.kept[p.a].callID), s.bytes.get(s.kept[p.b].callID)
			if len(ia) > 0 && len(ib) > 0 && rule.retry(s, p) {
				if string(ia) == string(ib) {
					same++
				} else {
					other++
				}
			}
		}
		same += s.sameIDs // consecutive calls of one key, close enough to be retries
		other += s.otherIDs
	}
	return !(other > same && other >= 2)
}

// collapses are the keys shared by consecutive calls that the retry rule
// would not join, by the same judgment of distance and call ids as for
// the retry pairs. Then what they need can go.
func (a *Analyzer) collapses(idsTell bool) []Finding {
	var collapses []Finding
	for _, s := range a.shards {
		for _, g := range s.multi {
			why := g.far
			if g.idsDiffer && idsTell {
				why = "the calls carry different call ids"
			}
			if why == "" {
				continue
			}
			collapses = append(collapses, Finding{Kind: FindingCollapse, Task: g.task, Tool: g.tool,
				Lines: g.lines, Keys: [][32]byte{g.key}, CallIDs: g.callIDs, Reason: why})
		}
		s.keys, s.first, s.multi, s.ring, s.cur, s.prev, s.recent, s.keptAt, s.steps = nil, nil, nil, nil, nil, nil, nil, nil, nil
		s.ids = arena{}
	}
	sort.Slice(collapses, func(i, j int) bool { return collapses[i].Lines[0] < collapses[j].Lines[0] })
	return collapses
}

// clusters are the connected components of the retry pairs, per shard.
func (a *Analyzer) clusters(rule *retryRule, idsTell bool) []*cluster {
	var clusters []*cluster
	for si, s := range a.shards {
		parent := make([]int32, len(s.kept))
		for k := range parent {
			parent[k] = int32(k)
		}
		find := func(x int32) int32 {
			for parent[x] != x {
				parent[x] = parent[parent[x]]
				x = parent[x]
			}
			return x
		}
		accepted := s.pairs[:0]
		for _, p := range s.pairs {
			ia, ib := s.bytes.get(s.kept[p.a].callID), s.bytes.get(s.kept[p.b].callID)
			if idsTell && len(ia) > 0 && len(ib) > 0 && string(ia) != string(ib) {
				continue // two calls the model made, not one retried
			}
			if rule.retry(s, &p) {
				accepted = append(accepted, p)
				ra, rb := find(p.a), find(p.b)
				if ra != rb {
					parent[max(ra, rb)] = min(ra, rb)
				}
			}
		}
		byRoot := map[int32]*cluster{}
		for _, p := range accepted {
			r := find(p.a)
			c := byRoot[r]
			if c == nil {
				c = &cluster{shard: si, kinds: map[string]string{}}
				byRoot[r] = c
				clusters = append(clusters, c)
			}
			c.members = append(c.members, p.a, p.b)
			for _, e := range s.pairEntries(&p) {
				if ptr := s.names.strs[e.ptr]; c.kinds[ptr] == "" {
					c.kinds[ptr] = kindNames[e.kind]
				}
			}
		}
		s.pairs, s.entries = nil, nil
	}
	return clusters
}

// driftFindings describes each cluster, on every core, then lets the
// shards' calls go.
func (a *Analyzer) driftFindings(clusters []*cluster) []Finding {
	findings := make([]Finding, len(clusters))
	var wg sync.WaitGroup
	next := make(chan int, len(clusters))
	for k := range clusters {
		next <- k
	}
	close(next)
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				findings[k] = a.driftFinding(clusters[k])
				clusters[k] = nil
			}
		}()
	}
	wg.Wait()
	for _, s := range a.shards {
		s.kept, s.bytes = nil, arena{}
	}
	return findings
}

type cluster struct {
	shard   int
	members []int32           // indices into the shard's kept calls
	kinds   map[string]string // varying pointer → kind
}

func (a *Analyzer) driftFinding(c *cluster) Finding {
	s := a.shards[c.shard]
	slices.Sort(c.members)
	c.members = slices.Compact(c.members)
	slices.SortFunc(c.members, func(x, y int32) int { return s.kept[x].line - s.kept[y].line }) // lines ascending
	first := &s.kept[c.members[0]]
	f := Finding{Kind: FindingDrift, Task: s.names.strs[first.task], Tool: s.names.strs[first.tool]}
	seen := make(map[[32]byte]struct{}, 2)
	for _, q := range c.members {
		k := &s.kept[q]
		f.Lines = append(f.Lines, k.line)
		if _, ok := seen[k.key]; !ok {
			seen[k.key] = struct{}{}
			f.Keys = append(f.Keys, k.key)
		}
	}
	for p, kind := range c.kinds {
		v := Variation{Pointer: p, Kind: kind, Regenerated: diff.Regenerated(p, kindShape(kind))}
		if !v.Regenerated {
			v.Advice = diff.Advice(kindShape(kind), kind)
		}
		f.Variations = append(f.Variations, v)
	}
	slices.SortFunc(f.Variations, func(x, y Variation) int { return strings.Compare(x.Pointer, y.Pointer) })
	for _, v := range f.Variations {
		switch {
		case !v.Regenerated:
			// A value of the effect, or one that may be: never left out,
			// which would let distinct writes share a key.
			f.SendSame = append(f.SendSame, v.Pointer)
		case len(f.Omit) > 0 && under(v.Pointer, f.Omit[len(f.Omit)-1]):
		default:
			f.Omit = append(f.Omit, v.Pointer)
		}
	}
	if a.o.Rekey != nil && len(f.SendSame) == 0 {
		f.Verified = true
		var key [32]byte
		for n, q := range c.members {
			k := &s.kept[q]
			doc, err := canon.Parse(s.bytes.get(k.text), a.o.Scheme)
			if err != nil {
				f.Verified = false
				break
			}
			got, err := a.o.Rekey(f.Task, f.Tool, doc.Root(), f.Omit)
			if err != nil || n > 0 && got != key {
				f.Verified = false
				break
			}
			key = got
		}
	}
	return f
}

// suggestions gives each tool the pointers that vary in at least Share of
// its drift clusters.
func suggestions(o *Options, fs []Finding) []Suggestion {
	type tally struct {
		clusters int
		ptrs     map[string]int
	}
	tools := map[string]*tally{}
	for _, f := range fs {
		t := tools[f.Tool]
		if t == nil {
			t = &tally{ptrs: map[string]int{}}
			tools[f.Tool] = t
		}
		t.clusters++
		for _, p := range f.Omit {
			t.ptrs[p]++
		}
	}
	var out []Suggestion
	for tool, t := range tools {
		s := Suggestion{Tool: tool, Clusters: t.clusters}
		for p, n := range t.ptrs {
			if float64(n) >= o.Share*float64(t.clusters) {
				s.Omit = append(s.Omit, p)
			}
		}
		if len(s.Omit) > 0 {
			slices.Sort(s.Omit)
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(x, y Suggestion) int { return strings.Compare(x.Tool, y.Tool) })
	return out
}

// kindShape is the shape of the values of a variation kind.
func kindShape(kind string) diff.Shape {
	switch kind {
	case KindTimestamp:
		return diff.ShapeTime
	case KindID:
		return diff.ShapeID
	case KindCounter:
		return diff.ShapeCounter
	}
	return diff.ShapeOther
}
