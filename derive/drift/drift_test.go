package drift

import (
	"bytes"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/derive"
	"github.com/idemkey/idemkey/derive/drift/driftgen"
)

// omitKey derives the key of args with the pointers left out, written
// independently of idemkey's --omit (the command's tests check that one).
func omitKey(task, tool string, args canon.Node, omit []string) ([32]byte, error) {
	text := appendOmitting(nil, args, "", omit)
	doc, err := canon.Parse(text, canon.JS)
	if err != nil {
		return [32]byte{}, err
	}
	return derive.Call{Task: task, Tool: tool, Args: doc.Root()}.Key(), nil
}

func appendOmitting(dst []byte, n canon.Node, at string, omit []string) []byte {
	// The pointer is built as the walk goes down, and compared only where
	// it can match: a deep value costs no string per level.
	var path []byte
	var walk func(n canon.Node)
	walk = func(n canon.Node) {
		switch n.Kind() {
		case canon.Object:
			dst = append(dst, '{')
			first := true
			for _, m := range n.Members() {
				mark := len(path)
				path = append(append(path, '/'), canon.PointerToken(m.Name)...)
				if !omitted(omit, path) {
					if !first {
						dst = append(dst, ',')
					}
					first = false
					dst = canon.AppendQuoted(dst, m.Name)
					dst = append(dst, ':')
					walk(m.Value)
				}
				path = path[:mark]
			}
			dst = append(dst, '}')
		case canon.Array:
			dst = append(dst, '[')
			first := true
			for i, e := range n.Elements() {
				mark := len(path)
				path = strconv.AppendInt(append(path, '/'), int64(i), 10)
				if !omitted(omit, path) {
					if !first {
						dst = append(dst, ',')
					}
					first = false
					walk(e)
				}
				path = path[:mark]
			}
			dst = append(dst, ']')
		default:
			dst = n.Append(dst)
		}
	}
	path = append(path, at...)
	walk(n)
	return dst
}

func omitted(omit []string, path []byte) bool {
	for _, p := range omit {
		if p == string(path) {
			return true
		}
	}
	return false
}

// analyze runs the analysis over a JSON Lines log of call records,
// preparing the calls on every core as idemkey drift does.
func analyze(t testing.TB, log []byte, o Options) *Report {
	t.Helper()
	o.Rekey = omitKey
	a := New(o)
	type chunk struct {
		first int
		lines [][]byte
		calls []*Prepared
		err   error
		done  chan struct{}
	}
	todo := make(chan *chunk, 8)
	order := make(chan *chunk, 8)
	go func() {
		defer close(todo)
		defer close(order)
		line := 0
		for len(log) > 0 {
			c := &chunk{first: line + 1, done: make(chan struct{})}
			for len(c.lines) < 2048 && len(log) > 0 {
				i := bytes.IndexByte(log, '\n')
				if i < 0 {
					i = len(log) - 1
				}
				c.lines = append(c.lines, log[:i])
				log = log[i+1:]
				line++
			}
			order <- c
			todo <- c
		}
	}()
	for range runtime.GOMAXPROCS(0) {
		go func() {
			var sc Scratch
			var parser canon.Parser
			for c := range todo {
				for k, l := range c.lines {
					doc, err := parser.Parse(l, canon.JS)
					if err != nil {
						c.err = fmt.Errorf("line %d: %v", c.first+k, err)
						break
					}
					r := doc.Root()
					get := func(name string) canon.Node { v, _ := r.Get(name); return v }
					call := Call{Line: c.first + k, Task: get("task").Text(), Tool: get("tool").Text(), CallID: get("call_id").Text(), Args: get("args")}
					if call.Key, err = omitKey(call.Task, call.Tool, call.Args, o.Omit); err != nil {
						c.err = err
						break
					}
					c.calls = append(c.calls, Prepare(call, &sc))
				}
				close(c.done)
			}
		}()
	}
	for c := range order {
		<-c.done
		if c.err != nil {
			t.Fatal(c.err)
		}
		for _, p := range c.calls {
			a.Add(p)
		}
	}
	return a.Finish()
}

func lineKey(lines []int) string { return fmt.Sprint(lines) }

// score compares found sets of lines with planted ones.
func score(found, planted [][]int) (precision, recall float64, fp, fn []string) {
	want := map[string]bool{}
	for _, l := range planted {
		want[lineKey(l)] = true
	}
	got := map[string]bool{}
	hit := 0
	for _, l := range found {
		k := lineKey(l)
		got[k] = true
		if want[k] {
			hit++
		} else {
			fp = append(fp, k)
		}
	}
	for k := range want {
		if !got[k] {
			fn = append(fn, k)
		}
	}
	precision, recall = 1, 1
	if len(found) > 0 {
		precision = float64(hit) / float64(len(found))
	}
	if len(planted) > 0 {
		recall = float64(len(planted)-len(fn)) / float64(len(planted))
	}
	return precision, recall, fp, fn
}

// TestPrecisionRecall plants retries of every kind, distinct calls that
// differ in the same fields, and collapsed writes, in logs of several
// seeds, and measures the findings and suggestions against them.
func TestPrecisionRecall(t *testing.T) {
	t.Parallel()
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			var log bytes.Buffer
			truth, err := driftgen.Generate(driftgen.Config{Seed: seed, Calls: 20000}, &log)
			if err != nil {
				t.Fatal(err)
			}
			rep := analyze(t, log.Bytes(), Options{})
			var drift, collapse [][]int
			unverified := 0
			for _, f := range rep.Findings {
				switch f.Kind {
				case FindingDrift:
					drift = append(drift, f.Lines)
					if !f.Verified && len(f.SendSame) == 0 {
						unverified++
					}
					// Advice is safe: only the tool's request metadata is
					// ever offered to leave out; its values never are.
					for _, p := range f.Omit {
						if !slices.Contains(truth.Metadata[f.Tool], p) {
							t.Errorf("%s %v: --omit %s offered, which is not request metadata", f.Tool, f.Lines, p)
						}
					}
					for _, p := range f.SendSame {
						if !slices.Contains(truth.Values[f.Tool], p) {
							t.Errorf("%s %v: %s said to be a value to send the same, which is metadata", f.Tool, f.Lines, p)
						}
					}
				case FindingCollapse:
					collapse = append(collapse, f.Lines)
				}
			}
			check := func(what string, found, planted [][]int) {
				p, r, fp, fn := score(found, planted)
				t.Logf("%s: %d found, %d planted: precision %.4f, recall %.4f", what, len(found), len(planted), p, r)
				if p < 0.95 || r < 0.95 {
					t.Errorf("%s: precision %.4f recall %.4f; false positives %v; missed %v", what, p, r, head(fp), head(fn))
				}
			}
			check("drift", drift, truth.Drift)
			check("collapse", collapse, truth.Collapse)
			if unverified > 0 {
				t.Errorf("%d drift findings of metadata alone whose --omit flags do not give one key", unverified)
			}
			var gotS, wantS [][]int
			enc := func(tool, p string) []int { return []int{int(hash(tool + "\x00" + p))} }
			names := map[int]string{}
			for _, s := range rep.Suggestions {
				for _, p := range s.Omit {
					gotS = append(gotS, enc(s.Tool, p))
					names[enc(s.Tool, p)[0]] = s.Tool + " " + p
				}
			}
			for tool, ps := range truth.Suggest {
				for _, p := range ps {
					wantS = append(wantS, enc(tool, p))
					names[enc(tool, p)[0]] = tool + " " + p
				}
			}
			p, r, fp, fn := score(gotS, wantS)
			t.Logf("suggestions: %d found, %d planted: precision %.4f, recall %.4f", len(gotS), len(wantS), p, r)
			if p < 0.95 || r < 0.95 {
				var fps, fns []string
				for _, k := range fp {
					n, _ := strconv.Atoi(strings.Trim(k, "[]"))
					fps = append(fps, names[n])
				}
				for _, k := range fn {
					n, _ := strconv.Atoi(strings.Trim(k, "[]"))
					fns = append(fns, names[n])
				}
				t.Errorf("suggestions: precision %.4f recall %.4f; wrong %v; missing %v", p, r, fps, fns)
			}
		})
	}
}

func hash(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h >> 1
}

func head(s []string) []string {
	if len(s) > 10 {
		return s[:10]
	}
	return s
}
