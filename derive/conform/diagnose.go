package conform

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/idemkey/idemkey/canon"
)

// Output is what an implementation answers for each case.
type Output uint8

const (
	OutputKey       Output = iota // the lower-case hex key
	OutputCanonical               // the canonical text of [task, tool, args]
)

func (o Output) String() string {
	if o == OutputCanonical {
		return "canonical"
	}
	return "key"
}

// Answer is what an implementation answered for one case.
type Answer struct {
	Skipped  bool // not asked (a task or tool that cannot be a command-line argument)
	Rejected bool // an empty answer
	Text     string
}

// Failure is a case answered wrongly.
type Failure struct {
	Case     Case
	Expected Expect
	Got      Answer
	Causes   []Cause // the diagnoses this failure supports
	// Produced is, when a known defect reproduces the answer, the text that
	// defect makes of the call (with key output, the text whose key came back).
	Produced  string
	Explained bool
}

// Cause is one diagnosis of a failure.
type Cause struct {
	Kind    string // the known defect, or "text" for a difference no defect explains
	Text    string // the likely cause, in plain words
	Example string // "writes 1e-07 where JavaScript writes 1e-7", for the defects that say where
}

// String returns the cause and its example.
func (c Cause) String() string {
	switch {
	case c.Example == "":
		return c.Text
	case c.Text == "":
		return c.Example
	}
	return c.Text + ": " + c.Example
}

// RuleReport is the outcome of one rule.
type RuleReport struct {
	Rule                    string
	Title                   string
	Passed, Failed, Skipped int
	Diagnosis               []string
	Example                 *Failure // the first failing case
}

// Total is the number of cases of the rule that were run.
func (r RuleReport) Total() int { return r.Passed + r.Failed }

// Report is the outcome of a conformance run.
type Report struct {
	Scheme                  canon.Scheme
	Output                  Output
	Passed, Failed, Skipped int
	Rules                   []RuleReport
	Failures                []Failure
	Causes                  []string // every diagnosis, in the order of the rules
	// Like names a known implementation that computes every answer this
	// one gave, when there is one.
	Like string
}

// Evaluate compares answers[i] with the expected answer for cases[i] under
// scheme s and diagnoses the failures.
func Evaluate(s canon.Scheme, out Output, cases []Case, answers []Answer) *Report {
	r := &Report{Scheme: s, Output: out}
	byRule := map[string]*RuleReport{}
	for _, rule := range Rules {
		r.Rules = append(r.Rules, RuleReport{Rule: rule.Name, Title: rule.Title})
	}
	for i := range r.Rules {
		byRule[r.Rules[i].Rule] = &r.Rules[i]
	}
	d := &diagnoser{s: s, out: out, base: SchemeVariant(s)}
	for i, c := range cases {
		rr := byRule[c.Rule]
		a := answers[i]
		if a.Skipped {
			rr.Skipped++
			r.Skipped++
			continue
		}
		e := Expected(c, s)
		if d.matches(e.Canonical, !e.Rejected, a) {
			rr.Passed++
			r.Passed++
			continue
		}
		rr.Failed++
		r.Failed++
		r.Failures = append(r.Failures, Failure{Case: c, Expected: e, Got: a})
	}
	if r.Failed > 0 {
		r.Like = d.like(cases, answers)
		d.likeName = r.Like
	}
	d.explain(r.Failures)
	for i := range r.Failures {
		if rr := byRule[r.Failures[i].Case.Rule]; rr.Example == nil {
			rr.Example = &r.Failures[i]
		}
	}
	// Per rule: the diagnoses of its failures, each kind of cause once,
	// with a few examples; then the same over the whole run.
	var all []Failure
	for i := range r.Rules {
		rr := &r.Rules[i]
		var fs []Failure
		for _, f := range r.Failures {
			if f.Case.Rule == rr.Rule {
				fs = append(fs, f)
			}
		}
		all = append(all, fs...)
		rr.Diagnosis = d.summarize(fs, false)
		if rr.Failed > 0 && len(rr.Diagnosis) == 0 {
			rr.Diagnosis = append(rr.Diagnosis, "the keys differ for a reason none of the known defects explains; run with --output canonical to compare the texts")
		}
	}
	r.Causes = d.summarize(all, true)
	return r
}

// summarize groups the causes of failures by kind, each with up to three
// distinct examples, and lists the cases no known defect explains.
// With onePerRule, the examples of a kind come from different rules.
func (d *diagnoser) summarize(fs []Failure, onePerRule bool) []string {
	exRules := map[string]bool{} // kind and rule of each example
	var kinds []string
	text := map[string]string{}
	examples := map[string][]string{}
	var rejected, accepted []string
	for _, f := range fs {
		if !f.Explained {
			switch {
			case f.Got.Rejected:
				rejected = append(rejected, f.Case.Note)
			case f.Expected.Rejected:
				accepted = append(accepted, f.Case.Note)
			}
		}
		for _, c := range f.Causes {
			if _, ok := text[c.Kind]; !ok {
				kinds = append(kinds, c.Kind)
				text[c.Kind] = c.Text
			}
			kr := c.Kind + "\x00" + f.Case.Rule
			if ex := examples[c.Kind]; c.Example != "" && len(ex) < 3 && !slices.Contains(ex, c.Example) && !exRules[kr] {
				examples[c.Kind] = append(ex, c.Example)
				exRules[kr] = onePerRule
			}
		}
	}
	var out []string
	for _, k := range kinds {
		out = append(out, Cause{Text: text[k], Example: strings.Join(examples[k], "; ")}.String())
	}
	if len(rejected) > 0 {
		out = append(out, "rejects input "+d.word()+" accepts: "+notes(rejected))
	}
	if len(accepted) > 0 {
		out = append(out, "accepts input "+d.word()+" rejects: "+notes(accepted))
	}
	return out
}

func notes(ns []string) string {
	const show = 3
	if len(ns) <= show {
		return strings.Join(ns, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(ns[:show], "; "), len(ns)-show)
}

type diagnoser struct {
	s        canon.Scheme
	out      Output
	base     Variant
	likeName string // the known implementation that reproduces every answer, if any
}

// word names what the scheme follows, for the diagnoses.
func (d *diagnoser) word() string {
	if d.s == canon.JCS {
		return "RFC 8785"
	}
	return "JavaScript"
}

// matches reports whether answer a is the text (or its key), or a
// rejection when ok is false.
func (d *diagnoser) matches(text string, ok bool, a Answer) bool {
	switch {
	case !ok || a.Rejected:
		return !ok && a.Rejected
	case d.out == OutputCanonical:
		return a.Text == text
	}
	return a.Text == KeyOf(text)
}

// matchesIn is matches for the text variant v makes, whose key is of
// the bytes v hashes.
func (d *diagnoser) matchesIn(v Variant, text string, ok bool, a Answer) bool {
	if ok && !a.Rejected && d.out == OutputKey {
		return a.Text == KeyOf(v.Hashed(text))
	}
	return d.matches(text, ok, a)
}

// explain diagnoses the failures. First with single known defects: among
// the defects that reproduce a failure, the one that explains the most
// failures of the run is named (a greedy set cover), so that one cause
// found everywhere is not reported as several narrower ones. Failures no
// single defect reproduces are tried against known implementations and
// pairs of defects, and are otherwise described from the text.
func (d *diagnoser) explain(fs []Failure) {
	cands := make([][]int, len(fs))
	for i := range fs {
		for j, df := range defects {
			v := d.base
			df.apply(&v)
			if v == d.base {
				continue
			}
			if text, ok := v.Canonical(fs[i].Case); d.matchesIn(v, text, ok, fs[i].Got) {
				cands[i] = append(cands[i], j)
			}
		}
	}
	covered := make([]bool, len(fs))
	var chosen []int
	for {
		count := make([]int, len(defects))
		for i, cs := range cands {
			if !covered[i] {
				for _, j := range cs {
					count[j]++
				}
			}
		}
		best := -1
		for j, n := range count {
			if n > 0 && (best < 0 || n > count[best]) {
				best = j
			}
		}
		if best < 0 {
			break
		}
		chosen = append(chosen, best)
		for i, cs := range cands {
			if slices.Contains(cs, best) {
				covered[i] = true
			}
		}
	}
	var rest []int // the failures no single defect explains
	for i := range fs {
		f := &fs[i]
		if len(cands[i]) == 0 {
			rest = append(rest, i)
			continue
		}
		for _, j := range chosen {
			if slices.Contains(cands[i], j) {
				v := d.base
				defects[j].apply(&v)
				text, _ := v.Canonical(f.Case)
				f.Explained, f.Produced = true, text
				f.Causes = []Cause{defects[j].cause(d, f.Expected.Canonical, text)}
				break
			}
		}
	}
	d.explainRest(fs, rest)
}

// combo is a combination of known defects: a known implementation's, two
// defects at once, or a known implementation's and one more.
type combo struct {
	ids []string
	v   Variant
}

// combos lists the combinations tried for failures that no single defect
// explains; like, when set, is the known implementation that reproduces
// every answer, and then the only one tried.
func (d *diagnoser) combos(like string, small bool) []combo {
	var cs []combo
	for _, p := range profiles {
		if like == "" || p.name == like {
			cs = append(cs, combo{p.defects, p.variant(d.base)})
		}
	}
	if like != "" || !small {
		return cs
	}
	for i, a := range defects {
		for _, b := range defects[i+1:] {
			v := d.base
			a.apply(&v)
			b.apply(&v)
			cs = append(cs, combo{[]string{a.id, b.id}, v})
		}
	}
	for _, p := range profiles {
		for _, df := range defects {
			v := p.variant(d.base)
			df.apply(&v)
			cs = append(cs, combo{append(slices.Clip(p.defects), df.id), v})
		}
	}
	return cs
}

// explainRest explains the failures fs[rest] with combinations of defects,
// again naming first the combination that explains the most of them; what
// no combination explains is described from the text.
func (d *diagnoser) explainRest(fs []Failure, rest []int) {
	if len(rest) == 0 {
		return
	}
	small, large := d.combos(d.likeName, true), d.combos(d.likeName, false)
	cands := make([][]int, len(rest)) // indices into small (large is a prefix of it)
	for k, i := range rest {
		cs := small
		if len(fs[i].Case.Args) > pairsMax {
			cs = large
		}
		for j, c := range cs {
			if c.v == d.base {
				continue
			}
			if text, ok := c.v.Canonical(fs[i].Case); d.matchesIn(c.v, text, ok, fs[i].Got) {
				cands[k] = append(cands[k], j)
			}
		}
	}
	covered := make([]bool, len(rest))
	var chosen []int
	for {
		count := map[int]int{}
		best := -1
		for k, cs := range cands {
			if covered[k] {
				continue
			}
			for _, j := range cs {
				count[j]++
				if best < 0 || count[j] > count[best] || count[j] == count[best] && j < best {
					best = j
				}
			}
		}
		if best < 0 {
			break
		}
		chosen = append(chosen, best)
		for k, cs := range cands {
			if !covered[k] && slices.Contains(cs, best) {
				covered[k] = true
				d.attribute(&fs[rest[k]], small[best])
			}
		}
	}
	// Large arguments were tried against known implementations only:
	// try them against the combinations found for the others too.
	for k, i := range rest {
		if covered[k] || len(fs[i].Case.Args) <= pairsMax {
			continue
		}
		for _, j := range chosen {
			if text, ok := small[j].v.Canonical(fs[i].Case); d.matchesIn(small[j].v, text, ok, fs[i].Got) {
				covered[k] = true
				d.attribute(&fs[i], small[j])
				break
			}
		}
	}
	for k, i := range rest {
		if !covered[k] {
			fs[i] = d.textDiff(fs[i])
		}
	}
}

// pairsMax bounds the arguments for which combinations of defects are
// tried: they are tried hundreds of times for each failing case.
const pairsMax = 4 << 10

// textDiff diagnoses a failure no known defect explains: with the text in
// hand, it says where the text first differs.
func (d *diagnoser) textDiff(f Failure) Failure {
	a, e := f.Got, f.Expected
	if d.out == OutputCanonical && !a.Rejected && !e.Rejected {
		ex := ""
		if got, want, ok := firstNameDiff(a.Text, e.Canonical); ok {
			ex = fmt.Sprintf("puts the name %s where %s puts %s (members in another order)", got, d.word(), want)
		} else {
			got, want := firstDiff(a.Text, e.Canonical)
			ex = fmt.Sprintf("writes %s where %s writes %s", got, d.word(), want)
		}
		f.Causes = []Cause{{Kind: "text", Example: ex}}
	}
	return f
}

// attribute records that combination c reproduces f's answer, naming the
// defects of c that matter for f's case: those without which the answer
// would differ, each with where its text differs from the text without it.
func (d *diagnoser) attribute(f *Failure, c combo) {
	text, _ := c.v.Canonical(f.Case)
	f.Explained, f.Produced = true, text
	var all []Cause
	for k, id := range c.ids {
		df := defectByID(id)
		one := d.base
		df.apply(&one)
		if one == d.base {
			continue // the scheme's own behaviour
		}
		without := d.base
		for k2, id2 := range c.ids {
			if k2 != k {
				defectByID(id2).apply(&without)
			}
		}
		t0, ok0 := without.Canonical(f.Case)
		var cause Cause
		matters := ok0 == f.Got.Rejected // a rejection it alone explains
		if ok0 && !f.Got.Rejected && !f.Expected.Rejected {
			cause, matters = df.causeIn(d, f.Expected.Canonical, t0, text)
		} else {
			cause = df.cause(d, "", "")
		}
		all = append(all, cause)
		if matters {
			f.Causes = append(f.Causes, cause)
		}
	}
	if len(f.Causes) == 0 {
		f.Causes = all
	}
}

// like returns the name of a known implementation that reproduces every
// answer, or "".
func (d *diagnoser) like(cases []Case, answers []Answer) string {
	for _, p := range profiles {
		v := p.variant(d.base)
		all := true
		for i, c := range cases {
			if answers[i].Skipped {
				continue
			}
			if text, ok := v.Canonical(c); !d.matchesIn(v, text, ok, answers[i]) {
				all = false
				break
			}
		}
		if all {
			return p.name
		}
	}
	return ""
}

// ---- known defects ----

type defect struct {
	id    string
	apply func(*Variant)
	text  func(d *diagnoser) string // the diagnosis
	// example says whether the diagnosis shows where the texts first differ
	// ("writes 1e-07 where JavaScript writes 1e-7").
	example bool
}

func (df defect) cause(d *diagnoser, want, produced string) Cause {
	c := Cause{Kind: df.id, Text: df.text(d)}
	if df.example && want != "" && produced != "" {
		got, w := firstDiff(produced, want)
		c.Example = fmt.Sprintf("writes %s where %s writes %s", got, d.word(), w)
	}
	return c
}

// causeIn is cause for a defect among others: without is the text the
// others alone make of the case, want the expected one. It reports whether
// the defect matters for the failure (the text differs without it); the
// example is taken where the two first differ.
func (df defect) causeIn(d *diagnoser, want, without, produced string) (Cause, bool) {
	c := Cause{Kind: df.id, Text: df.text(d)}
	p, o, e := words(produced), words(without), words(want)
	for i := 0; i < len(p) && i < len(o); i++ {
		if p[i] != o[i] {
			w := o[i]
			// Where the others' text differs from the expected one at
			// this token only, the expected token is what the scheme writes.
			if len(o) == len(e) && slices.Equal(o[:i], e[:i]) && slices.Equal(o[i+1:], e[i+1:]) {
				w = e[i]
			}
			if df.example {
				c.Example = fmt.Sprintf("writes %s where %s writes %s", show(p[i]), d.word(), show(w))
			}
			return c, true
		}
	}
	return c, len(p) != len(o)
}

// words are the tokens of a text without its white space.
func words(s string) []string {
	return slices.DeleteFunc(tokens(s), func(t string) bool { return strings.TrimSpace(t) == "" })
}

func fixed(js, jcs string) func(*diagnoser) string {
	return func(d *diagnoser) string {
		if d.s == canon.JCS {
			return jcs
		}
		return js
	}
}

// defects are tried in this order, the most specific first.
var defects = []defect{
	{"order-index-as-strings", func(v *Variant) { v.IndexFirst = false }, fixed(
		`sorts array-index names as strings, where JavaScript puts names such as "2" and "10" first, in numeric order`, ""), false},
	{"order-index-first", func(v *Variant) { v.IndexFirst = true }, fixed("",
		`puts array-index names such as "2" and "10" first, in numeric order (JavaScript's property order), where RFC 8785 sorts every name by UTF-16 code units`), false},
	{"order-codepoint", func(v *Variant) { v.Order = OrderCodePoint }, fixed(
		"sorts names by code point, not by UTF-16 code units",
		"sorts names by code point, not by UTF-16 code units"), false},
	{"order-locale", func(v *Variant) { v.Order = OrderLocale }, func(d *diagnoser) string {
		return `sorts names by a locale's collation (localeCompare or Intl.Collator: "a" before "B", "_" before "1", "é" before "z"), not by UTF-16 code units`
	}, false},
	{"order-shallow", func(v *Variant) { v.Shallow = true }, fixed(
		"sorts the names of the arguments' own members only, not those of nested objects",
		"sorts the names of the arguments' own members only, not those of nested objects"), false},
	{"order-none", func(v *Variant) { v.Order = OrderInput }, fixed("does not sort names: they keep the order of the input", "does not sort names: they keep the order of the input"), false},
	{"over-reject", func(v *Variant) { v.Overflow = OverReject }, fixed(
		"rejects numbers outside the double range, which JSON.parse reads as Infinity and JSON.stringify writes as null", ""), false},
	{"over-null", func(v *Variant) { v.Overflow = OverNull }, fixed("",
		"accepts numbers outside the double range and writes null (as JSON.stringify does), where RFC 8785 rejects them"), false},
	{"over-infinity", func(v *Variant) { v.Overflow = OverInfinity }, fixed(
		"writes Infinity for a number outside the double range, where JSON.stringify writes null",
		"accepts numbers outside the double range and writes Infinity, where RFC 8785 rejects them"), false},
	{"over-clamp", func(v *Variant) { v.Overflow = OverClamp }, fixed(
		"writes the largest double (1.7976931348623157e+308) for a number outside the double range, where JSON.stringify writes null",
		"accepts numbers outside the double range and writes the largest double (1.7976931348623157e+308), where RFC 8785 rejects them"), false},
	{"num-negzero", func(v *Variant) { v.Numbers = NumGo }, func(d *diagnoser) string {
		return "writes -0 where " + d.word() + " writes 0"
	}, false},
	{"num-exact-int", func(v *Variant) { v.ExactInts = true }, fixed(
		"keeps integers past 2^53 exact where JSON.parse rounds them to the nearest double",
		"keeps integers past 2^53 exact where RFC 8785 rounds them to the nearest double"), true},
	{"num-pyfloat", func(v *Variant) { v.Numbers = NumPyFloat }, fixed(
		"formats numbers as Python's float repr does", "formats numbers as Python's float repr does"), true},
	{"num-literal", func(v *Variant) { v.Numbers = NumLiteral }, fixed(
		"keeps numbers as written instead of writing the nearest double as JavaScript does",
		"keeps numbers as written instead of writing the nearest double as RFC 8785 does"), true},
	{"dup-first", func(v *Variant) { v.Dups = DupFirst }, fixed(
		"keeps the first of repeated names, where JSON.parse keeps the last",
		"accepts repeated names and keeps the first, where RFC 8785 rejects them"), false},
	{"dup-reject", func(v *Variant) { v.Dups = DupReject }, fixed(
		"rejects repeated names, which JSON.parse accepts (the last one wins)", ""), false},
	{"dup-last", func(v *Variant) { v.Dups = DupLast }, fixed("",
		"accepts repeated names (the last one wins, as in JSON.parse), where RFC 8785 rejects them"), false},
	{"esc-html", func(v *Variant) { v.Escapes |= EscHTML }, fixed(
		`escapes <, > and & (as \u003c, \u003e and \u0026), which JSON.stringify writes as they are`,
		`escapes <, > and & (as \u003c, \u003e and \u0026), which RFC 8785 writes as they are`), false},
	{"esc-line-sep", func(v *Variant) { v.Escapes |= EscLineSep }, fixed(
		`escapes U+2028 and U+2029 (as \u2028 and \u2029), which JSON.stringify writes as they are`,
		`escapes U+2028 and U+2029 (as \u2028 and \u2029), which RFC 8785 writes as they are`), false},
	{"esc-non-ascii", func(v *Variant) { v.Escapes |= EscNonASCII }, fixed(
		`escapes non-ASCII characters (writes "\u00e9" for "é"), where JSON.stringify writes them as UTF-8`,
		`escapes non-ASCII characters (writes "\u00e9" for "é"), where RFC 8785 writes them as UTF-8`), false},
	{"esc-upper-hex", func(v *Variant) { v.Escapes |= EscUpperHex }, fixed(
		`writes \u escapes in upper-case hex (\u001F), where JSON.stringify writes lower case (\u001f)`,
		`writes \u escapes in upper-case hex (\u001F), where RFC 8785 writes lower case (\u001f)`), false},
	{"esc-no-short", func(v *Variant) { v.Escapes |= EscNoShort }, fixed(
		`writes \u0008, \u0009, \u000a, \u000c and \u000d where JSON.stringify writes \b, \t, \n, \f and \r`,
		`writes \u0008, \u0009, \u000a, \u000c and \u000d where RFC 8785 writes \b, \t, \n, \f and \r`), false},
	{"esc-slash", func(v *Variant) { v.Escapes |= EscSlash }, fixed(`escapes / as \/`, `escapes / as \/`), false},
	{"esc-del", func(v *Variant) { v.Escapes |= EscDEL }, fixed(`escapes U+007F as \u007f`, `escapes U+007F as \u007f`), false},
	{"lone-replace", func(v *Variant) { v.Lone = LoneReplace }, fixed(
		`replaces lone surrogates with U+FFFD, where JSON.stringify writes them as \udxxx escapes`,
		"accepts lone surrogates, replacing them with U+FFFD, where RFC 8785 rejects them"), false},
	{"lone-reject", func(v *Variant) { v.Lone = LoneReject }, fixed(
		`rejects lone surrogates, which JSON.parse accepts and JSON.stringify writes as \udxxx escapes`, ""), false},
	{"lone-escape", func(v *Variant) { v.Lone = LoneEscape }, fixed("",
		`accepts lone surrogates (writing them as \udxxx escapes, as JSON.stringify does), where RFC 8785 rejects them`), false},
	{"spaces", func(v *Variant) { v.Spaces = true }, fixed(`writes a space after "," and ":"`, `writes a space after "," and ":"`), false},
	{"allow-nan", func(v *Variant) { v.AllowNaN = true }, fixed(
		"accepts NaN, Infinity and -Infinity, which are not JSON", "accepts NaN, Infinity and -Infinity, which are not JSON"), false},
	{"num-no-plus", func(v *Variant) { v.Numbers = NumNoPlus }, fixed(
		"writes positive exponents without their + sign", "writes positive exponents without their + sign"), true},
	{"shape-args", func(v *Variant) { v.Shape = ShapeArgs }, fixed(
		"hashes the canonical arguments alone, where the key is of [task, tool, args]",
		"hashes the canonical arguments alone, where the key is of [task, tool, args]"), false},
	{"shape-object", func(v *Variant) { v.Shape = ShapeObject }, fixed(
		`hashes the object {"args":…,"task":…,"tool":…}, where the key is of the array [task, tool, args]`,
		`hashes the object {"args":…,"task":…,"tool":…}, where the key is of the array [task, tool, args]`), false},
	{"hash-utf16", func(v *Variant) { v.HashUTF16 = true }, fixed(
		"hashes the text encoded as UTF-16 (little-endian, as C#'s Encoding.Unicode), where the key is of its UTF-8 bytes",
		"hashes the text encoded as UTF-16 (little-endian, as C#'s Encoding.Unicode), where the key is of its UTF-8 bytes"), false},
	{"newline", func(v *Variant) { v.Newline = true }, fixed(
		"hashes the canonical text followed by a newline (as echo … | sha256sum does)",
		"hashes the canonical text followed by a newline (as echo … | sha256sum does)"), false},
	{"shape-tool-first", func(v *Variant) { v.Shape = ShapeToolFirst }, fixed(
		"hashes [tool, task, args], where the key is of [task, tool, args]",
		"hashes [tool, task, args], where the key is of [task, tool, args]"), false},
	{"nfc", func(v *Variant) { v.NFC = true }, fixed(
		`normalizes strings to NFC (writes "é" for "e\u0301"), where JSON.stringify keeps them as they are`,
		`normalizes strings to NFC (writes "é" for "e\u0301"), where RFC 8785 keeps them as they are`), false},
	{"proto-dropped", func(v *Variant) { v.DropProto = true }, func(d *diagnoser) string {
		return `drops members named "__proto__" (an assignment obj[name] = value, as in lodash's fromPairs, sets the prototype instead of adding a member), which ` + d.word() + " keeps"
	}, false},
	{"name-list", func(v *Variant) { v.NameList = true }, fixed(
		"sorts with a replacer array (JSON.stringify(x, Object.keys(args).sort())), which also drops every name of a nested object that the arguments lack, and sorts array-index names as strings",
		"sorts with a replacer array (JSON.stringify(x, Object.keys(args).sort())), which also drops every name of a nested object that the arguments lack"), false},
	{"num-go-g", func(v *Variant) { v.Numbers = NumGoG }, fixed(
		"formats numbers with Go's strconv.FormatFloat(f, 'g', -1, 64): exponents from 1e+06 and below 0.0001",
		"formats numbers with Go's strconv.FormatFloat(f, 'g', -1, 64): exponents from 1e+06 and below 0.0001"), true},
	{"num-java", func(v *Variant) { v.Numbers = NumJava }, fixed(
		"formats numbers as Java's Double.toString does (1.0, 1.0E21, 1.0E-7)",
		"formats numbers as Java's Double.toString does (1.0, 1.0E21, 1.0E-7)"), true},
	{"num-decimal", func(v *Variant) { v.Numbers = NumDecimal }, fixed(
		"formats numbers as Python's Decimal does (str(Decimal(repr(f)).normalize()): 1E+2, 1E-7)",
		"formats numbers as Python's Decimal does (str(Decimal(repr(f)).normalize()): 1E+2, 1E-7)"), true},
	{"num-jq", func(v *Variant) { v.Numbers = NumJq }, fixed(
		"formats numbers as jq 1.6 does: exponent notation sooner (1e+16, 1e-05) and -0 kept",
		"formats numbers as jq 1.6 does: exponent notation sooner (1e+16, 1e-05) and -0 kept"), true},
	{"shape-concat", func(v *Variant) { v.Shape = ShapeConcat }, fixed(
		"hashes the task id, the tool name and the canonical arguments concatenated (`${task}${tool}${json}`), where the key is of the array [task, tool, args]",
		"hashes the task id, the tool name and the canonical arguments concatenated (`${task}${tool}${json}`), where the key is of the array [task, tool, args]"), false},
	{"depth-limit", func(v *Variant) { v.MaxDepth = 990 }, func(d *diagnoser) string {
		return "rejects arguments nested 1000 levels deep (a recursion limit), which " + d.word() + " accepts"
	}, false},
	// Lower limits, between the depths of the suite's cases (10, 100, 500
	// and 1000 levels).
	{"depth-limit-500", func(v *Variant) { v.MaxDepth = 400 }, func(d *diagnoser) string {
		return "rejects arguments nested 500 levels deep or more (a nesting limit between 100 and 500 levels, such as jq's 256), which " + d.word() + " accepts"
	}, false},
	{"depth-limit-100", func(v *Variant) { v.MaxDepth = 64 }, func(d *diagnoser) string {
		return "rejects arguments nested 100 levels deep or more (a nesting limit between 10 and 100 levels), which " + d.word() + " accepts"
	}, false},
}

func defectByID(id string) defect {
	for _, df := range defects {
		if df.id == id {
			return df
		}
	}
	panic("conform: unknown defect " + id)
}

// profile is a known implementation, as the defects it has against both
// schemes (a defect that is the scheme's own behaviour changes nothing).
type profile struct {
	name    string
	defects []string
}

func (p profile) variant(base Variant) Variant {
	for _, id := range p.defects {
		defectByID(id).apply(&base)
	}
	return base
}

var profiles = []profile{
	{`Python's json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)`,
		[]string{"order-codepoint", "order-index-as-strings", "num-pyfloat", "num-exact-int", "over-infinity", "dup-last", "lone-reject", "allow-nan", "depth-limit"}},
	{`Python's json.dumps(sort_keys=True) with its default separators and ensure_ascii`,
		[]string{"order-codepoint", "order-index-as-strings", "num-pyfloat", "num-exact-int", "over-infinity", "dup-last", "lone-escape", "esc-non-ascii", "esc-del", "spaces", "allow-nan", "depth-limit"}},
	{`Python's json.dumps(sort_keys=True, separators=(",", ":")), ensure_ascii left True`,
		[]string{"order-codepoint", "order-index-as-strings", "num-pyfloat", "num-exact-int", "over-infinity", "dup-last", "lone-escape", "esc-non-ascii", "esc-del", "allow-nan", "depth-limit"}},
	{`Python's json.dumps(sort_keys=True, ensure_ascii=False) with its default separators`,
		[]string{"order-codepoint", "order-index-as-strings", "num-pyfloat", "num-exact-int", "over-infinity", "dup-last", "lone-reject", "spaces", "allow-nan", "depth-limit"}},
	{`Python's json.dumps(separators=(",", ":"), ensure_ascii=False) without sort_keys`,
		[]string{"order-none", "order-index-as-strings", "num-pyfloat", "num-exact-int", "over-infinity", "dup-last", "lone-reject", "allow-nan", "depth-limit"}},
	{"Go's encoding/json (map[string]any and json.Marshal)",
		[]string{"order-codepoint", "order-index-as-strings", "num-negzero", "over-reject", "dup-last", "esc-html", "esc-line-sep", "lone-replace"}},
	{"Go's encoding/json (map[string]any) through an Encoder with SetEscapeHTML(false)",
		[]string{"order-codepoint", "order-index-as-strings", "num-negzero", "over-reject", "dup-last", "esc-line-sep", "lone-replace"}},
	{"Go's encoding/json (map[string]any) with json.Number (Decoder.UseNumber)",
		[]string{"order-codepoint", "order-index-as-strings", "num-literal", "dup-last", "esc-html", "esc-line-sep", "lone-replace"}},
	{"RFC 8785 (JCS), without JavaScript's array-index order",
		[]string{"order-index-as-strings", "over-reject", "dup-reject", "lone-reject"}},
	{"jsontext.Value.Canonicalize (github.com/go-json-experiment/json)",
		[]string{"order-index-as-strings", "over-clamp", "dup-reject", "lone-reject"}},
	{"an RFC 8785 library behind JSON.parse (such as npm's canonicalize)",
		[]string{"order-index-as-strings", "over-reject", "dup-last", "lone-reject"}},
	{"JSON.stringify with sorted names (the reference harness)",
		[]string{"order-index-first", "over-null", "dup-last", "lone-escape"}},
}

// firstDiff returns the first token of got that differs from want, and
// the token of want in its place, each quoted for a reader.
func firstDiff(got, want string) (string, string) {
	g, w := tokens(got), tokens(want)
	for i := 0; i < len(g) || i < len(w); i++ {
		var gt, wt string
		if i < len(g) {
			gt = g[i]
		}
		if i < len(w) {
			wt = w[i]
		}
		if gt != wt {
			return show(gt), show(wt)
		}
	}
	return "the same tokens", "them"
}

// firstNameDiff reports whether the first differing tokens are both
// member names, and returns them.
func firstNameDiff(got, want string) (string, string, bool) {
	g, w := tokens(got), tokens(want)
	name := func(ts []string, i int) bool {
		return i+1 < len(ts) && strings.HasPrefix(ts[i], `"`) && ts[i+1] == ":"
	}
	for i := 0; i < len(g) && i < len(w); i++ {
		if g[i] != w[i] {
			return show(g[i]), show(w[i]), name(g, i) && name(w, i)
		}
	}
	return "", "", false
}

func show(tok string) string {
	switch {
	case tok == "":
		return "nothing"
	case strings.TrimSpace(tok) == "":
		return fmt.Sprintf("white space (%q)", tok)
	case len(tok) > 40:
		return tok[:37] + "…"
	case tok[0] == '"':
		return tok
	}
	return tok
}

// tokens splits a JSON-like text into its tokens, white space included, so
// that the first difference can be named. It accepts anything.
func tokens(s string) []string {
	var ts []string
	for i := 0; i < len(s); {
		j := i + 1
		switch c := s[i]; {
		case c == '"':
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, len(s))
		case strings.IndexByte(" \t\r\n", c) >= 0:
			for j < len(s) && strings.IndexByte(" \t\r\n", s[j]) >= 0 {
				j++
			}
		case strings.IndexByte("[]{},:", c) >= 0:
		default:
			for j < len(s) && !slices.Contains([]byte(" \t\r\n[]{},:\""), s[j]) {
				j++
			}
		}
		ts = append(ts, s[i:j])
		i = j
	}
	return ts
}

// NotAKey says, in plain words, what an answer that is not a key (64
// lower-case hex digits) is instead, when it is a known form of a digest
// (upper-case hex, base64, a key with a prefix or white space around it,
// the hex of another hash function), and whether it is the expected key,
// or the expected text's digest, in that form (want is the expected
// answer); otherwise "".
func NotAKey(line string, want Expect) string {
	right := func(digest []byte) string {
		if !want.Rejected && hex.EncodeToString(digest) == want.Key {
			return " (the expected key, in that form)"
		}
		return ""
	}
	if rejectionWord().MatchString(line) {
		what := "a rejection is answered with an empty line"
		if want.Rejected {
			what += " (and the scheme rejects this case)"
		}
		return "it looks like a rejection, but " + what
	}
	if len(line) == 64 {
		if d, err := hex.DecodeString(line); err == nil {
			return "it is a key in upper-case hex, where a key is written in lower case" + right(d)
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if d, err := enc.DecodeString(line); err == nil && len(d) == sha256.Size {
			return "it is a SHA-256 digest in base64, where a key is the digest in 64 lower-case hex digits" + right(d)
		}
	}
	if m := hexRun().FindString(line); m != "" && len(m) == 64 {
		d, _ := hex.DecodeString(m)
		return fmt.Sprintf("it is the 64 hex digits of a key with more around them (%q)", strings.Replace(line, m, "…", 1)) + right(d)
	}
	if d, err := hex.DecodeString(strings.ToLower(line)); err == nil {
		for _, h := range otherHashes {
			if len(d) != h.size {
				continue
			}
			what := fmt.Sprintf("it is %d hex digits, the length of a %s digest, where a key is a SHA-256 digest (64 hex digits)", len(line), h.name)
			if !want.Rejected && hex.EncodeToString(h.sum([]byte(want.Canonical))) == strings.ToLower(line) {
				what += fmt.Sprintf(" (the %s of the expected text)", h.name)
			}
			return what
		}
	}
	return ""
}

var otherHashes = []struct {
	name string
	size int
	sum  func([]byte) []byte
}{
	{"MD5", md5.Size, func(b []byte) []byte { s := md5.Sum(b); return s[:] }},
	{"SHA-1", sha1.Size, func(b []byte) []byte { s := sha1.Sum(b); return s[:] }},
	{"SHA-512", sha512.Size, func(b []byte) []byte { s := sha512.Sum512(b); return s[:] }},
}

// The patterns are compiled on first use, not in the start-up of every
// idemkey process (key never uses them).
var (
	hexRun        = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b[0-9a-fA-F]{64}\b`) })
	rejectionWord = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)^\s*(null|none|nil|undefined|false|-|reject(ed)?|invalid|err(or)?\b.*|exception\b.*)\s*$`)
	})
)

// ExtraLines says why an implementation printed more lines than there
// are cases, from the answers it gave (one a line, in order, the first
// extra line excluded): an empty line after every answer, or otherwise an
// answer that took more than one line (those after it fell out of step)
// or more output after the last answer.
func ExtraLines(answers []Answer) string {
	empty, full := 0, 0
	for i, a := range answers {
		switch {
		case i%2 == 1 && a.Rejected:
			empty++
		case i%2 == 0 && !a.Rejected:
			full++
		}
	}
	if len(answers) >= 4 && empty == len(answers)/2 && full > 0 {
		return "it writes an empty line after each answer (lines 2, 4, 6, … are empty), two lines a case"
	}
	return "either an answer took more than one line (one with a line break in it), putting every answer after it out of step, or it printed more after its last answer"
}
