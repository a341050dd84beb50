package canon

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"runtime"
	"sync"
)

// ParallelMin is the input size from which Parse, and the writers of
// large values, split their work across the cores.
const ParallelMin = 8 << 20

// parseParallel parses a large document whose root is an array or object
// as two runs of the root's children, parsed concurrently into the two
// ends of one preallocated index, which is then closed up. A quick
// structural scan proposes the split, a comma between two children near
// the middle; the first run must end exactly at that comma, so the second
// run provably starts where a sequential parse would have. It reports
// false whenever it cannot finish (no split, any error): the caller then
// parses sequentially, which also gives the exact error.
func (pp *Parser) parseParallel(src []byte, s Scheme, maxDepth int) (*Document, bool) {
	root := skipWS(src, 0)
	if root >= len(src) || (src[root] != '[' && src[root] != '{') {
		return nil, false
	}
	last := len(src) - 1
	for last > root && isWS(src[last]) {
		last--
	}
	isObj := src[root] == '{'
	closer := byte(']')
	if isObj {
		closer = '}'
	}
	if src[last] != closer {
		return nil, false
	}
	mid := root + (last-root)/2
	split := guessSplit(src, root, mid)
	if split < 0 {
		split = findSplit(src, root+1, mid)
	}
	if split < 0 {
		return nil, false
	}
	// Count, on both cores, the braces and colons that bound the number of
	// objects and members before and after the split.
	var bObjs, bMems int
	var counted sync.WaitGroup
	counted.Add(1)
	go func() {
		defer counted.Done()
		bObjs, bMems = bytes.Count(src[split:], []byte{'{'}), bytes.Count(src[split:], []byte{':'})
	}()
	aObjs, aMems := bytes.Count(src[:split], []byte{'{'}), bytes.Count(src[:split], []byte{':'})
	counted.Wait()
	nObjs, nMems := aObjs+bObjs, aMems+bMems
	objs := make([]object, nObjs)
	mems := make([]member, nMems)
	base := 0
	if isObj {
		base = 1 // objs[0] is the root's record
	}
	var a, b parser
	a.init(src, s, maxDepth, objs[base:base:aObjs], mems[0:0:aMems])
	b.init(src, s, maxDepth, objs[aObjs:aObjs:nObjs], mems[aMems:aMems:nMems])
	var wg sync.WaitGroup
	var okB bool
	wg.Add(1)
	go func() {
		defer wg.Done()
		end, err := b.children(root, split+1, -1)
		okB = err == nil && end == last
	}()
	end, err := a.children(root, root+1, split)
	wg.Wait()
	if err != nil || end != split || !okB {
		return nil, false
	}
	// Both runs stayed inside their preallocated regions (the counts are
	// upper bounds); close up the gap between them.
	nA, nB := len(a.doc.objs), len(b.doc.objs)
	mA, mB := len(a.doc.mems), len(b.doc.mems)
	copy(objs[base+nA:], objs[aObjs:aObjs+nB])
	copy(mems[mA:], mems[aMems:aMems+mB])
	for k := base + nA; k < base+nA+nB; k++ {
		objs[k].first += uint32(mA)
	}
	shift := uint32(len(a.doc.arena))
	fix := func(ms []member) {
		for k := range ms {
			if ms[k].name&inArena != 0 {
				ms[k].name += shift
			}
		}
	}
	fix(mems[mA : mA+mB])
	fix(b.stack)
	d := &a.doc
	d.arena = append(d.arena, b.doc.arena...)
	d.dups = append(d.dups, b.doc.dups...)
	objs, mems = objs[:base+nA+nB], mems[:mA+mB]
	if isObj {
		seg := append(a.stack, b.stack...)
		dups, err := a.order(seg)
		if err != nil {
			return nil, false
		}
		first := len(mems)
		mems = append(mems, seg...)
		if dups {
			mems = a.dedupe(mems, first)
		}
		objs[0] = object{start: uint32(root), end: uint32(last + 1), first: uint32(first), n: uint32(len(mems) - first)}
	}
	return &Document{src: src, scheme: s, root: root, objs: objs, mems: mems, arena: d.arena, dups: d.dups}, true
}

func (p *parser) init(src []byte, s Scheme, maxDepth int, objs []object, mems []member) {
	p.src, p.s, p.maxDepth = src, s, maxDepth
	p.doc = Document{src: src, scheme: s, objs: objs, mems: mems}
}

// children parses children of the root container that opens at src[root],
// from src[j] on, and returns the offset of the comma at stop, or (with stop
// < 0) of the closing bracket. Members of a root object stay on the stack.
func (p *parser) children(root, j, stop int) (int, *perr) {
	src := p.src
	isObj := src[root] == '{'
	j = skipWS(src, j)
	for j < len(src) {
		var end int
		var err *perr
		if isObj {
			if src[j] != '"' {
				break
			}
			end, err = p.member(root, j, 1)
		} else {
			end, err = p.value(j, 1)
		}
		if err != nil {
			return 0, err
		}
		j = skipWS(src, end)
		if j >= len(src) {
			break
		}
		switch src[j] {
		case ',':
			if j == stop {
				return j, nil
			}
			if stop >= 0 && j > stop {
				return 0, errAt(j, "split missed")
			}
			j = skipWS(src, j+1)
			continue
		case ']', '}':
			if stop >= 0 {
				return 0, errAt(j, "split missed")
			}
			return j, nil
		}
		break
	}
	return 0, errAt(j, "invalid")
}

// guessSplit proposes a split without scanning up to it, for documents
// written one child of the root a line (pretty-printed, or JSON arrays of
// records): the first line after mid that is indented like the root's
// first child and follows a line ending in a comma. A newline is never
// inside a string, so only the depth can be wrong, and the parse that
// must arrive exactly at the comma checks that. It returns -1 when the
// root's first child is not on a line of its own.
func guessSplit(src []byte, root, mid int) int {
	i := root + 1
	for i < len(src) && (src[i] == ' ' || src[i] == '\t' || src[i] == '\r') {
		i++
	}
	if i >= len(src) || src[i] != '\n' {
		return -1
	}
	indent := indentAt(src, i+1)
	pos := mid
	for tries := 0; tries < 1000 && pos < len(src); tries++ {
		k := bytes.IndexByte(src[pos:], '\n')
		if k < 0 {
			return -1
		}
		nl := pos + k
		pos = nl + 1
		if indentAt(src, nl+1) != indent {
			continue
		}
		b := nl - 1
		for b > root && (src[b] == ' ' || src[b] == '\t' || src[b] == '\r') {
			b--
		}
		if src[b] == ',' {
			return b
		}
	}
	return -1
}

// indentAt returns the number of spaces and tabs that start the line at
// src[i], or -1 if the line holds nothing else.
func indentAt(src []byte, i int) int {
	n := 0
	for i+n < len(src) && (src[i+n] == ' ' || src[i+n] == '\t') {
		n++
	}
	if i+n >= len(src) || src[i+n] == '\n' || src[i+n] == '\r' {
		return -1
	}
	return n
}

// findSplit scans the root container's children from src[from], just
// inside its opening bracket or just after a comma between two children,
// for a comma between two children at or after mid, tracking strings and
// nesting only; it returns -1 if there is none.
func findSplit(src []byte, from, mid int) int {
	i, _ := splitScan(src, from, mid)
	return i
}

// splitScan is findSplit, and when it finds no comma it also says whether
// the container closed (a closing bracket below the starting depth)
// before the end of src.
func splitScan(src []byte, from, mid int) (comma int, closed bool) {
	depth := 0
	i := from
	for i < len(src) {
		// Skip what cannot change the depth: most bytes outside strings.
		for i < len(src) && !structural[src[i]] {
			i++
		}
		if i >= len(src) {
			break
		}
		switch src[i] {
		case '"':
			i++
			for i < len(src) {
				if i+8 <= len(src) {
					m := quoteOrBackslash(binary.LittleEndian.Uint64(src[i:]))
					if m == 0 {
						i += 8
						continue
					}
					i += bits.TrailingZeros64(m) >> 3
				}
				if src[i] == '"' {
					break
				}
				if src[i] == '\\' {
					i++
				}
				i++
			}
		case '[', '{':
			depth++
		case ']', '}':
			depth--
			if depth < 0 {
				return -1, true
			}
		case ',':
			if depth == 0 && i >= mid {
				return i, false
			}
		}
		i++
	}
	return -1, false
}

// guessComma proposes a run boundary in an array written without line
// ends, without scanning up to it: the comma of the first "},{" at or after
// mid (an array of objects) from which a short scan ahead does not leave
// the array, which rules out those between the objects of a nested array
// that ends within the scan. It returns -1 if there is none near mid. As
// with guessSplit, the run that must arrive exactly at the comma proves it.
func guessComma(src []byte, mid, last int) int {
	const scan = 8 << 10
	pos := mid
	for tries := 0; tries < 64 && pos < last; tries++ {
		k := bytes.Index(src[pos:last], []byte("},{"))
		if k < 0 {
			return -1
		}
		c := pos + k + 1
		if _, closed := splitScan(src[:min(last, c+scan)], c+1, last); !closed {
			return c
		}
		pos = c + 1
	}
	return -1
}

// structural marks the bytes findSplit looks at outside strings.
var structural = [256]bool{'"': true, '[': true, ']': true, '{': true, '}': true, ',': true}

// useParallel reports whether Parse should try parseParallel on src.
func useParallel(src []byte) bool {
	return len(src) >= ParallelMin && runtime.GOMAXPROCS(0) > 1
}
