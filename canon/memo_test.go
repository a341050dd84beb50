package canon

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestSortMemoMatchesParse checks the one pass's sort memo (memoSort: the
// order rankSort found for a sequence of keys, reused when an object's
// keys repeat it) against Parse. Objects are drawn from a few member
// orders, so that orders repeat (memo hits) within a text and from text to
// text in one Pass, and from many names, so that memo slots are shared by
// different key sequences: names that tie on their 8-byte prefix, that
// need the slow comparison (bytes 0xED and above), escaped names, array
// indexes (JS) and repeated names.
func TestSortMemoMatchesParse(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	names := []string{
		"id", "path", "body", "title", "repo", "labels", "draft", "amount", "base", "reviewers", "meta",
		"attempt_id", "attempt_no", "attempt_idx", "prefix_aaaa", "prefix_aaab", "0", "10", "2", "a",
		"\U0001F600x", "\uFF61y", "\u00e9t\u00e9", `\u0074itle`, `b\u006fdy`, "", "x",
	}
	orders := make([][]string, 12)
	for k := range orders {
		n := 2 + r.IntN(15)
		if k < 4 {
			n = 2 + r.IntN(4)
		}
		o := make([]string, n)
		for i, j := range r.Perm(len(names))[:n] {
			o[i] = names[j]
		}
		if k%5 == 4 {
			o[n-1] = o[0] // a repeated name
		}
		orders[k] = o
	}
	object := func(b *strings.Builder, depth int) {}
	object = func(b *strings.Builder, depth int) {
		o := orders[r.IntN(len(orders))]
		b.WriteByte('{')
		for i, name := range o {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"` + name + `":`)
			switch v := r.IntN(8); {
			case v == 0 && depth < 3:
				object(b, depth+1)
			case v == 1 && depth < 3:
				b.WriteByte('[')
				object(b, depth+1)
				b.WriteByte(',')
				object(b, depth+1)
				b.WriteByte(']')
			case v == 2:
				b.WriteString(`"v\n"`)
			default:
				b.WriteString(`1`)
			}
		}
		b.WriteByte('}')
	}
	var p Pass
	hits := 0
	for n := 0; n < 4000; n++ {
		var b strings.Builder
		object(&b, 0)
		src := []byte(b.String())
		for _, s := range []Scheme{JS, JCS} {
			d, err := Parse(src, s)
			out, ok := p.Append(nil, src, s)
			if ok != (err == nil) || ok && string(out) != string(d.Append(nil)) {
				t.Fatalf("%s: %s: Pass.Append = %s, %v; Parse: %v", s, src, out, ok, err)
			}
		}
	}
	for _, m := range p.c.memo {
		if m.n > 0 {
			hits++
		}
	}
	if hits < 3 {
		t.Fatalf("only %d memo slots used", hits)
	}
}
