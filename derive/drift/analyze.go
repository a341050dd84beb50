package drift

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/derive/diff"
)

// Analyzer runs one analysis. Add the calls in log order, then Finish.
type Analyzer struct {
	o      Options
	shards []*shard
	wg     sync.WaitGroup
	calls  int
}

// New starts an analysis. Calls are spread over one shard per core by
// task (a task's own sequence of calls decides what is far apart); each
// shard sees its calls in log order.
func New(o Options) *Analyzer {
	o = o.withDefaults()
	a := &Analyzer{o: o}
	n := max(1, min(runtime.GOMAXPROCS(0), 4))
	for range n {
		s := newShard(&a.o)
		a.shards = append(a.shards, s)
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			for batch := range s.in {
				for _, p := range batch {
					s.add(p)
				}
			}
		}()
	}
	return a
}

const batchSize = 256

// Add adds a prepared call; calls must come in log order.
func (a *Analyzer) Add(p *Prepared) {
	a.calls++
	s := a.shards[p.taskH%uint64(len(a.shards))]
	s.pending = append(s.pending, p)
	if len(s.pending) == batchSize {
		s.in <- s.pending
		s.pending = make([]*Prepared, 0, batchSize)
	}
}

// shard holds the state of the calls of some tasks and tools.
type shard struct {
	o       *Options
	in      chan []*Prepared
	pending []*Prepared

	seq     int64
	ring    []*Prepared
	mask    int64
	cur     *bucketTable // bucket → seq of its latest call, this generation
	prev    *bucketTable // and the one before
	genLine int
	recent  map[uint64][]int64 // group → seqs of its latest calls

	pairs    []pair
	entries  []entry
	counters map[[2]int32][2]int32 // tool and pointer (in names) → integer differences, steps of 1 to MaxStep
	idents   map[int32]bool        // pointer (in names) → whether it names identity (diff.Identity)
	keptAt   map[int64]int32       // seq → index into kept
	kept     []kept                // no pointers: the collector does not scan them
	bytes    arena                 // texts and call ids of kept calls
	ids      arena                 // call ids of keys
	names    strTable              // tasks, tools and pointers
	stats    map[uint64]*[2]int32  // tool and leaf pointer → near-duplicate pairs having it on both sides, differing

	ptrNames map[uint64]string // leaf pointer hash → pointer

	keys  map[uint64]int32 // the key's first 64 bits → index into first
	first []keyState
	multi map[int32]*keyGroup
	steps map[string]int32 // task → its calls so far that were the first of their keys

	// Consecutive calls of one key, close enough to be one call retried,
	// that carry call ids: the same ids, or different ones (evidence of
	// whether the log keeps call ids across attempts, with the retry
	// pairs').
	sameIDs, otherIDs int

	cand []int64
}

// kept is what is kept of a call that is part of a near-duplicate pair.
type kept struct {
	line       int
	task, tool int32 // in names
	callID     span
	text       span
	key        [32]byte
}

// keyState is the latest call of a key.
type keyState struct {
	line   int
	time   int64
	step   int32
	callID span
	group  int32 // index into multi, or -1
}

// arena holds bytes in large blocks, so that millions of small texts cost
// the collector nothing to scan.
type arena struct{ blocks [][]byte }

// span is a run of bytes in an arena.
type span struct{ block, off, n uint32 }

const arenaBlock = 4 << 20

func (a *arena) add(b []byte) span {
	if len(b) == 0 {
		return span{}
	}
	k := len(a.blocks) - 1
	if k < 0 || len(a.blocks[k])+len(b) > cap(a.blocks[k]) {
		a.blocks = append(a.blocks, make([]byte, 0, max(arenaBlock, len(b))))
		k++
	}
	off := len(a.blocks[k])
	a.blocks[k] = append(a.blocks[k], b...)
	return span{uint32(k), uint32(off), uint32(len(b))}
}

func (a *arena) addString(s string) span {
	if s == "" {
		return span{}
	}
	return a.add([]byte(s))
}

func (a *arena) get(sp span) []byte {
	if sp.n == 0 {
		return nil
	}
	return a.blocks[sp.block][sp.off : sp.off+sp.n]
}

func (a *arena) str(sp span) string { return string(a.get(sp)) }

// strTable numbers strings.
type strTable struct {
	ids  map[string]int32
	strs []string
}

func (t *strTable) id(s string) int32 {
	if k, ok := t.ids[s]; ok {
		return k
	}
	if t.ids == nil {
		t.ids = map[string]int32{}
	}
	k := int32(len(t.strs))
	t.ids[s] = k
	t.strs = append(t.strs, s)
	return k
}

// keyGroup is a key shared by several calls.
type keyGroup struct {
	task, tool string
	key        [32]byte
	lines      []int
	callIDs    []string            // distinct, in order of appearance
	seen       map[string]struct{} // callIDs, as a set
	far        string              // why two consecutive calls lie too far apart to be one call retried, or ""
	idsDiffer  bool                // two consecutive calls carry different call ids
}

// addID adds a call id to the group's, once.
func (g *keyGroup) addID(id string) {
	if id == "" {
		return
	}
	if _, ok := g.seen[id]; ok {
		return
	}
	if g.seen == nil {
		g.seen = map[string]struct{}{}
	}
	g.seen[id] = struct{}{}
	g.callIDs = append(g.callIDs, id)
}

func newShard(o *Options) *shard {
	size := int64(1)
	for size < int64(2*o.Window+64) {
		size <<= 1
	}
	return &shard{
		o: o, in: make(chan []*Prepared, 8), pending: make([]*Prepared, 0, batchSize),
		ring: make([]*Prepared, size), mask: size - 1,
		cur: newBucketTable(), prev: newBucketTable(), recent: map[uint64][]int64{},
		keptAt: map[int64]int32{}, stats: map[uint64]*[2]int32{},
		keys: map[uint64]int32{}, multi: map[int32]*keyGroup{}, steps: map[string]int32{},
		ptrNames: map[uint64]string{}, counters: map[[2]int32][2]int32{},
	}
}

func (s *shard) lookup(b uint64) (int64, bool) {
	if q, ok := s.cur.get(b); ok {
		return q, true
	}
	return s.prev.get(b)
}

// stableChain is how many earlier calls with the same stable hash a call
// is compared with.
const stableChain = 6

// maxLeafBuckets bounds the single-leaf buckets of a call.
const maxLeafBuckets = 64

func (s *shard) add(p *Prepared) {
	o := s.o
	if p.line-s.genLine > o.Window {
		s.prev, s.cur = s.cur, s.prev
		s.cur.reset()
		s.genLine = p.line
	}
	seq := s.seq
	s.seq++
	s.ring[seq&s.mask] = p
	p.seq = seq
	// The task's own sequence: its calls that were the first of their
	// keys (a repeat, however many times, is one call).
	_, seen := s.keys[binary.LittleEndian.Uint64(p.key[:8])]
	p.fresh = !seen
	step := s.steps[p.task]
	if p.fresh {
		step++
		s.steps[p.task] = step
	}
	p.step = step
	s.cand = s.cand[:0]
	consider := func(q int64) {
		for _, c := range s.cand {
			if c == q {
				return
			}
		}
		s.cand = append(s.cand, q)
	}
	// One bucket per leaf left out finds every single-leaf difference;
	// calls with very many leaves rely on the MinHash bands and the recent
	// calls instead, so that no call costs more than a bounded number of
	// buckets.
	if len(p.leaves) <= maxLeafBuckets {
		for _, l := range p.leaves {
			b := mix(p.group^(p.sum-l.unit())) ^ mix(l.ptr+0x2545f4914f6cdd1d)
			if q, ok := s.lookup(b); ok {
				consider(q)
			}
			s.cur.put(b, seq)
		}
	}
	for _, b := range p.bands {
		if q, ok := s.lookup(b); ok {
			consider(q)
		}
		s.cur.put(b, seq)
	}
	// The calls with the same stable hash, latest first: a retry however
	// many of its volatile leaves changed, and however far back in the
	// window its original lies.
	sb := mix(p.group^p.stable) ^ 0x6c8e9cf570932bd5
	p.sigPrev = -1
	if q, ok := s.lookup(sb); ok {
		p.sigPrev = q
		for k := 0; k < stableChain && q >= 0 && q >= seq-s.mask; k++ {
			prev := s.ring[q&s.mask]
			if prev == nil || prev.seq != q || p.line-prev.line > o.Window {
				break
			}
			consider(q)
			q = prev.sigPrev
		}
	}
	s.cur.put(sb, seq)
	rec := s.recent[p.group]
	for _, q := range rec {
		consider(q)
	}
	if len(rec) < o.Recent {
		rec = append(rec, seq)
	} else {
		copy(rec, rec[1:])
		rec[len(rec)-1] = seq
	}
	s.recent[p.group] = rec
	for _, q := range s.cand {
		if q < seq-s.mask {
			continue // gone from the ring
		}
		if prev := s.ring[q&s.mask]; prev != nil && prev.seq == q {
			s.compare(prev, p)
		}
	}
	s.trackKey(p)
}

// compare looks at a candidate pair: a, earlier, and b.
func (s *shard) compare(a, b *Prepared) {
	o := s.o
	if a.group != b.group || a.task != b.task || a.tool != b.tool || o.far(a.time, a.step, b) != "" {
		return
	}
	d, total := leafDiff(a.leaves, b.leaves)
	if d == 0 || d > o.MaxLeaves || float64(d) > max(1, o.MaxFraction*float64(total)) {
		return
	}
	if a.key == b.key {
		return
	}
	entries, ok := s.detail(a, b)
	if !ok {
		return
	}
	// A near-duplicate pair (every difference of a volatile kind) of the
	// same shape (the same leaves): count, for each leaf, whether it
	// differs. Pairs of distinct calls that differ in a business field
	// say nothing about which fields are regenerated.
	toolH := hashString(a.tool)
	i, j := 0, 0
	for len(a.leaves) == len(b.leaves) && i < len(a.leaves) && j < len(b.leaves) {
		la, lb := a.leaves[i], b.leaves[j]
		switch {
		case la.ptr == lb.ptr:
			st := s.stats[mix(toolH^la.ptr)]
			if st == nil {
				st = new([2]int32)
				s.stats[mix(toolH^la.ptr)] = st
			}
			st[0]++
			if la.val != lb.val {
				st[1]++
			}
			i++
			j++
		case la.ptr < lb.ptr:
			i++
		default:
			j++
		}
	}
	s.pairs = append(s.pairs, pair{a: s.keep(a), b: s.keep(b), off: uint32(len(s.entries)), n: uint32(len(entries))})
	s.entries = append(s.entries, entries...)
}

// keep keeps what the report needs of a call of a near-duplicate pair.
func (s *shard) keep(p *Prepared) int32 {
	if k, ok := s.keptAt[p.seq]; ok {
		return k
	}
	k := int32(len(s.kept))
	s.keptAt[p.seq] = k
	s.kept = append(s.kept, kept{line: p.line, task: s.names.id(p.task), tool: s.names.id(p.tool),
		callID: s.bytes.addString(p.callID), text: s.bytes.add(p.text), key: p.key})
	return k
}

// pair is a near-duplicate pair with different keys whose differences
// are all of the volatile kinds (before the statistics decide).
type pair struct {
	a, b   int32  // indices into the shard's kept calls
	off, n uint32 // its entries in the shard's entries
}

func (s *shard) pairEntries(p *pair) []entry { return s.entries[p.off : p.off+p.n] }

// entry is one difference of a pair, classified.
type entry struct {
	ptr  int32  // in names: the pointer, relative to the arguments
	unit uint64 // hash of the pointer of its leaf
	step int32  // counters: later minus earlier
	kind uint8
	near bool // timestamps: within TimeGap; texts: similar
}

// Kinds, compactly.
const (
	kOther uint8 = iota
	kTimestamp
	kID
	kCounter
	kFloat
	kReordered
	kReworded
)

var kindNames = [...]string{KindOther, KindTimestamp, KindID, KindCounter, KindFloat, KindReordered, KindReworded}

// pointer returns the pointer of a leaf of p, which it learns from p's
// text the first time.
func (s *shard) pointer(p *Prepared, l leaf) string {
	if name, ok := s.ptrNames[l.ptr]; ok {
		return name
	}
	name := pointerAt(p.text, int(l.off))
	s.ptrNames[l.ptr] = name
	return name
}

// detail classifies each leaf where two calls differ. It gives up (false)
// as soon as a difference is of no volatile kind: such a pair is two
// distinct calls.
func (s *shard) detail(a, b *Prepared) ([]entry, bool) {
	var out []entry
	i, j := 0, 0
	tool := s.names.id(a.tool)
	add := func(ptr string, e entry) bool {
		if s.o.ignored(ptr) {
			return true
		}
		if (e.kind == kID || e.kind == kTimestamp || e.kind == kCounter) && s.identity(ptr) {
			// Another tenant, account or key: two writes, whatever the
			// values look like.
			e.kind = kOther
		}
		if !e.possible(s.o) {
			// Distinct calls: their differences say nothing about which
			// fields a retry regenerates.
			return false
		}
		e.ptr = s.names.id(ptr)
		for _, x := range out {
			if x.ptr == e.ptr {
				return true
			}
		}
		out = append(out, e)
		return len(out) <= s.o.MaxLeaves
	}
	// Scalars first, texts after, arrays (which may need the diff engine)
	// last: a distinct pair is given up at its cheapest difference.
	var arrays, texts [][2]leaf
	for i < len(a.leaves) || j < len(b.leaves) {
		switch {
		case j == len(b.leaves) || i < len(a.leaves) && a.leaves[i].ptr < b.leaves[j].ptr:
			if !add(s.pointer(a, a.leaves[i]), entry{kind: kOther}) { // only a has it
				return nil, false
			}
			i++
		case i == len(a.leaves) || b.leaves[j].ptr < a.leaves[i].ptr:
			if !add(s.pointer(b, b.leaves[j]), entry{kind: kOther}) {
				return nil, false
			}
			j++
		default:
			la, lb := a.leaves[i], b.leaves[j]
			i++
			j++
			if la.val == lb.val {
				continue
			}
			if la.array && lb.array {
				arrays = append(arrays, [2]leaf{la, lb})
				continue
			}
			if va := a.text[la.off:la.end]; va[0] == '"' && bytes.IndexByte(va, ' ') >= 0 {
				texts = append(texts, [2]leaf{la, lb}) // maybe reworded: compared after the cheaper differences
				continue
			}
			e := classifyValues(s.o, a.text[la.off:la.end], b.text[lb.off:lb.end])
			e.unit = la.ptr
			if !add(s.pointer(a, la), e) {
				return nil, false
			}
		}
	}
	for _, ab := range texts {
		la, lb := ab[0], ab[1]
		e := classifyValues(s.o, a.text[la.off:la.end], b.text[lb.off:lb.end])
		e.unit = la.ptr
		if !add(s.pointer(a, la), e) {
			return nil, false
		}
	}
	for _, ab := range arrays {
		la, lb := ab[0], ab[1]
		ptr := s.pointer(a, la)
		if la.ms == lb.ms {
			if !add(ptr, entry{unit: la.ptr, kind: kReordered, near: true}) {
				return nil, false
			}
			continue
		}
		// Changed inside: the diff engine says where and how.
		for _, d := range s.inside(ptr, a.text[la.off:la.end], b.text[lb.off:lb.end]) {
			d.e.unit = la.ptr
			if !add(d.ptr, d.e) {
				return nil, false
			}
		}
	}
	if len(out) == 0 {
		return nil, false
	}
	// The integer differences of a near-duplicate pair, for the counter
	// statistics.
	for _, e := range out {
		if e.kind == kCounter {
			c := s.counters[[2]int32{tool, e.ptr}]
			c[0]++
			if e.step >= 1 && int(e.step) <= s.o.MaxStep {
				c[1]++
			}
			s.counters[[2]int32{tool, e.ptr}] = c
		}
	}
	return out, true
}

// identity reports whether a pointer names who a call acts for
// (diff.Identity), remembered per pointer.
func (s *shard) identity(ptr string) bool {
	id := s.names.id(ptr)
	v, ok := s.idents[id]
	if !ok {
		v = diff.Identity(ptr)
		if s.idents == nil {
			s.idents = map[int32]bool{}
		}
		s.idents[id] = v
	}
	return v
}

// possible reports whether a difference can be part of a retry at all,
// before the log's statistics say whether it is: a counter that steps up
// by 1 to MaxStep, timestamps within TimeGap, a text reworded, and the
// kinds that are volatile by themselves.
func (e entry) possible(o *Options) bool {
	switch e.kind {
	case kOther:
		return false
	case kCounter:
		return e.step >= 1 && int(e.step) <= o.MaxStep
	case kTimestamp, kReworded:
		return e.near
	}
	return true
}

// ptrEntry is a difference and its pointer.
type ptrEntry struct {
	ptr string
	e   entry
}

// inside compares two arrays with the diff engine.
func (s *shard) inside(at string, va, vb []byte) []ptrEntry {
	da, err1 := canon.Parse(va, canon.JS)
	db, err2 := canon.Parse(vb, canon.JS)
	if err1 != nil || err2 != nil {
		return []ptrEntry{{at, entry{kind: kOther}}}
	}
	sa := &diff.Side{Name: "a", Doc: da, Task: "t", Tool: "t", Args: da.Root()}
	sb := &diff.Side{Name: "b", Doc: db, Task: "t", Tool: "t", Args: db.Root()}
	res := diff.Compare(sa, sb, diff.Options{Scheme: canon.JS, Max: s.o.MaxLeaves + 1})
	var out []ptrEntry
	for _, en := range res.Diffs.Items {
		ptr, _ := strings.CutPrefix(en.Pointer, "/args")
		e := classify(s.o, en)
		if e.kind == kReordered && en.Kind == diff.KindElemMoved {
			ptr = parentPointer(ptr)
		}
		out = append(out, ptrEntry{at + ptr, e})
	}
	if res.Diffs.Omitted > 0 {
		out = append(out, ptrEntry{at, entry{kind: kOther}})
	}
	return out
}

func parentPointer(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// trackKey records the call under its key, for collapses: a key shared
// by two consecutive calls that the retry rule would not join as one call
// retried (far apart, or, where the log keeps call ids across attempts,
// carrying different ones; Finish decides that last).
func (s *shard) trackKey(p *Prepared) {
	k64 := binary.LittleEndian.Uint64(p.key[:8])
	idx, ok := s.keys[k64]
	if !ok {
		s.keys[k64] = int32(len(s.first))
		s.first = append(s.first, keyState{line: p.line, time: p.time, step: p.step, callID: s.ids.addString(p.callID), group: -1})
		return
	}
	st := &s.first[idx]
	g := s.multi[st.group]
	if st.group < 0 {
		g = &keyGroup{task: p.task, tool: p.tool, key: p.key, lines: []int{st.line}}
		g.addID(s.ids.str(st.callID))
		st.group = int32(len(s.multi))
		s.multi[st.group] = g
	}
	g.lines = append(g.lines, p.line)
	g.addID(p.callID)
	prevID := s.ids.get(st.callID)
	far := s.o.far(st.time, st.step, p)
	if far != "" && g.far == "" {
		g.far = far
	}
	if len(prevID) > 0 && p.callID != "" {
		switch {
		case string(prevID) != p.callID:
			g.idsDiffer = true
			if far == "" {
				s.otherIDs++
			}
		case far == "":
			s.sameIDs++
		}
	}
	st.line, st.time, st.step = p.line, p.time, p.step
	if p.callID != "" && string(prevID) != p.callID {
		st.callID = s.ids.addString(p.callID)
	}
}

// far says why two calls of one task, a (at time aTime and step aStep) and
// later b, lie too far apart to be one call retried, or "" when they do
// not: judged by the task's own
// sequence (more than MaxBetween calls of the task between them that are
// not themselves repeats) and by time (more than WindowTime, when both
// times are known), never by lines of the log, whose other tasks' calls say
// nothing about these two.
func (o *Options) far(aTime int64, aStep int32, b *Prepared) string {
	between := b.step - aStep
	if b.fresh {
		between-- // b itself
	}
	switch {
	case int(between) > max(o.MaxBetween, 0):
		return fmt.Sprintf("the calls lie far apart: %d other calls of the task between them", between)
	case aTime != 0 && b.time != 0 && absDur(b.time-aTime) > int64(o.WindowTime):
		return "the calls lie far apart in time: " + time.Duration(absDur(b.time-aTime)).Round(time.Second).String()
	}
	return ""
}

func absDur(d int64) int64 {
	if d < 0 {
		return -d
	}
	return d
}

// ignored reports whether a pointer lies outside what the caller's key
// covers (under an --omit pointer, or outside every --only pointer).
func (o *Options) ignored(p string) bool {
	for _, q := range o.Omit {
		if under(p, q) {
			return true
		}
	}
	if len(o.Only) == 0 {
		return false
	}
	for _, q := range o.Only {
		if under(p, q) || under(q, p) {
			return false
		}
	}
	return true
}

// under reports whether pointer p is q or lies inside it.
func under(p, q string) bool {
	return p == q || strings.HasPrefix(p, q) && len(p) > len(q) && p[len(q)] == '/'
}

// bucketTable maps buckets to the seq of their latest call: open
// addressing with linear probing, cleared in place from generation to
// generation (no map churn, nothing for the collector to scan).
type bucketTable struct {
	keys []uint64 // 0: empty
	vals []int64
	n    int
	mask uint64
}

func newBucketTable() *bucketTable {
	const size = 1 << 12
	return &bucketTable{keys: make([]uint64, size), vals: make([]int64, size), mask: size - 1}
}

func (t *bucketTable) get(k uint64) (int64, bool) {
	if k == 0 {
		k = 1
	}
	for i := k & t.mask; ; i = (i + 1) & t.mask {
		switch t.keys[i] {
		case k:
			return t.vals[i], true
		case 0:
			return 0, false
		}
	}
}

func (t *bucketTable) put(k uint64, v int64) {
	if k == 0 {
		k = 1
	}
	if 2*(t.n+1) > len(t.keys) {
		t.grow()
	}
	for i := k & t.mask; ; i = (i + 1) & t.mask {
		switch t.keys[i] {
		case k:
			t.vals[i] = v
			return
		case 0:
			t.keys[i], t.vals[i] = k, v
			t.n++
			return
		}
	}
}

func (t *bucketTable) grow() {
	old := *t
	size := 2 * len(old.keys)
	*t = bucketTable{keys: make([]uint64, size), vals: make([]int64, size), mask: uint64(size - 1)}
	for i, k := range old.keys {
		if k != 0 {
			t.put(k, old.vals[i])
		}
	}
}

func (t *bucketTable) reset() {
	clear(t.keys)
	t.n = 0
}
