package canon

import "io"

// A Rewinder is an io.Writer that can discard what it was given and start
// over: Rewind drops everything written to it since WriteCanonical was
// called. WriteCanonical writes a large object whose bulk is one array
// on every core only to a Rewinder (see writeObjectRuns): it decides
// where the array ends before writing, and in the rare input that decision
// proves wrong for, it rewinds and writes the object again on one core.
type Rewinder interface {
	io.Writer
	Rewind() error
}

// Bounds of writeObjectRuns's scans: the members before the large array
// and after it are read into memory, and must be small.
// Tests lower them.
var (
	objHeadMax = 1 << 20  // the members before the array, in bytes
	objTailMax = 1 << 20  // the members after it, in bytes
	objLookMax = 64 << 10 // any other member's value, at most
)

// writeObjectRuns is WriteCanonical for a large document whose root is an
// object that holds one large array, as {"items":[…]} or {"meta":{…},
// "data":[…],"next":null} do. It finds the array's start with a forward
// scan of the members before it (findSplit) and its end with a backward
// scan of the members after it (valueStartBack), both short; canonicalizes
// those members in one pass over a copy of them in which the array is
// replaced by a placeholder (so that they are validated and sorted as
// usual, the array's name among them); writes the members that sort
// before the array, the array in runs on every core (writeRuns, which
// proves that it ends exactly where the backward scan said), and the
// members that sort after it.
//
// It reports done false, having written nothing, when the document does
// not have that shape. Once it has written, a failure of the runs means
// that the input is invalid, or that the backward scan took the end of a
// later array value longer than objLookMax for the large array's: it then
// rewinds w and canonicalizes the whole document in one pass on this core,
// which decides between the two.
func writeObjectRuns(w Rewinder, src []byte, s Scheme, runSize int) (n int64, werr error, valid, done bool) {
	root, last, idx, _, p, e := objectShape(src)
	if root < 0 {
		return 0, nil, false, false
	}
	// The members, with the array replaced by 0, in one pass.
	head := src[root:p]
	synth := make([]byte, 0, len(head)+1+last-e)
	synth = append(append(append(synth, head...), '0'), src[e+1:last+1]...)
	var c onepass
	c.init(synth, s, nil, nil)
	c.cur = &c.vals
	j, ok := c.members(skipWS(synth, 1), 1)
	if !ok || j != len(synth) || idx >= len(c.mems) {
		return 0, nil, false, false // the slow path finds the error, if any
	}
	c.mems[idx].v0 = placeholder
	if !c.order(c.mems) {
		return 0, nil, false, false
	}
	k := -1
	kept := c.mems[:0]
	for _, m := range c.mems {
		if m.v0 == placeholder {
			if m.v1 < 0 {
				return 0, nil, false, false // a later member of the same name drops the array
			}
			k = len(kept)
		}
		if m.v1 >= 0 {
			kept = append(kept, m) // not a dropped duplicate
		}
	}
	if k < 0 {
		return 0, nil, false, false
	}
	before, name, after := kept[:k], kept[k], kept[k+1:]

	bw := &countWriter{w: w}
	out := []byte{'{'}
	if len(before) > 0 {
		out = c.assemble(out[:0], before)
		out[len(out)-1] = ','
	}
	if name.name&inArena != 0 {
		out = appendQuoted(out, c.name(&name))
	} else {
		out = append(out, synth[name.name-1:name.name+name.nlen+1]...)
	}
	bw.Write(append(out, ':'))
	if writeRuns(bw, src, s, runSize, p, e, 1) {
		out = append(out[:0], '}')
		if len(after) > 0 {
			out = c.assemble(out[:0], after)
			out[0] = ','
		}
		bw.Write(out)
		return bw.n, bw.err, true, true
	}
	// Invalid, or the array ends elsewhere: decide on one core.
	if bw.err != nil {
		return bw.n, bw.err, true, true
	}
	if err := w.Rewind(); err != nil {
		return 0, err, true, true
	}
	c.init(src, s, make([]byte, 0, flushAt+4096), w)
	ok = c.root()
	if ok {
		c.flush()
	}
	return c.n, c.err, ok, true
}

// objectShape finds what writeObjectRuns needs: the root object's
// opening and closing braces, and the index (in source order) of the
// member whose value is the large array, which opens at src[p] and closes
// at src[e], and the offset of that member's name; root is -1 if src does
// not have that shape.
func objectShape(src []byte) (root, last, idx, name, p, e int) {
	root = skipWS(src, 0)
	if root >= len(src) || src[root] != '{' {
		return -1, 0, 0, 0, 0, 0
	}
	last = len(src) - 1
	for last > root && isWS(src[last]) {
		last--
	}
	if src[last] != '}' {
		return -1, 0, 0, 0, 0, 0
	}
	if idx, name, p = bigArrayMember(src, root, len(src)/2); p < 0 {
		return -1, 0, 0, 0, 0, 0
	}
	e = bigArrayEnd(src, p, last)
	if e < 0 || e-p < len(src)/2 || skipWS(src, p+1) == e {
		return -1, 0, 0, 0, 0, 0
	}
	return root, last, idx, name, p, e
}

// inRuns reports whether WriteCanonical, given a Rewinder, writes src on
// every core in runs of about a megabyte, holding little more than a few
// runs in memory: src is large and its root is an array, or an object
// whose bulk is one array (see writeObjectRuns). Otherwise it writes src in
// one pass on one core, which holds the canonical text of the root's
// largest child about twice.
func inRuns(src []byte) bool {
	if !useParallel(src) {
		return false
	}
	if i := skipWS(src, 0); i < len(src) && src[i] == '[' {
		return true
	}
	root, _, _, _, _, _ := objectShape(src)
	return root >= 0
}

// OnePassSuits reports whether WriteCanonical is the way to canonicalize
// src when only its canonical text is wanted: src is under ParallelMin, or
// its root is an array, or an object whose bulk is one array (both written
// in runs on every core). For another large object the one pass holds the
// canonical text of the root's largest child about twice, and Parse with
// its serializer needs less memory.
func OnePassSuits(src []byte) bool {
	if len(src) < ParallelMin {
		return true
	}
	if i := skipWS(src, 0); i < len(src) && src[i] == '[' {
		return true
	}
	return inRuns(src)
}

// OnePassMayFit is OnePassSuits decided before a file is read, from its
// size and its first bytes: a large document may suit the one pass only
// when its root is an array or an object (which of those objects are
// written in runs OnePassSuits tells once it is read).
func OnePassMayFit(size int64, head []byte) bool {
	if size < ParallelMin {
		return true
	}
	i := skipWS(head, 0)
	return i < len(head) && (head[i] == '[' || head[i] == '{')
}

// placeholder marks, in its v0, the member whose value is the large array.
const placeholder = -7

// bigArrayMember finds the first member of the root object that opens at
// src[root] whose value is an array longer than objLookMax bytes that
// starts at least least bytes before the end of src, within objHeadMax
// bytes of the start. It returns the
// member's index in source order, the offset of its name's opening quote
// and that of the array's '[', or -1s. Only the names are read exactly; the values before it are
// skipped by findSplit, and the one pass over the members checks them.
func bigArrayMember(src []byte, root, least int) (idx, name, p int) {
	j := skipWS(src, root+1)
	for idx = 0; j < len(src) && j-root < objHeadMax; idx++ {
		if src[j] != '"' {
			return -1, -1, -1
		}
		end, _, err := scanString(src, j)
		if err != nil {
			return -1, -1, -1
		}
		k := skipWS(src, end)
		if k >= len(src) || src[k] != ':' {
			return -1, -1, -1
		}
		k = skipWS(src, k+1)
		// The comma after the value, looked for within objLookMax bytes:
		// an array that is longer is the large one.
		comma := findSplit(src[:min(len(src), k+objLookMax)], k, k)
		if comma < 0 {
			if k < len(src) && src[k] == '[' && len(src)-k >= least {
				return idx, j, k
			}
			return -1, -1, -1
		}
		j = skipWS(src, comma+1)
	}
	return -1, -1, -1
}

// bigArrayEnd returns the offset of the ']' that closes the array that
// opens at src[p], the value of a member of the root object that closes at
// src[last], found by scanning the members after it backwards from the
// end, or -1. A member's value that is an array is skipped back only
// within objLookMax bytes; a longer one is taken for the large array
// itself (writeObjectRuns rewinds if it was not). For valid JSON the scan
// is otherwise exact: a quote preceded by an even number of backslashes
// delimits a string.
func bigArrayEnd(src []byte, p, last int) int {
	k := last - 1
	for last-k < objTailMax {
		k = skipWSBack(src, k)
		if k <= p {
			return -1
		}
		lo := k - objLookMax
		if src[k] == ']' {
			st := valueStartBack(src, k, max(lo, p))
			if st < 0 || st == p {
				return k // too long for a member after the large array: its end
			}
			k = st - 1
		} else {
			st := valueStartBack(src, k, max(lo, p+1))
			if st < 0 {
				return -1
			}
			k = st - 1
		}
		// Before the value: its name, a colon, and a comma.
		if k = skipWSBack(src, k); k <= p || src[k] != ':' {
			return -1
		}
		if k = skipWSBack(src, k-1); k <= p || src[k] != '"' {
			return -1
		}
		if k = stringStartBack(src, k, p+1); k < 0 {
			return -1
		}
		if k = skipWSBack(src, k-1); k <= p || src[k] != ',' {
			return -1
		}
		k--
	}
	return -1
}

func skipWSBack(src []byte, k int) int {
	for k >= 0 && isWS(src[k]) {
		k--
	}
	return k
}

// stringStartBack returns the offset of the quote that opens the string
// whose closing quote is src[k], looking no lower than lo, or -1.
func stringStartBack(src []byte, k, lo int) int {
	for k--; k >= lo; k-- {
		if src[k] != '"' {
			continue
		}
		bs := 0
		for k-1-bs >= lo && src[k-1-bs] == '\\' {
			bs++
		}
		if bs%2 == 0 {
			return k
		}
	}
	return -1
}

// valueStartBack returns the offset where the value that ends at src[k]
// starts, looking no lower than lo, or -1.
func valueStartBack(src []byte, k, lo int) int {
	switch src[k] {
	case '"':
		return stringStartBack(src, k, lo)
	case ']', '}':
		depth := 0
		for ; k >= lo; k-- {
			switch src[k] {
			case ']', '}':
				depth++
			case '[', '{':
				if depth--; depth == 0 {
					return k
				}
			case '"':
				if k = stringStartBack(src, k, lo); k < 0 {
					return -1
				}
			}
		}
		return -1
	}
	st := k
	for st >= lo && (src[st]-'0' < 10 || src[st]-'a' < 26 || src[st] == '.' || src[st] == '-' || src[st] == '+' || src[st] == 'E') {
		st--
	}
	if st == k || st < lo {
		return -1
	}
	return st + 1
}

// Outline returns, for a large document whose root is an object whose
// bulk is one array (the object WriteCanonical writes in runs),
// a copy of src with the large array replaced by [], and that array's
// member name (decoded): a small text to parse for a look at the root's
// other members. ok is false for any other document. Like the scans it
// comes from, it reads src as valid JSON; it does not validate it.
func Outline(src []byte) (outline []byte, name string, ok bool) {
	root, last, _, at, p, e := objectShape(src)
	if root < 0 {
		return nil, "", false
	}
	end, info, err := scanString(src, at)
	if err != nil {
		return nil, "", false
	}
	raw := src[at+1 : end-1]
	if info&strEscaped != 0 {
		raw = appendDecoded(nil, raw)
	}
	outline = append(append(append([]byte(nil), src[:p]...), '[', ']'), src[e+1:last+1]...)
	return outline, string(raw), true
}
