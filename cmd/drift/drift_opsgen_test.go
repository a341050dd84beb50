package drift_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/derive/drift/opsgen"
)

// driftScore is precision and recall of found sets against planted ones.
func driftScore(found, planted []string) (p, r float64, fp, fn []string) {
	want := map[string]bool{}
	for _, k := range planted {
		want[k] = true
	}
	got := map[string]bool{}
	hit := 0
	for _, k := range found {
		got[k] = true
		if want[k] {
			hit++
		} else {
			fp = append(fp, k)
		}
	}
	for _, k := range planted {
		if !got[k] {
			fn = append(fn, k)
		}
	}
	p, r = 1, 1
	if len(found) > 0 {
		p = float64(hit) / float64(len(found))
	}
	if len(planted) > 0 {
		r = float64(len(planted)-len(fn)) / float64(len(planted))
	}
	return p, r, fp, fn
}

func firstFew(s []string) []string {
	if len(s) > 8 {
		return s[:8]
	}
	return s
}

// TestDriftThirdGenerator runs idemkey drift on logs of opsgen, a third
// generator written apart from the other two (other tools, nesting, time
// and id formats, probes that differ only in an id, business timestamps
// and UUIDs), in every --from shape it writes: call records, MCP requests
// (task from --task-pointer, no call ids), OpenAI tool calls and function_call
// items, Anthropic tool_use blocks and messages, OTLP JSON spans. Drift
// findings, collapses and suggested --omit pointers each have precision
// and recall of at least 0.95, and the flags of drift findings give their
// calls one key when idemkey key derives them (and without flags, key
// derives the keys drift reports).
func TestDriftThirdGenerator(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for k, c := range []struct {
		name, shape string
		tasks       int
	}{
		{opsgen.ShapeCall, opsgen.ShapeCall, 0}, {opsgen.ShapeMCP, opsgen.ShapeMCP, 0}, {opsgen.ShapeOpenAI, opsgen.ShapeOpenAI, 0},
		{opsgen.ShapeAnthropic, opsgen.ShapeAnthropic, 0}, {opsgen.ShapeOTel, opsgen.ShapeOTel, 0},
		// two tasks: a retry's original lies dozens of calls of its task
		// and tool back, beyond the recent calls, with several leaves changed
		{"call-2-tasks", opsgen.ShapeCall, 2},
	} {
		shape := c.shape
		t.Run(c.name, func(t *testing.T) {
			var log bytes.Buffer
			truth, err := opsgen.Generate(opsgen.Config{Seed: uint64(31 + k), Calls: 6000, Shape: shape, Tasks: c.tasks}, &log)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, c.name+".jsonl")
			if err := os.WriteFile(path, log.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			out, errs, code := clitest.Run(t, "", append(append([]string{"drift", "--json"}, opsgen.Flags(shape)...), path)...)
			if code != 1 || errs != "" {
				t.Fatalf("exit %d, stderr %s", code, errs)
			}
			var rep driftJSON
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatal(err)
			}
			if rep.Calls != 6000 {
				t.Errorf("calls %d", rep.Calls)
			}
			var gotD, gotC, wantD, wantC, gotS, wantS []string
			unverified := 0
			for _, f := range rep.Findings {
				switch f.Kind {
				case "drift":
					gotD = append(gotD, fmt.Sprint(f.Lines))
					if !f.Verified && len(f.SendSame) == 0 {
						unverified++
					}
					// Advice is safe: only request metadata is offered to
					// leave out; the values are to send the same.
					for _, p := range f.Omit {
						if !slices.Contains(truth.Metadata[f.Tool], p) {
							t.Errorf("lines %v: --omit %s offered, which is not request metadata of %s", f.Lines, p, f.Tool)
						}
					}
					for _, p := range f.SendSame {
						if slices.Contains(truth.Metadata[f.Tool], p) {
							t.Errorf("lines %v: %s of %s is request metadata, said to be a value", f.Lines, p, f.Tool)
						}
					}
				case "collapse":
					gotC = append(gotC, fmt.Sprint(f.Lines))
				default:
					t.Errorf("kind %q", f.Kind)
				}
			}
			for _, l := range truth.Drift {
				wantD = append(wantD, fmt.Sprint(l))
			}
			for _, l := range truth.Collapse {
				wantC = append(wantC, fmt.Sprint(l))
			}
			for _, s := range rep.Suggestions {
				for _, p := range s.Omit {
					gotS = append(gotS, s.Tool+" "+p)
				}
			}
			for tool, ps := range truth.Suggest {
				for _, p := range ps {
					wantS = append(wantS, tool+" "+p)
				}
			}
			slices.Sort(wantS)
			for _, c := range []struct {
				what           string
				found, planted []string
			}{{"drift", gotD, wantD}, {"collapse", gotC, wantC}, {"suggestions", gotS, wantS}} {
				p, r, fp, fn := driftScore(c.found, c.planted)
				t.Logf("%s: %d found, %d planted: precision %.4f, recall %.4f", c.what, len(c.found), len(c.planted), p, r)
				if p < 0.95 || r < 0.95 {
					t.Errorf("%s: precision %.4f recall %.4f; wrong %v; missed %v", c.what, p, r, firstFew(fp), firstFew(fn))
				}
			}
			if unverified > 0 {
				t.Errorf("%d drift findings of metadata alone whose flags do not give one key", unverified)
			}
			if shape != opsgen.ShapeCall {
				return
			}
			// The flags of drift findings, as idemkey key takes them.
			lines := strings.Split(log.String(), "\n")
			checked := 0
			for _, f := range rep.Findings {
				if f.Kind != "drift" || checked == 30 {
					continue
				}
				checked++
				var sub strings.Builder
				for _, n := range f.Lines {
					sub.WriteString(lines[n-1] + "\n")
				}
				// Without flags, key derives the keys drift reports; with
				// its flags, one key, where no value varies (a value that
				// does is for the harness to send the same).
				plain, kerr, kcode := clitest.Run(t, sub.String(), "key", "--batch", "--from", "call")
				if kcode != 0 {
					t.Fatalf("key: exit %d: %s", kcode, kerr)
				}
				var distinct []string
				for _, k := range strings.Fields(plain) {
					if !slices.Contains(distinct, k) {
						distinct = append(distinct, k)
					}
				}
				if !slices.Equal(distinct, f.Keys) {
					t.Errorf("lines %v: drift's keys %v, key's %v", f.Lines, f.Keys, distinct)
				}
				if len(f.SendSame) > 0 {
					continue
				}
				args := []string{"key", "--batch", "--from", "call"}
				for _, p := range f.Omit {
					args = append(args, "--omit", p)
				}
				keys, kerr, kcode := clitest.Run(t, sub.String(), args...)
				if kcode != 0 {
					t.Fatalf("key: exit %d: %s", kcode, kerr)
				}
				ks := strings.Fields(keys)
				for _, x := range ks[1:] {
					if x != ks[0] {
						t.Errorf("lines %v with %v: keys %v", f.Lines, f.Omit, ks)
						break
					}
				}
			}
			if checked < 30 {
				t.Errorf("only %d drift findings checked", checked)
			}
		})
	}
}
