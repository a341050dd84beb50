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
	"github.com/idemkey/idemkey/derive/drift/driftgen"
)

type driftJSON struct {
	Findings []struct {
		Kind     string   `json:"kind"`
		Task     string   `json:"task"`
		Tool     string   `json:"tool"`
		Lines    []int    `json:"lines"`
		Keys     []string `json:"keys"`
		Pointers []string `json:"pointers"`
		Omit     []string `json:"omit"`
		SendSame []string `json:"send_same"`
		Verified bool     `json:"verified"`
	} `json:"findings"`
	Suggestions []struct {
		Tool string   `json:"tool"`
		Omit []string `json:"omit"`
	} `json:"suggestions"`
	Calls int `json:"calls"`
}

// TestDriftCommandOnGeneratedLog runs idemkey drift on a generated log:
// the findings match what was planted, and the flags of each drift finding
// give its calls one key when idemkey key derives them.
func TestDriftCommandOnGeneratedLog(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	truth, err := driftgen.Generate(driftgen.Config{Seed: 21, Calls: 8000}, &log)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "calls.jsonl")
	if err := os.WriteFile(path, log.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := clitest.Run(t, "", "drift", "--json", path)
	if code != 1 || errs != "" {
		t.Fatalf("exit %d, stderr %s", code, errs)
	}
	var rep driftJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Calls != 8000 {
		t.Errorf("calls %d", rep.Calls)
	}
	planted := map[string]bool{}
	for _, l := range truth.Drift {
		planted[fmt.Sprint(l)] = true
	}
	for _, l := range truth.Collapse {
		planted["c"+fmt.Sprint(l)] = true
	}
	lines := strings.Split(log.String(), "\n")
	hit, found, checked := 0, 0, 0
	for _, f := range rep.Findings {
		found++
		k := fmt.Sprint(f.Lines)
		if f.Kind == "collapse" {
			k = "c" + k
		}
		if planted[k] {
			hit++
		}
		if f.Kind != "drift" {
			continue
		}
		// Advice is safe: only request metadata is offered to leave out;
		// a value that varied (noise, order, wording) is to send the same.
		for _, p := range f.Omit {
			if !slices.Contains(truth.Metadata[f.Tool], p) {
				t.Errorf("lines %v: --omit %s offered, which is not request metadata of %s", f.Lines, p, f.Tool)
			}
		}
		for _, p := range f.SendSame {
			if !slices.Contains(truth.Values[f.Tool], p) {
				t.Errorf("lines %v: %s of %s said to be a value to send the same", f.Lines, p, f.Tool)
			}
		}
		if len(f.SendSame) > 0 {
			if f.Verified {
				t.Errorf("lines %v: verified although %v vary", f.Lines, f.SendSame)
			}
			continue
		}
		if checked >= 40 {
			continue
		}
		// The flags, as key takes them, give the calls one key.
		checked++
		var sub strings.Builder
		for _, n := range f.Lines {
			sub.WriteString(lines[n-1] + "\n")
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
		if !f.Verified || len(f.Keys) < 2 {
			t.Errorf("finding %+v", f)
		}
	}
	precision := float64(hit) / float64(found)
	recall := float64(hit) / float64(len(planted))
	t.Logf("%d findings, %d planted: precision %.4f, recall %.4f; %d drift findings checked with key", found, len(planted), precision, recall, checked)
	if precision < 0.95 || recall < 0.95 || checked < 40 {
		t.Errorf("precision %.4f recall %.4f (%d checked)", precision, recall, checked)
	}
	want := map[string]string{}
	for tool, ps := range truth.Suggest {
		want[tool] = strings.Join(ps, " ")
	}
	for _, s := range rep.Suggestions {
		if got := strings.Join(s.Omit, " "); got != want[s.Tool] {
			t.Errorf("suggestion for %s: %s, want %s", s.Tool, got, want[s.Tool])
		}
		delete(want, s.Tool)
	}
	if len(want) > 0 {
		t.Errorf("no suggestion for %v", want)
	}
}
