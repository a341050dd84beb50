package drift

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/derive/diff"
)

// classify gives a difference the diff engine found its kind.
func classify(o *Options, en diff.Entry) entry {
	switch en.Kind {
	case diff.KindReordered, diff.KindElemMoved:
		return entry{kind: kReordered, near: true}
	case diff.KindValue, diff.KindNormalization, diff.KindInvisible, diff.KindNBSP, diff.KindTrailingWS, diff.KindLeadingWS,
		diff.KindSurroundWS, diff.KindCase, diff.KindLookAlike, diff.KindMixedScript:
		a, ok1 := en.A.Node()
		b, ok2 := en.B.Node()
		if ok1 && ok2 {
			return classifyNodes(o, a, b)
		}
	}
	return entry{kind: kOther}
}

// classifyValues gives the difference between two canonical values its
// kind. Strings without escapes and numbers are read directly; anything
// else through the parser.
func classifyValues(o *Options, va, vb []byte) entry {
	if len(va) == 0 || len(vb) == 0 {
		return entry{kind: kOther}
	}
	switch ca, cb := va[0], vb[0]; {
	case ca == '"' && cb == '"':
		if bytes.IndexByte(va, '\\') < 0 && bytes.IndexByte(vb, '\\') < 0 {
			e := entry{kind: kOther}
			classifyStrings(o, string(va[1:len(va)-1]), string(vb[1:len(vb)-1]), &e)
			return e
		}
	case isNumberStart(ca) && isNumberStart(cb):
		x, err1 := strconv.ParseFloat(string(va), 64)
		y, err2 := strconv.ParseFloat(string(vb), 64)
		if err1 == nil && err2 == nil {
			e := entry{kind: kOther}
			classifyFloats(o, x, y, &e)
			return e
		}
	case ca != cb:
		return entry{kind: kOther}
	}
	da, err1 := canon.Parse(va, canon.JS)
	db, err2 := canon.Parse(vb, canon.JS)
	if err1 != nil || err2 != nil {
		return entry{kind: kOther}
	}
	return classifyNodes(o, da.Root(), db.Root())
}

func isNumberStart(c byte) bool { return c == '-' || c >= '0' && c <= '9' }

func classifyNodes(o *Options, a, b canon.Node) entry {
	e := entry{kind: kOther}
	if a.Kind() != b.Kind() {
		return e
	}
	switch a.Kind() {
	case canon.Number:
		classifyNumbers(o, a, b, &e)
	case canon.String:
		classifyStrings(o, a.Text(), b.Text(), &e)
	}
	return e
}

func classifyNumbers(o *Options, a, b canon.Node, e *entry) {
	x, ok1 := a.Float()
	y, ok2 := b.Float()
	if ok1 && ok2 {
		classifyFloats(o, x, y, e)
	}
}

func classifyFloats(o *Options, x, y float64, e *entry) {
	if unit, ok := diff.EpochUnit(x, y); ok {
		e.kind = kTimestamp
		e.near = math.Abs(y-x)*unit <= float64(o.TimeGap)
		return
	}
	intA, intB := x == math.Trunc(x), y == math.Trunc(y)
	if (!intA || !intB) && math.Abs(x-y) <= o.FloatTolerance*math.Max(math.Abs(x), math.Abs(y)) {
		e.kind, e.near = kFloat, true
		return
	}
	if intA && intB && math.Abs(y-x) < 1<<31 {
		e.kind, e.step = kCounter, int32(y-x)
	}
}

func classifyStrings(o *Options, a, b string, e *entry) {
	if x, ok := diff.EpochDigits(a); ok {
		if y, ok := diff.EpochDigits(b); ok {
			if unit, ok := diff.EpochUnit(x, y); ok { // epoch seconds or milliseconds written as strings
				e.kind = kTimestamp
				e.near = math.Abs(y-x)*unit <= float64(o.TimeGap)
				return
			}
		}
	}
	if ta, ok := diff.ParseTime(a); ok {
		if tb, ok := diff.ParseTime(b); ok {
			e.kind = kTimestamp
			e.near = absDur(int64(tb.Sub(ta))) <= int64(o.TimeGap)
			return
		}
	}
	if pa, ok := diff.IDShape(a); ok {
		if pb, ok := diff.IDShape(b); ok && pa == pb {
			e.kind = kID
			return
		}
	}
	var bufA, bufB [64]uint64
	wa, wb := wordHashes(bufA[:0], a), wordHashes(bufB[:0], b)
	if len(wa) >= 3 || len(wb) >= 3 {
		e.kind = kReworded
		e.near = sameNumbers(wa, wb) && jaccard(wa, wb) >= o.TextSimilarity
	}
	if !e.near && lookAlike(a, b) {
		// the same text as a reader sees it (case, white space,
		// normalization, look-alike letters): a small edit
		e.kind, e.near = kReworded, true
	}
}

// wordHashes appends the hash of each word of a text (a run of letters
// or digits, lower-cased) to dst; the lowest bit of a word's hash is set
// when the word holds a digit. It allocates nothing for texts of up to
// cap(dst) words.
func wordHashes(dst []uint64, s string) []uint64 {
	const offset, prime = 0xcbf29ce484222325, 0x100000001b3
	h, in, digit := uint64(offset), false, false
	end := func() {
		if in {
			w := mix(h) &^ 1
			if digit {
				w |= 1
			}
			dst = append(dst, w)
		}
		h, in, digit = offset, false, false
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case c >= 'a' && c <= 'z':
			case c >= 'A' && c <= 'Z':
				c += 'a' - 'A'
			case c >= '0' && c <= '9':
				digit = true
			default:
				end()
				continue
			}
			h = (h ^ uint64(c)) * prime
			in = true
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case unicode.IsLetter(r):
			r = unicode.ToLower(r)
		case unicode.IsDigit(r):
			digit = true
		default:
			end()
			continue
		}
		h = (h ^ uint64(r)) * prime
		in = true
	}
	end()
	return dst
}

// sameNumbers reports whether two texts mention the same numbers: a
// rewording keeps the facts, a different order number makes another call.
func sameNumbers(a, b []uint64) bool {
	var bufA, bufB [64]uint64
	na, nb := bufA[:0], bufB[:0]
	for _, w := range a {
		if w&1 == 1 {
			na = append(na, w)
		}
	}
	for _, w := range b {
		if w&1 == 1 {
			nb = append(nb, w)
		}
	}
	if len(na) != len(nb) {
		return false
	}
	slices.Sort(na)
	slices.Sort(nb)
	return slices.Equal(na, nb)
}

// jaccard is the overlap of the two word sets.
func jaccard(a, b []uint64) float64 {
	var bufA, bufB [64]uint64
	sa := slices.Compact(sortedCopy(bufA[:0], a))
	sb := slices.Compact(sortedCopy(bufB[:0], b))
	inter := 0
	for i, j := 0, 0; i < len(sa) && j < len(sb); {
		switch {
		case sa[i] == sb[j]:
			inter++
			i++
			j++
		case sa[i] < sb[j]:
			i++
		default:
			j++
		}
	}
	union := len(sa) + len(sb) - inter
	if union == 0 {
		return 1
	}
	return float64(inter) / float64(union)
}

func sortedCopy(dst, src []uint64) []uint64 {
	dst = append(dst, src...)
	slices.Sort(dst)
	return dst
}

// lookAlike reports two strings that a reader takes for the same text:
// they differ in letter case, white space, normalization, invisible
// characters or look-alike letters (as diff tells them apart).
func lookAlike(a, b string) bool {
	if ascii(a) && ascii(b) {
		// only case and white space can hide in ASCII
		return foldSpaceEqual(a, b)
	}
	return diff.StringKind(a, b) != diff.KindValue
}

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// foldSpaceEqual reports whether two ASCII strings are equal but for
// letter case and white space (runs of it taken for one space, none at
// either end), without allocating.
func foldSpaceEqual(a, b string) bool {
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	i, j := 0, 0
	for {
		ca, ni := nextFolded(a, i)
		cb, nj := nextFolded(b, j)
		if ca != cb {
			return false
		}
		if ca < 0 {
			return true
		}
		i, j = ni, nj
	}
}

// nextFolded returns the byte of s (trimmed) at i lower-cased, or a run
// of white space as one ' ', or -1 at the end, and the offset after it.
func nextFolded(s string, i int) (int, int) {
	if i == len(s) {
		return -1, i
	}
	if asciiSpace(s[i]) {
		for i < len(s) && asciiSpace(s[i]) {
			i++
		}
		return ' ', i
	}
	c := s[i]
	if c >= 'A' && c <= 'Z' {
		c += 'a' - 'A'
	}
	return int(c), i + 1
}

func asciiSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}
