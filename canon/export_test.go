package canon

import "sync/atomic"

// AppendCanonicalLimits is AppendCanonical with the one pass's limits
// lowered, so that shallow test inputs take the paths deep ones take: the
// indexed path from deep open objects on, and member objects moved down
// over dead values of dead bytes or more.
func AppendCanonicalLimits(dst, src []byte, s Scheme, deep, dead int) ([]byte, bool) {
	if checkEncoding(src) != nil {
		return dst, false
	}
	var c onepass
	c.init(src, s, dst, nil)
	c.deep, c.dead = deep, dead
	if !c.root() {
		return dst, false
	}
	return c.out, true
}

// MembersLimits is Pass.Members with the one pass's limits lowered.
func (p *Pass) MembersLimits(src []byte, s Scheme, deep, dead int) ([]PassMember, bool) {
	return p.members(src, s, deep, dead)
}

// Walked returns the bytes the document's array walks have read (see
// arrayEnd), and whether its arrays are indexed.
func (d *Document) Walked() (int64, bool) {
	return atomic.LoadInt64(&d.walked), atomic.LoadPointer(&d.arrs) != nil
}
