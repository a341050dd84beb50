package conform

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/canon"
)

var schemes = []canon.Scheme{canon.JS, canon.JCS}

// answersOf returns what variant v answers for every case.
func answersOf(v Variant, out Output) []Answer {
	var as []Answer
	for _, c := range Cases() {
		text, ok := v.Canonical(c)
		switch {
		case !ok:
			as = append(as, Answer{Rejected: true})
		case out == OutputKey:
			as = append(as, Answer{Text: KeyOf(text)})
		default:
			as = append(as, Answer{Text: text})
		}
	}
	return as
}

func failingRules(r *Report) []string {
	var rs []string
	for _, rr := range r.Rules {
		if rr.Failed > 0 {
			rs = append(rs, rr.Rule)
		}
	}
	return rs
}

// TestEveryDefectDiagnosed gives Evaluate the answers of an implementation
// with one known defect, under each scheme and output: the suite must
// catch the defect, explain every failure, and name the defect in the
// diagnosis of every failing rule.
func TestEveryDefectDiagnosed(t *testing.T) {
	for _, s := range schemes {
		base := SchemeVariant(s)
		d := &diagnoser{s: s, base: base}
		for _, df := range defects {
			v := base
			df.apply(&v)
			if v == base {
				continue // the scheme's own behaviour
			}
			outs := []Output{OutputKey}
			if strings.HasPrefix(df.id, "esc-") || strings.HasPrefix(df.id, "num-") {
				outs = append(outs, OutputCanonical) // the examples come from the texts
			}
			for _, out := range outs {
				r := Evaluate(s, out, Cases(), answersOf(v, out))
				name := s.String() + "/" + out.String() + "/" + df.id
				if r.Failed == 0 {
					t.Errorf("%s: no case catches the defect", name)
					continue
				}
				want := df.text(d)
				for _, rr := range r.Rules {
					if rr.Failed > 0 && !slices.ContainsFunc(rr.Diagnosis, func(x string) bool { return strings.Contains(x, want) }) {
						t.Errorf("%s: rule %s fails but its diagnosis %q does not name %q", name, rr.Rule, rr.Diagnosis, want)
					}
				}
				for _, f := range r.Failures {
					if !f.Explained {
						t.Errorf("%s: case %d (%s) failed unexplained", name, f.Case.ID, f.Case.Rule)
					}
				}
			}
		}
	}
}

// TestProfilesRecognized: the answers of each known implementation are
// recognized as that implementation's (or one that computes the same).
func TestProfilesRecognized(t *testing.T) {
	for _, s := range schemes {
		base := SchemeVariant(s)
		for _, p := range profiles {
			v := p.variant(base)
			if v == base {
				continue
			}
			r := Evaluate(s, OutputKey, Cases(), answersOf(v, OutputKey))
			i := slices.IndexFunc(profiles, func(q profile) bool { return q.name == r.Like })
			if i < 0 || profiles[i].variant(base) != v {
				t.Errorf("%s: %s recognized as %q", s, p.name, r.Like)
			}
			for _, f := range r.Failures {
				if !f.Explained {
					t.Errorf("%s: %s: case %d (%s) failed unexplained", s, p.name, f.Case.ID, f.Case.Rule)
				}
				checkExamples(t, f)
			}
		}
	}
}

var exampleRE = regexp.MustCompile(`^writes (.+) where (?:JavaScript|RFC 8785) writes (.+)$`)

// checkExamples checks that each example of a failure's causes quotes a
// token of the text the implementation produced and one of the expected
// text: "writes 1e-07 where JavaScript writes 1e-7".
func checkExamples(t *testing.T, f Failure) {
	t.Helper()
	has := func(text, tok string) bool {
		if cut, ok := strings.CutSuffix(tok, "…"); ok {
			return slices.ContainsFunc(words(text), func(w string) bool { return strings.HasPrefix(w, cut) })
		}
		return slices.Contains(words(text), tok)
	}
	for _, c := range f.Causes {
		if c.Example == "" {
			continue
		}
		for _, ex := range strings.Split(c.Example, "; ") {
			m := exampleRE.FindStringSubmatch(ex)
			if m == nil || !has(f.Produced, m[1]) || !has(f.Expected.Canonical, m[2]) {
				t.Errorf("case %d (%s): example %q does not quote the produced text %s and the expected %s",
					f.Case.ID, f.Case.Rule, ex, short(f.Produced), short(f.Expected.Canonical))
			}
		}
	}
}

// TestCombinationsChosen: an implementation with two defects that only
// together reproduce its answers is put down to those two, the pair that
// explains the most failures, not to another pair that explains some.
func TestCombinationsChosen(t *testing.T) {
	v := JSVariant
	v.Order = OrderInput // JSON.stringify without sorting: array indices still first
	v.Newline = true
	r := Evaluate(canon.JS, OutputKey, Cases(), answersOf(v, OutputKey))
	d := &diagnoser{s: canon.JS, base: JSVariant}
	want := []string{defectByID("newline").text(d), defectByID("order-none").text(d)}
	if !slices.Equal(r.Causes, want) {
		t.Errorf("causes %q, want %q", r.Causes, want)
	}
	for _, f := range r.Failures {
		if !f.Explained {
			t.Errorf("case %d (%s) failed unexplained", f.Case.ID, f.Case.Rule)
		}
	}
}

// TestTwoDefects: an implementation with two known defects that no
// profile has is explained case by case, both defects named.
func TestTwoDefects(t *testing.T) {
	v := JSVariant
	v.Escapes |= EscUpperHex
	v.Newline = true
	r := Evaluate(canon.JS, OutputKey, Cases(), answersOf(v, OutputKey))
	d := &diagnoser{s: canon.JS, base: JSVariant}
	for _, id := range []string{"esc-upper-hex", "newline"} {
		want := defectByID(id).text(d)
		if !slices.ContainsFunc(r.Causes, func(c string) bool { return strings.Contains(c, want) }) {
			t.Errorf("causes %q do not name %q", r.Causes, want)
		}
	}
	for _, f := range r.Failures {
		if !f.Explained {
			t.Errorf("case %d (%s) failed unexplained", f.Case.ID, f.Case.Rule)
		}
		checkExamples(t, f)
	}
	if r.Like != "" {
		t.Errorf("recognized as %q", r.Like)
	}
}

// TestUnknownDefects: failures no known defect explains are diagnosed from
// the text (with canonical output) or from the cases' notes (rejections).
func TestUnknownDefects(t *testing.T) {
	cases := Cases()
	answers := answersOf(JSVariant, OutputCanonical)
	byNote := func(rule, note string) int {
		i := slices.IndexFunc(cases, func(c Case) bool { return c.Rule == rule && c.Note == note })
		if i < 0 {
			t.Fatalf("no case %s: %s", rule, note)
		}
		return i
	}
	// Python-style True, members in reverse order, a rejected valid case,
	// an accepted invalid one.
	answers[byNote("structure", "true as the arguments")].Text = `["task-1","echo",True]`
	answers[byNote("order-ascii", "upper case sorts before lower case")].Text = `["task-1","echo",{"A":3,"a":1,"B":2,"b":4}]`
	answers[byNote("whitespace", "tabs between tokens")] = Answer{Rejected: true}
	answers[byNote("invalid-json", "a comment")] = Answer{Text: `["task-1","echo",[1]]`}
	r := Evaluate(canon.JS, OutputCanonical, cases, answers)
	want := map[string]string{
		"structure":    "writes True where JavaScript writes true",
		"order-ascii":  `puts the name "a" where JavaScript puts "B" (members in another order)`,
		"whitespace":   "rejects input JavaScript accepts: tabs between tokens",
		"invalid-json": "accepts input JavaScript rejects: a comment",
	}
	if got := failingRules(r); !slices.Equal(got, []string{"structure", "whitespace", "order-ascii", "invalid-json"}) {
		t.Errorf("failing rules %v", got)
	}
	for _, rr := range r.Rules {
		if w, ok := want[rr.Rule]; ok && !slices.Contains(rr.Diagnosis, w) {
			t.Errorf("rule %s: diagnosis %q, want %q", rr.Rule, rr.Diagnosis, w)
		}
	}
	// The same answers as keys: only the rejections can be diagnosed.
	for i := range answers {
		if !answers[i].Rejected {
			answers[i].Text = KeyOf(answers[i].Text)
		}
	}
	r = Evaluate(canon.JS, OutputKey, cases, answers)
	for _, rr := range r.Rules {
		if rr.Rule == "structure" && !slices.ContainsFunc(rr.Diagnosis, func(x string) bool { return strings.Contains(x, "--output canonical") }) {
			t.Errorf("rule %s: diagnosis %q does not suggest --output canonical", rr.Rule, rr.Diagnosis)
		}
	}
}

func TestPassingReport(t *testing.T) {
	for _, s := range schemes {
		r := Evaluate(s, OutputKey, Cases(), answersOf(SchemeVariant(s), OutputKey))
		if r.Failed != 0 || r.Passed != len(Cases()) || len(r.Causes) != 0 || r.Like != "" {
			t.Errorf("%s: %d passed, %d failed, causes %q, like %q", s, r.Passed, r.Failed, r.Causes, r.Like)
		}
	}
}

func TestPythonRepr(t *testing.T) {
	for f, want := range map[float64]string{1: "1.0", 1e-7: "1e-07", 1e16: "1e+16", 1e15: "1000000000000000.0", 0.0001: "0.0001",
		0.00001: "1e-05", 5e-324: "5e-324", 1.7976931348623157e308: "1.7976931348623157e+308", -1.5e-100: "-1.5e-100", 123.456: "123.456"} {
		if got := pythonRepr(f); got != want {
			t.Errorf("pythonRepr(%v) = %s, want %s", f, got, want)
		}
	}
}
