package drift

import (
	"bytes"
	"encoding/binary"
	"slices"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/derive/diff"
)

// leaf is one leaf of the flattened arguments: a scalar, an empty object
// or a whole array, at a pointer. Pointers and values are hashed; the
// value's canonical text is text[off:end] of its call.
type leaf struct {
	ptr      uint64 // hash of the pointer
	val      uint64 // hash of the canonical text (arrays: in order)
	ms       uint64 // arrays: hash of the multiset of elements; otherwise val
	off, end uint32
	array    bool
}

// unit is the leaf's contribution to the hash of a leaf set.
func (l leaf) unit() uint64 { return mix(l.ptr ^ mix(l.val+0x9e3779b97f4a7c15)) }

// Prepared is a call ready for the analysis: its leaves hashed, its
// arguments in canonical form. Prepare is safe for concurrent use, so that
// callers can prepare on every core and Add in log order.
type Prepared struct {
	seq     int64 // position in its shard
	line    int
	task    string
	tool    string
	callID  string
	time    int64
	key     [32]byte
	leaves  []leaf // sorted by ptr
	sum     uint64 // Σ unit hashes
	bands   [lshBands]uint64
	stable  uint64 // hash of the leaves whose values do not look volatile (see stableUnit)
	sigPrev int64  // seq of the previous call of its shard with the same stable hash, or -1
	text    []byte // canonical arguments
	group   uint64 // hash of task and tool
	taskH   uint64 // hash of the task: its shard
	fresh   bool   // the first call of its key
	step    int32  // the task's calls up to this one that were the first of their keys
}

// Line returns the call's line.
func (p *Prepared) Line() int { return p.line }

// MinHash banding: lshBands bands of lshRows rows each.
const (
	lshBands = 6
	lshRows  = 2
)

// hashBytes is a 64-bit hash of b, the same in every run (so that the
// MinHash bands, and with them the findings, do not vary from run to run):
// a multiply-xorshift per 8-byte word and MurmurHash3's finalizer.
func hashBytes(b []byte) uint64 {
	h := uint64(len(b))*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
	for len(b) >= 8 {
		h ^= binary.LittleEndian.Uint64(b)
		h *= 0x9fb21c651e98df25
		h ^= h >> 28
		b = b[8:]
	}
	var t uint64
	for i := 0; i < len(b); i++ {
		t |= uint64(b[i]) << (8 * i)
	}
	return mix(h ^ t ^ 0xd6e8feb86659fd93)
}

func hashString(s string) uint64 { return hashBytes([]byte(s)) }

var lshSeeds = func() [lshBands * lshRows]uint64 {
	var s [lshBands * lshRows]uint64
	for i := range s {
		s[i] = mix(uint64(i+1) * 0xbf58476d1ce4e5b9)
	}
	return s
}()

// mix is a 64-bit finalizer (MurmurHash3's fmix64).
func mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

const rootPtr = 0x51ed270b27f4a3c1

// Scratch is memory that Prepare reuses; one per goroutine.
type Scratch struct{ leaves []leaf }

// Prepare hashes a call's leaves. The arguments are written in canonical
// form once and scanned: every leaf's canonical text is a slice of it.
func Prepare(c Call, sc *Scratch) *Prepared {
	p := &Prepared{line: c.Line, task: c.Task, tool: c.Tool, callID: c.CallID, time: c.Time, key: c.Key}
	p.taskH = hashString(c.Task)
	p.group = mix(p.taskH ^ mix(hashString(c.Tool)+1))
	p.text = c.Text
	if p.text == nil {
		p.text = c.Args.Append(nil)
	}
	sc.leaves = sc.leaves[:0]
	if _, ok := scanValue(p.text, 0, rootPtr, &sc.leaves); !ok {
		// Not reachable for a canonical text; keep the call as one leaf.
		h := hashBytes(p.text)
		sc.leaves = append(sc.leaves[:0], leaf{ptr: rootPtr, val: h, ms: h, end: uint32(len(p.text))})
	}
	p.leaves = slices.Clone(sc.leaves)
	slices.SortFunc(p.leaves, func(a, b leaf) int {
		switch {
		case a.ptr < b.ptr:
			return -1
		case a.ptr > b.ptr:
			return 1
		}
		return 0
	})
	var mins [lshBands * lshRows]uint64
	for i := range mins {
		mins[i] = ^uint64(0)
	}
	for _, l := range p.leaves {
		u := l.unit()
		p.sum += u
		p.stable += stableUnit(l, p.text[l.off:l.end])
		for i, s := range lshSeeds {
			if h := mix(u ^ s); h < mins[i] {
				mins[i] = h
			}
		}
	}
	for b := range lshBands {
		h := p.group ^ uint64(b+1)*0x9e3779b97f4a7c15
		for r := range lshRows {
			h = mix(h ^ mins[b*lshRows+r])
		}
		p.bands[b] = h
	}
	return p
}

// stableUnit is a leaf's contribution to a call's stable hash: the calls
// of one call retried agree at every leaf whose value cannot be a
// volatile one, so they share the stable hash however many volatile
// leaves changed. A value that may be volatile (a number: a counter, an
// epoch time, float noise; a string that reads as a time or an id, or a
// text of several words; an array of objects or arrays) adds its pointer
// alone, an array of scalars (whose order may change) its multiset of
// elements; any other value adds
// its pointer and value, as in the leaf set's hash.
func stableUnit(l leaf, v []byte) uint64 {
	switch {
	case l.array && len(v) > 1 && (v[1] == '{' || v[1] == '['):
		return mix(l.ptr + 0x7a3c5e9b1d2f4a68) // elements with leaves of their own, volatile or not
	case l.array:
		return mix(l.ptr ^ mix(l.ms+0x2127599bf4325c37))
	case len(v) == 0:
	case isNumberStart(v[0]):
		return mix(l.ptr + 0x7a3c5e9b1d2f4a68)
	case v[0] == '"':
		if bytes.IndexByte(v, ' ') >= 0 || bytes.IndexByte(v, '\\') >= 0 {
			return mix(l.ptr + 0x7a3c5e9b1d2f4a68)
		}
		if b := v[1 : len(v)-1]; mayBeVolatile(b) {
			str := string(b)
			_, id := diff.IDShape(str)
			_, epoch := diff.EpochDigits(str)
			_, at := diff.ParseTime(str)
			if id || epoch || at {
				return mix(l.ptr + 0x7a3c5e9b1d2f4a68)
			}
		}
	}
	return l.unit()
}

// mayBeVolatile reports a string that could be a time or an id, a cheap
// test before the exact ones (diff.ParseTime, EpochDigits, IDShape; it lets
// through all but short prefixed tokens without digits): 8 characters or
// more with a digit among them, or 16 or more.
func mayBeVolatile(s []byte) bool {
	if len(s) < 8 {
		return false
	}
	if len(s) >= 16 {
		return true
	}
	for _, c := range s {
		if c >= '0' && c <= '9' {
			return true
		}
	}
	return false
}

// scanValue reads the canonical JSON value at text[i] (no white space,
// strings escaped as the canonical form escapes them), appends its leaves
// at pointer ptr, and returns the offset just past it.
func scanValue(text []byte, i int, ptr uint64, out *[]leaf) (int, bool) {
	if i >= len(text) {
		return i, false
	}
	switch text[i] {
	case '{':
		if i+1 < len(text) && text[i+1] == '}' {
			break // an empty object is a leaf
		}
		j := i + 1
		for {
			end, ok := skipString(text, j)
			if !ok || end >= len(text) || text[end] != ':' {
				return j, false
			}
			child := childPtrRaw(ptr, text[j+1:end-1])
			if j, ok = scanValue(text, end+1, child, out); !ok || j >= len(text) {
				return j, false
			}
			switch text[j] {
			case ',':
				j++
			case '}':
				return j + 1, true
			default:
				return j, false
			}
		}
	case '[':
		l := leaf{ptr: ptr, off: uint32(i), array: true}
		j := i + 1
		if j < len(text) && text[j] == ']' {
			j++
		} else {
			for {
				end, ok := skipValue(text, j)
				if !ok || end >= len(text) {
					return end, false
				}
				l.ms += mix(hashBytes(text[j:end]))
				j = end + 1
				if text[end] == ']' {
					break
				}
				if text[end] != ',' {
					return end, false
				}
			}
		}
		l.end = uint32(j)
		l.val = hashBytes(text[i:j])
		*out = append(*out, l)
		return j, true
	}
	end, ok := skipValue(text, i)
	if !ok {
		return end, false
	}
	h := hashBytes(text[i:end])
	*out = append(*out, leaf{ptr: ptr, val: h, ms: h, off: uint32(i), end: uint32(end)})
	return end, true
}

// skipString returns the offset just past the string that starts at
// text[i].
func skipString(text []byte, i int) (int, bool) {
	if i >= len(text) || text[i] != '"' {
		return i, false
	}
	for j := i + 1; j < len(text); j++ {
		switch text[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return len(text), false
}

// skipValue returns the offset just past the value that starts at text[i].
func skipValue(text []byte, i int) (int, bool) {
	if i >= len(text) {
		return i, false
	}
	switch text[i] {
	case '"':
		return skipString(text, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(text); j++ {
			switch text[j] {
			case '"':
				end, ok := skipString(text, j)
				if !ok {
					return end, false
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, true
				}
			}
		}
		return len(text), false
	}
	j := i
	for j < len(text) && text[j] != ',' && text[j] != '}' && text[j] != ']' {
		j++
	}
	return j, j > i
}

// childPtrRaw is the pointer hash of parent's member whose name is raw,
// as it is written inside the quotes of the canonical form.
func childPtrRaw(parent uint64, raw []byte) uint64 {
	return mix(parent*0x100000001b3 ^ hashBytes(raw))
}

// pointerAt returns the RFC 6901 pointer of the leaf at text[off], a
// canonical text: the names of the members open there, found by one scan
// of the text up to it (every array and scalar on the way is a whole leaf,
// skipped at once). The cost is at most the text's length however deep the
// leaf lies (a pointer for every leaf of a deep text, written out ahead,
// would be quadratic in its depth).
func pointerAt(text []byte, off int) string {
	var names [][2]int // the names of the members open, as canonical strings
	i := 0
	name := func() bool {
		end, ok := skipString(text, i)
		if !ok {
			return false
		}
		names[len(names)-1] = [2]int{i, end}
		i = end + 1 // past the colon
		return true
	}
scan:
	for i < off && i < len(text) {
		switch text[i] {
		case '{':
			if i+1 < len(text) && text[i+1] == '}' {
				i += 2 // an empty object, a leaf
				continue
			}
			names = append(names, [2]int{})
			i++
			if !name() {
				break scan
			}
		case ',':
			i++
			if len(names) == 0 || !name() {
				break scan
			}
		case '}':
			if len(names) == 0 {
				break scan
			}
			names = names[:len(names)-1]
			i++
		default:
			end, ok := skipValue(text, i)
			if !ok {
				break scan
			}
			i = end
		}
	}
	var path []byte
	for _, n := range names {
		path = appendToken(append(path, '/'), text[n[0]:n[1]])
	}
	return string(path)
}

// appendToken appends the member name whose canonical JSON string is q as
// an RFC 6901 reference token.
func appendToken(dst, q []byte) []byte {
	name := string(q[1 : len(q)-1])
	if bytes.IndexByte(q, '\\') >= 0 {
		if d, err := canon.Parse(q, canon.JS); err == nil {
			name = d.Root().Text()
		}
	}
	return append(dst, canon.PointerToken(name)...)
}

// leafDiff compares two sorted leaf lists: the number of leaves that
// differ (or that one side lacks), and the number of leaves of the larger.
func leafDiff(a, b []leaf) (differ, total int) {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i].ptr == b[j].ptr:
			if a[i].val != b[j].val {
				differ++
			}
			i++
			j++
		case a[i].ptr < b[j].ptr:
			differ++
			i++
		default:
			differ++
			j++
		}
	}
	differ += len(a) - i + len(b) - j
	return differ, max(len(a), len(b))
}
