package canon

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"
)

// Kind is the type of a JSON value.
type Kind uint8

const (
	Null Kind = iota
	False
	True
	Number
	String
	Array
	Object
)

var kindNames = [...]string{"null", "false", "true", "number", "string", "array", "object"}

// String returns the kind's name: "null", "number", "object", ….
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Node is one value inside a Document. Its methods see the value as the
// scheme sees it: an object's members are in canonical order, and under JS
// a repeated name appears once, with its last value.
type Node struct {
	d   *Document
	off int
}

// Root returns the document's top-level value.
func (d *Document) Root() Node { return Node{d, d.root} }

// Source returns the bytes the document was parsed from.
func (d *Document) Source() []byte { return d.src }

// Document returns the document n belongs to.
func (n Node) Document() *Document { return n.d }

// Offset returns the byte offset where the value starts in the source.
func (n Node) Offset() int { return n.off }

// Kind returns the value's type.
func (n Node) Kind() Kind {
	switch n.d.src[n.off] {
	case '{':
		return Object
	case '[':
		return Array
	case '"':
		return String
	case 't':
		return True
	case 'f':
		return False
	case 'n':
		return Null
	}
	return Number
}

// End returns the byte offset just past the value in the source.
func (n Node) End() int { return n.d.skip(n.off) }

// Raw returns the value's bytes as written in the source.
func (n Node) Raw() []byte { return n.d.src[n.off:n.End()] }

// Text returns a string value's decoded text (WTF-8: a lone surrogate is
// kept as its own three bytes), or, for a number, its literal as written.
func (n Node) Text() string {
	src := n.d.src
	switch n.Kind() {
	case String:
		end, esc := stringEnd(src, n.off)
		if !esc {
			return string(src[n.off+1 : end-1])
		}
		return string(appendDecoded(nil, src[n.off+1:end-1]))
	case Number:
		return string(src[n.off:numberEnd(src, n.off)])
	}
	return ""
}

// Float returns a number's value as JSON.parse reads it, and whether it is
// inside the double range (JSON.stringify writes it as null otherwise).
func (n Node) Float() (float64, bool) {
	return ParseNumber(n.d.src[n.off:numberEnd(n.d.src, n.off)])
}

// Member is one member of an object node.
type Member struct {
	Name       string // decoded name (WTF-8)
	NameOffset int    // byte offset of the name's opening quote
	Value      Node
}

// Members returns an object's members in canonical order.
func (n Node) Members() []Member {
	if n.Kind() != Object {
		return nil
	}
	o := n.d.object(n.off)
	ms := make([]Member, o.n)
	for k, m := range n.d.mems[o.first : o.first+o.n] {
		ms[k] = Member{string(n.d.name(m)), n.d.nameOffset(m), Node{n.d, n.d.valueOffset(m)}}
	}
	return ms
}

// Get returns the value of an object's member called name.
func (n Node) Get(name string) (Node, bool) {
	if n.Kind() != Object {
		return Node{}, false
	}
	o := n.d.object(n.off)
	for _, m := range n.d.mems[o.first : o.first+o.n] {
		if string(n.d.name(m)) == name {
			return Node{n.d, n.d.valueOffset(m)}, true
		}
	}
	return Node{}, false
}

// Elements returns an array's elements.
func (n Node) Elements() []Node {
	if n.Kind() != Array {
		return nil
	}
	src := n.d.src
	var es []Node
	j := skipWS(src, n.off+1)
	if src[j] == ']' {
		return es
	}
	for {
		es = append(es, Node{n.d, j})
		j = skipWS(src, n.d.skip(j))
		if src[j] == ']' {
			return es
		}
		j = skipWS(src, j+1)
	}
}

// At returns the value that an RFC 6901 JSON Pointer designates, or false
// (also for a pointer that is not valid: see ParsePointer).
func (n Node) At(pointer string) (Node, bool) {
	toks, err := ParsePointer(pointer)
	if err != nil {
		return Node{}, false
	}
	for _, tok := range toks {
		switch n.Kind() {
		case Object:
			v, ok := n.Get(tok)
			if !ok {
				return Node{}, false
			}
			n = v
		case Array:
			i, ok := arrayIndex([]byte(tok))
			if !ok {
				return Node{}, false
			}
			es := n.Elements()
			if int(i) >= len(es) {
				return Node{}, false
			}
			n = es[i]
		default:
			return Node{}, false
		}
	}
	return n, true
}

// PointerError is a string that is not an RFC 6901 JSON Pointer.
type PointerError struct {
	Pointer string
	Offset  int // byte offset of the problem in Pointer
	Msg     string
}

func (e *PointerError) Error() string { return e.Msg }

// ParsePointer splits an RFC 6901 JSON Pointer into its reference tokens,
// unescaped ("~1" is '/', "~0" is '~'). A pointer is empty (the whole
// value) or starts with '/'; a '~' not followed by 0 or 1 makes it invalid
// (RFC 6901 §3). Its bytes are not checked otherwise: a member name may
// hold a lone surrogate, in WTF-8 (see Node.Text).
func ParsePointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if p[0] != '/' {
		return nil, &PointerError{Pointer: p, Msg: "a JSON pointer is empty or starts with '/'"}
	}
	toks := strings.Split(p[1:], "/")
	off := 1
	for k, tok := range toks {
		for i := 0; i < len(tok); i++ {
			if tok[i] == '~' && (i+1 == len(tok) || tok[i+1] != '0' && tok[i+1] != '1') {
				return nil, &PointerError{Pointer: p, Offset: off + i, Msg: fmt.Sprintf("'~' at byte %d is not followed by 0 or 1", off+i+1)}
			}
		}
		if strings.IndexByte(tok, '~') >= 0 {
			toks[k] = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		}
		off += len(tok) + 1
	}
	return toks, nil
}

// Append appends the canonical form of the value to dst.
func (n Node) Append(dst []byte) []byte {
	e := encoder{d: n.d, buf: dst}
	e.value(n.off)
	return e.buf
}

// WriteTo writes the canonical form of the value to w, streaming.
func (n Node) WriteTo(w io.Writer) (int64, error) {
	if useParallel(n.d.src) && runtime.GOMAXPROCS(0) > 1 {
		size := len(n.d.src) - n.off // the root spans the rest of the input
		if n.off != n.d.root {
			size = n.End() - n.off
		}
		if size >= ParallelMin {
			return n.d.writeParallel(w, n.off, size)
		}
	}
	bp := bufPool.Get().(*[]byte)
	e := encoder{d: n.d, buf: (*bp)[:0], w: w}
	e.value(n.off)
	e.flush()
	*bp = e.buf[:0]
	bufPool.Put(bp)
	return e.n, e.err
}

// object returns the index record of the object whose '{' is at src[i].
func (d *Document) object(i int) object {
	lo, hi := 0, len(d.objs)
	for lo < hi {
		h := int(uint(lo+hi) >> 1)
		if int(d.objs[h].start) < i {
			lo = h + 1
		} else {
			hi = h
		}
	}
	return d.objs[lo]
}

// skip returns the offset just past the (valid) value at src[i].
func (d *Document) skip(i int) int {
	src := d.src
	switch src[i] {
	case '{':
		return int(d.object(i).end)
	case '[':
		return d.arrayEnd(i)
	case '"':
		end, _ := stringEnd(src, i)
		return end
	case 't', 'n':
		return i + 4
	case 'f':
		return i + 5
	}
	return numberEnd(src, i)
}

// arrayEnd returns the offset just past the (valid) array at src[i]. A
// scan to the array's closing bracket reads all of it: asked at every level
// of arrays nested thousands deep, that would be quadratic. So once the
// scans of a document have read as many bytes as it holds, one more
// indexes the ends of all its arrays, and later calls search the index:
// whatever the calls, the cost stays linear in the input.
func (d *Document) arrayEnd(i int) int {
	if arrs := atomic.LoadPointer(&d.arrs); arrs != nil {
		a := *(*[]span)(arrs)
		lo, hi := 0, len(a)
		for lo < hi {
			h := int(uint(lo+hi) >> 1)
			if int(a[h].start) < i {
				lo = h + 1
			} else {
				hi = h
			}
		}
		return int(a[lo].end)
	}
	src := d.src
	depth := 0
	j := i
	for ; ; j++ {
		switch src[j] {
		case '"':
			j, _ = stringEnd(src, j)
			j--
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		}
		if depth == 0 {
			break
		}
	}
	if atomic.AddInt64(&d.walked, int64(j+1-i)) > int64(len(src)) {
		d.indexArrays()
	}
	return j + 1
}

// indexArrays records the offsets of every array of the document, in the
// order of their opening brackets.
func (d *Document) indexArrays() {
	src := d.src
	n := bytes.Count(src[d.root:], []byte{'['}) // a bound: brackets in strings count too
	arrs := make([]span, 0, n)
	open := make([]int32, 0, n) // indices into arrs of the arrays still open
	for j := d.root; j < len(src); j++ {
		switch src[j] {
		case '"':
			j, _ = stringEnd(src, j)
			j--
		case '[':
			open = append(open, int32(len(arrs)))
			arrs = append(arrs, span{start: uint32(j)})
		case ']':
			if len(open) == 0 {
				break // not reached: the document is valid
			}
			arrs[open[len(open)-1]].end = uint32(j + 1)
			open = open[:len(open)-1]
		}
	}
	atomic.StorePointer(&d.arrs, unsafe.Pointer(&arrs))
}
