package drift

import (
	"hash/maphash"
	"slices"

	"github.com/idemkey/idemkey/canon"
)

// leaf is one leaf of the flattened arguments: a scalar, an empty object
// or a whole array, at a pointer. Pointers and values are hashed.
type leaf struct {
	ptr uint64 // hash of the pointer
	val uint64 // hash of the canonical text (arrays: in order)
	ms  uint64 // arrays: hash of the multiset of elements; otherwise val
}

// unit is the leaf's contribution to the hash of a leaf set.
func (l leaf) unit() uint64 { return mix(l.ptr ^ mix(l.val+0x9e3779b97f4a7c15)) }

// Prepared is a call ready for the analysis: its leaves hashed, its
// arguments in canonical form. Prepare is safe for concurrent use, so that
// callers can prepare on every core and Add in log order.
type Prepared struct {
	seq    int64 // position in its shard
	line   int
	task   string
	tool   string
	callID string
	time   int64
	key    [32]byte
	leaves []leaf // sorted by ptr
	sum    uint64 // Σ unit hashes
	bands  [lshBands]uint64
	text   []byte // canonical arguments
	group  uint64 // hash of task and tool
}

// Line returns the call's line.
func (p *Prepared) Line() int { return p.line }

// MinHash banding: lshBands bands of lshRows rows each.
const (
	lshBands = 6
	lshRows  = 2
)

var seed = maphash.MakeSeed()

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

func childPtr(parent uint64, name string) uint64 {
	return mix(parent*0x100000001b3 ^ maphash.String(seed, name))
}

const rootPtr = 0x51ed270b27f4a3c1

// Prepare hashes a call's leaves. buf is scratch space, returned for reuse.
func Prepare(c Call, buf []byte) (*Prepared, []byte) {
	p := &Prepared{line: c.Line, task: c.Task, tool: c.Tool, callID: c.CallID, time: c.Time, key: c.Key}
	p.group = mix(maphash.String(seed, c.Task) ^ mix(maphash.String(seed, c.Tool)+1))
	p.text = c.Args.Append(make([]byte, 0, 256))
	p.leaves, buf = flatten(c.Args, rootPtr, p.leaves, buf)
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
	return p, buf
}

// flatten appends the leaves of n at pointer ptr.
func flatten(n canon.Node, ptr uint64, out []leaf, buf []byte) ([]leaf, []byte) {
	switch n.Kind() {
	case canon.Object:
		ms := n.Members()
		if len(ms) == 0 {
			break
		}
		for _, m := range ms {
			out, buf = flatten(m.Value, childPtr(ptr, m.Name), out, buf)
		}
		return out, buf
	case canon.Array:
		buf = n.Append(buf[:0])
		l := leaf{ptr: ptr, val: maphash.Bytes(seed, buf)}
		for _, e := range n.Elements() {
			buf = e.Append(buf[:0])
			l.ms += mix(maphash.Bytes(seed, buf))
		}
		return append(out, l), buf
	}
	buf = n.Append(buf[:0])
	h := maphash.Bytes(seed, buf)
	return append(out, leaf{ptr: ptr, val: h, ms: h}), buf
}

// unitPtr returns the hash of the pointer of the leaf that holds the value
// at pointer p (RFC 6901) in root: p itself, or the array it lies in.
func unitPtr(root canon.Node, p string) uint64 {
	h := uint64(rootPtr)
	n := root
	for _, tok := range splitPointer(p) {
		if n.Kind() != canon.Object {
			return h
		}
		v, ok := n.Get(tok)
		h = childPtr(h, tok)
		if !ok {
			return h
		}
		n = v
	}
	return h
}

// splitPointer returns the decoded reference tokens of an RFC 6901 pointer.
func splitPointer(p string) []string {
	if p == "" {
		return nil
	}
	var toks []string
	start := 1
	for i := 1; i <= len(p); i++ {
		if i == len(p) || p[i] == '/' {
			toks = append(toks, unescapeToken(p[start:i]))
			start = i + 1
		}
	}
	return toks
}

func unescapeToken(t string) string {
	if !containsByte(t, '~') {
		return t
	}
	b := make([]byte, 0, len(t))
	for i := 0; i < len(t); i++ {
		if t[i] == '~' && i+1 < len(t) {
			switch t[i+1] {
			case '0':
				b = append(b, '~')
				i++
				continue
			case '1':
				b = append(b, '/')
				i++
				continue
			}
		}
		b = append(b, t[i])
	}
	return string(b)
}

func containsByte(s string, c byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return true
		}
	}
	return false
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
