package drift

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// call writes one call record.
func call(b *bytes.Buffer, task, tool, id string, args string) {
	fmt.Fprintf(b, `{"task":%q,"tool":%q,"call_id":%q,"args":%s}`+"\n", task, tool, id, args)
}

// TestOmitAppliedIsClean: retries whose trace id and timestamp are fresh
// on every attempt, as are their call ids (a log that gives every attempt
// a call id of its own), drift; with drift's own --omit flags applied they
// share a key, and are then no collapse either: a pair the retry rule
// joins when the keys differ is not a collapse when they are equal. Other
// tasks' calls between the attempts (a busy log: hundreds of lines) do not
// make them far apart.
func TestOmitAppliedIsClean(t *testing.T) {
	var log bytes.Buffer
	for k := 0; k < 40; k++ {
		task := fmt.Sprintf("t-%d", k)
		args := func(attempt int) string {
			return fmt.Sprintf(`{"amount":%d,"to":"acct_%d","trace_id":"%032x","ts":"2025-03-14T10:%02d:%02dZ"}`,
				100+k, k, k*1000+attempt, k, attempt)
		}
		call(&log, task, "transfer", fmt.Sprintf("call_%d_1", k), args(1))
		for n := 0; n < 300; n++ { // other tasks' calls
			call(&log, fmt.Sprintf("busy-%d", n), "lookup", fmt.Sprintf("call_b%d_%d", k, n), fmt.Sprintf(`{"q":%d}`, n))
		}
		call(&log, task, "transfer", fmt.Sprintf("call_%d_2", k), args(2))
	}
	rep := analyze(t, log.Bytes(), Options{})
	var omit []string
	drifts := 0
	for _, f := range rep.Findings {
		if f.Kind == FindingCollapse {
			t.Fatalf("a collapse before --omit: %+v", f)
		}
		drifts++
		if !f.Verified || len(f.SendSame) > 0 {
			t.Fatalf("drift finding not verified: %+v", f)
		}
		omit = f.Omit
	}
	if drifts != 40 || strings.Join(omit, " ") != "/trace_id /ts" {
		t.Fatalf("%d drift findings, omit %v; want 40 and [/trace_id /ts]", drifts, omit)
	}
	rep = analyze(t, log.Bytes(), Options{Omit: omit})
	if len(rep.Findings) != 0 {
		t.Fatalf("with --omit %v: %d findings, the first %+v", omit, len(rep.Findings), rep.Findings[0])
	}
}

// TestCollapseFarInTheTask: one key, judged far apart by the task's own
// sequence: the same write made again after more than MaxBetween other
// calls of its task is a collapse even when the lines are few (a quiet
// log), while one made again with a few other calls between, and repeats
// of other calls between, is a retry; and where the log keeps call ids
// across attempts, the same write under another call id is a collapse,
// close or not.
func TestCollapseFarInTheTask(t *testing.T) {
	var log bytes.Buffer
	// Call ids kept across attempts: a retry pair that shares its id.
	call(&log, "t-0", "charge", "c0", `{"amount":5,"ts":"2025-03-14T10:00:00Z"}`)
	call(&log, "t-0", "charge", "c0", `{"amount":5,"ts":"2025-03-14T10:00:03Z"}`)
	call(&log, "t-0", "charge", "c0", `{"amount":5,"ts":"2025-03-14T10:00:09Z"}`)
	// Far: eleven other steps of the task between (line 4 and line 16).
	call(&log, "t-1", "post_comment", "c1", `{"ticket":1,"text":"done"}`)
	for n := 0; n < 11; n++ {
		call(&log, "t-1", "add_label", fmt.Sprintf("l%d", n), fmt.Sprintf(`{"ticket":1,"label":"x%d"}`, n))
	}
	call(&log, "t-1", "post_comment", "c1", `{"ticket":1,"text":"done"}`)
	// Close: three other steps, each retried twice, between (lines 17 and 27).
	call(&log, "t-2", "post_comment", "c2", `{"ticket":2,"text":"done"}`)
	for n := 0; n < 3; n++ {
		for r := 0; r < 3; r++ {
			call(&log, "t-2", "add_label", fmt.Sprintf("m%d", n), fmt.Sprintf(`{"ticket":2,"label":"y%d"}`, n))
		}
	}
	call(&log, "t-2", "post_comment", "c2", `{"ticket":2,"text":"done"}`)
	// Another call id, next to it: two writes.
	call(&log, "t-3", "post_comment", "c3", `{"ticket":3,"text":"done"}`)
	call(&log, "t-3", "post_comment", "c4", `{"ticket":3,"text":"done"}`)
	rep := analyze(t, log.Bytes(), Options{})
	got := map[string]string{}
	for _, f := range rep.Findings {
		if f.Kind == FindingCollapse {
			got[f.Task] = fmt.Sprint(f.Lines, " ", f.Reason)
		}
	}
	want := map[string]string{
		"t-1": "[4 16] the calls lie far apart: 11 other calls of the task between them",
		"t-3": "[28 29] the calls carry different call ids",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("collapses:\n got %v\nwant %v", got, want)
	}
	// Fewer steps between are allowed by a larger MaxBetween.
	rep = analyze(t, log.Bytes(), Options{MaxBetween: 11})
	for _, f := range rep.Findings {
		if f.Kind == FindingCollapse && f.Task == "t-1" {
			t.Errorf("MaxBetween 11: t-1 still a collapse: %s", f.Reason)
		}
	}
}

// TestLargeGroups: 250,000 calls of one key under as many call ids (one
// collapse group), and 50,000 attempts of one call with a fresh timestamp
// each (one drift cluster with as many keys): looking each call id and key
// up in a list of all the group's would be quadratic (3·10¹⁰ comparisons,
// minutes); sets make it linear. BenchmarkLargeGroups runs a million of
// each.
func TestLargeGroups(t *testing.T) {
	t.Parallel()
	const ids, attempts = 250_000, 50_000
	rep := analyze(t, largeGroups(ids, attempts), Options{})
	var collapse, drift *Finding
	for k := range rep.Findings {
		switch f := &rep.Findings[k]; f.Kind {
		case FindingCollapse:
			collapse = f
		case FindingDrift:
			drift = f
		}
	}
	if collapse == nil || len(collapse.Lines) != ids || len(collapse.CallIDs) != ids {
		t.Fatalf("want one collapse of %d lines and call ids; got %+v", ids, collapse != nil)
	}
	if drift == nil || len(drift.Lines) != attempts || len(drift.Keys) != attempts || !drift.Verified {
		t.Fatalf("want one verified drift cluster of %d lines and keys; got %v", attempts, drift != nil)
	}
}

// largeGroups is a log of one key shared by ids calls, each with a call
// id of its own, and of one call made attempts times with a fresh
// timestamp each time.
func largeGroups(ids, attempts int) []byte {
	var log bytes.Buffer
	log.Grow(ids*80 + attempts*100)
	for k := 0; k < ids; k++ {
		call(&log, "t-1", "post_comment", fmt.Sprintf("c%d", k), `{"ticket":1}`)
	}
	for k := 0; k < attempts; k++ {
		call(&log, "t-2", "charge", "c", fmt.Sprintf(`{"amount":5,"ts":%d}`, 1741946400000+int64(k)))
	}
	return log.Bytes()
}

// BenchmarkLargeGroups analyses 1,000,000 calls of one key and 1,000,000
// attempts of one call (one collapse group, one drift cluster).
func BenchmarkLargeGroups(b *testing.B) {
	log := largeGroups(1_000_000, 1_000_000)
	b.SetBytes(int64(len(log)))
	for b.Loop() {
		analyze(b, log, Options{})
	}
}
