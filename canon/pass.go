package canon

// A Pass validates and canonicalizes JSON texts one at a time, in one pass
// each as WriteCanonical does, and keeps its memory from one text to the
// next: the quick way through the many small texts of a batch. The zero
// Pass is ready to use. A Pass is not safe for concurrent use.
type Pass struct {
	c    onepass
	mems []PassMember
}

// A PassMember is a member of the root object of a text read by
// Pass.Members: its name, decoded, and the canonical text of its value.
type PassMember struct {
	Name, Value []byte
}

// Members validates src, a complete JSON text, under scheme s and, if its
// root is an object, returns that object's members in canonical order,
// each with the canonical text of its value; a member whose name a later
// member repeats is left out, as JSON.parse drops it (under JCS a
// duplicate makes src invalid). ok is false when src is invalid (Parse
// gives the error) or its root is not an object. The slices returned are
// valid until the next call on p.
func (p *Pass) Members(src []byte, s Scheme) (mems []PassMember, ok bool) {
	return p.members(src, s, deepObjects, deadMax)
}

// members is Members with the one pass's limits (see onepass.deep and
// onepass.dead).
func (p *Pass) members(src []byte, s Scheme, deep, dead int) (mems []PassMember, ok bool) {
	if checkEncoding(src) != nil {
		return nil, false
	}
	c := &p.c
	c.init(src, s, c.out[:0], nil)
	c.deep, c.dead = deep, dead
	i := skipWS(src, 0)
	if i >= len(src) || src[i] != '{' {
		return nil, false
	}
	j := skipWS(src, i+1)
	if j < len(src) && src[j] == '}' {
		return p.mems[:0], skipWS(src, j+1) == len(src)
	}
	c.cur = &c.vals
	j, ok = c.members(j, 1)
	if !ok || skipWS(src, j) != len(src) || !c.order(c.mems) {
		return nil, false
	}
	mems = p.mems[:0]
	for k := range c.mems {
		m := &c.mems[k]
		if m.v1 < 0 {
			continue // a duplicate name
		}
		var v []byte
		if m.raw {
			v = src[m.v0:m.v1]
		} else {
			v = c.vals[m.v0:m.v1]
		}
		mems = append(mems, PassMember{Name: c.name(m), Value: v})
	}
	p.mems = mems
	return mems, true
}

// Append is AppendCanonical with p's memory: it appends the canonical form
// of src, a complete JSON text, under scheme s to dst. ok is false, and
// dst returned unchanged, when src is invalid (Parse gives the error).
func (p *Pass) Append(dst, src []byte, s Scheme) (out []byte, ok bool) {
	if checkEncoding(src) != nil {
		return dst, false
	}
	c := &p.c
	own := c.out
	c.init(src, s, dst, nil)
	ok = c.root()
	out = c.out
	c.out = own
	if !ok {
		return dst, false
	}
	return out, true
}
