package key

import (
	"fmt"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/derive"
)

// batchWarnings sums up, over the lines of a batch, what single inputs
// get a warning for: an omit pointer that matches nothing on any line it
// applies to, lines shaped like an envelope read as bare arguments. It is
// said once at the end, not on every line.
type batchWarnings struct {
	loaded int         // lines loaded
	omits  []omitCount // each omit pointer applied (top-level or a tool's), first seen first
	shapes []shapeCount
}

// omitCount is how one omit pointer fared over the lines it applied to.
type omitCount struct {
	name, p     string // name: "" (--omit) or the tools section it is from
	lines, hits int    // the lines it applied to, and matched on
	hint        string // the hint for the first line it missed on
}

type shapeCount struct {
	from, what  string
	first, more int // the first line of that shape, and how many more
}

func (b *batchWarnings) omit(name, p string) *omitCount {
	for k := range b.omits {
		if o := &b.omits[k]; o.name == name && o.p == p {
			return o
		}
	}
	b.omits = append(b.omits, omitCount{name: name, p: p})
	return &b.omits[len(b.omits)-1]
}

func (b *batchWarnings) note(lc derive.Loaded, lineNo int) {
	b.loaded++
	missed := 0
	for i, p := range lc.Omit {
		o := b.omit(lc.OmitName, p)
		o.lines++
		if missed < len(lc.OmitMissed) && lc.OmitMissed[missed] == i {
			missed++
			if o.hint == "" {
				o.hint = derive.OmitWarning(lc.OmitName, p, lc.Args).Hint
			}
			continue
		}
		o.hits++
	}
	if lc.Shape != "" {
		for k := range b.shapes {
			if b.shapes[k].what == lc.ShapeWhat {
				b.shapes[k].more++
				return
			}
		}
		b.shapes = append(b.shapes, shapeCount{from: lc.Shape, what: lc.ShapeWhat, first: lineNo})
	}
}

// add sums up a later chunk's warnings.
func (b *batchWarnings) add(c *batchWarnings) {
	b.loaded += c.loaded
	for _, co := range c.omits {
		o := b.omit(co.name, co.p)
		o.lines += co.lines
		o.hits += co.hits
		if o.hint == "" {
			o.hint = co.hint
		}
	}
	for _, s := range c.shapes {
		found := false
		for k := range b.shapes {
			if b.shapes[k].what == s.what {
				b.shapes[k].more += s.more + 1
				found = true
			}
		}
		if !found {
			b.shapes = append(b.shapes, s)
		}
	}
}

func (b *batchWarnings) print(f *cli.Factory, name string) {
	for _, s := range b.shapes {
		lead := fmt.Sprintf("%s:%d: the line looks like", name, s.first)
		if s.more > 0 {
			lead = fmt.Sprintf("%s:%d: this line and %d more look like", name, s.first, s.more)
		}
		f.PrintWarning(derive.ShapeWarning(s.from, s.what, lead))
	}
	for _, o := range b.omits {
		if o.hits == 0 && o.lines > 0 {
			f.PrintWarning(derive.Warning{
				Msg:  fmt.Sprintf("%s: %s %s matches nothing in the arguments of any of the %d lines: the keys are derived as if it were not given", name, orFlag(o.name, "--omit"), o.p, o.lines),
				Hint: o.hint,
			})
		}
	}
}

// orFlag is src, or flag when src is empty.
func orFlag(src, flag string) string {
	if src == "" {
		return flag
	}
	return src
}
