package mcp

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/idemkey/idemkey/derive/ledger"
)

func TestValidJSON(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{`{}`, true}, {` {"a":[1,2.5e-3,-0,"x\u00e9\n",true,false,null,{}]} `, true},
		{`[]`, true}, {`"s"`, true}, {`0`, true}, {`-12.5E+3`, true},
		{`{"a":1,}`, false}, {`[1,]`, false}, {`{"a" 1}`, false}, {`{a:1}`, false},
		{`01`, false}, {`1.`, false}, {`.5`, false}, {`-`, false}, {`1e`, false}, {`+1`, false},
		{`"\x"`, false}, {`"\u12"`, false}, {"\"a\x01\"", false}, {`"abc`, false},
		{`{"a":1}{}`, false}, {`tru`, false}, {`nul`, false}, {``, false}, {`  `, false},
		{"\"\xff\"", false}, {`[1 2]`, false}, {`{"a":1 "b":2}`, false}, {`[`, false}, {`{"a":`, false},
	} {
		err := validJSON([]byte(tc.in))
		if (err == nil) != tc.ok {
			t.Errorf("validJSON(%q) = %v, want ok=%v", tc.in, err, tc.ok)
		}
		if utf8.ValidString(tc.in) && json.Valid([]byte(tc.in)) != tc.ok {
			t.Errorf("encoding/json disagrees on %q", tc.in)
		}
	}
}

// FuzzValidJSON checks the scanner against encoding/json on UTF-8 input,
// and that members and elements never panic on what it accepts.
func FuzzValidJSON(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,{"b":null}]}}}`, `[{"a":1},2]`, `"\ud800"`, `{"a":"\u0000"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := validJSON(b)
		if utf8.Valid(b) && (err == nil) != json.Valid(b) {
			t.Fatalf("validJSON(%q) = %v, encoding/json: %v", b, err, json.Valid(b))
		}
		if err != nil {
			return
		}
		i := skipSpace(b, 0)
		switch b[i] {
		case '{':
			m := readMessage(b)
			_ = m.idKey()
			setMembers(b, kv{"x", []byte("1")})
		case '[':
			elements(b, i)
		}
	})
}

// TestValidJSONDeep: a hostile depth costs memory linear in the input, never the stack.
func TestValidJSONDeep(t *testing.T) {
	n := 1 << 20
	b := []byte(strings.Repeat(`{"a":[`, n) + "1" + strings.Repeat(`]}`, n))
	start := time.Now()
	if err := validJSON(b); err != nil {
		t.Fatal(err)
	}
	if err := validJSON(b[:len(b)-1]); err == nil {
		t.Fatal("an unclosed object passed")
	}
	t.Logf("%d bytes, %d levels: %v", len(b), 2*n, time.Since(start))
}

func TestReadMessage(t *testing.T) {
	m := readMessage([]byte(`{"jsonrpc":"2.0","id":1,"\u006dethod":"tools/call","method":"tools/list","params":{}}`))
	if m.kind != kindRequest || m.method != "tools/list" {
		t.Fatalf("kind %v method %q: want the last method, its name unescaped", m.kind, m.method)
	}
	if m := readMessage([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}`)); m.kind != kindNotification {
		t.Fatalf("notification read as %v", m.kind)
	}
	if m := readMessage([]byte(`{"result":{},"jsonrpc":"2.0","id":"x"}`)); m.kind != kindResponse || m.idKey() != "sx" {
		t.Fatalf("response read as %v %q", m.kind, m.idKey())
	}
	if m := readMessage([]byte(`{"id":1}`)); m.kind != kindOther {
		t.Fatalf("{\"id\":1} read as %v", m.kind)
	}
}

func TestIDKey(t *testing.T) {
	same := [][]string{{`1`, `1.0`, `1e0`, `10e-1`}, {`"1"`, `"\u0031"`}, {`9007199254740993`, `9007199254740992`}}
	for _, group := range same {
		k0, _ := idKey([]byte(group[0]))
		for _, id := range group[1:] {
			if k, _ := idKey([]byte(id)); k != k0 {
				t.Errorf("idKey(%s) = %q, idKey(%s) = %q: JSON.parse reads them as one id", id, k, group[0], k0)
			}
		}
	}
	a, _ := idKey([]byte(`1`))
	b, _ := idKey([]byte(`"1"`))
	if a == b {
		t.Error("the number 1 and the string \"1\" are two ids")
	}
	if _, ok := idKey([]byte(`{}`)); ok {
		t.Error("an object is no id")
	}
}

func TestSetMembers(t *testing.T) {
	for _, tc := range []struct {
		obj  string
		set  []kv
		want string
	}{
		{`{}`, []kv{{"a", []byte(`1`)}}, `{"a":1}`},
		{`{"x" : [1, 2], "a":0}`, []kv{{"a", []byte(`1`)}}, `{"x" : [1, 2],"a":1}`},
		{`{"a":0,"x":1,"a":2}`, []kv{{"a", []byte(`3`)}}, `{"x":1,"a":3}`},
		{`{"a":0,"x":1}`, []kv{{"a", nil}}, `{"x":1}`},
		{`"not an object"`, []kv{{"k", []byte(`"v"`)}}, `{"k":"v"}`},
		{`{"\u0061":0}`, []kv{{"a", []byte(`1`)}}, `{"\u0061":1}`},
		{`{"x":1}`, []kv{{"q\"\n", []byte(`true`)}}, `{"x":1,"q\"\n":true}`},
	} {
		got := string(setMembers([]byte(tc.obj), tc.set...))
		if got != tc.want {
			t.Errorf("setMembers(%s, %v) = %s, want %s", tc.obj, tc.set, got, tc.want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("setMembers wrote invalid JSON %s", got)
		}
	}
}

// TestRewriteCall: the key and the attempt go into params._meta, replacing any the client
// wrote there (it cannot choose them), keeping the rest as written.
func TestRewriteCall(t *testing.T) {
	m := readMessage([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"pay","arguments":{"n":1,"k":"model"},"_meta":{"progressToken":"p","com.github.idemkey/idempotency-key":"forged"}}}`))
	got := string(rewriteCall(m, "KEY", 2, "k"))
	want := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"pay","arguments":{"n":1,"k":"KEY"},"_meta":{"progressToken":"p","com.github.idemkey/idempotency-key":"KEY","com.github.idemkey/attempt":2}}}`
	if got != want {
		t.Fatalf("rewriteCall:\n got %s\nwant %s", got, want)
	}
	m = readMessage([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"pay"}}`))
	if got := string(rewriteCall(m, "K", 1, "")); got != `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"pay","_meta":{"com.github.idemkey/idempotency-key":"K","com.github.idemkey/attempt":1}}}` {
		t.Fatalf("rewriteCall without _meta: %s", got)
	}
}

func TestReadEvents(t *testing.T) {
	in := ": a comment\r\nid: 1\r\ndata: {\"a\":\r\ndata:  1}\r\n\r\nretry: 250\nevent: message\ndata: {}\n\ndata: {\"cut\":"
	var got []string
	var ids []string
	var retry time.Duration
	err := readEvents(strings.NewReader(in), 0, func(d []byte) { got = append(got, string(d)) }, func(id string) { ids = append(ids, id) }, func(d time.Duration) { retry = d })
	if err == nil {
		t.Fatal("a stream cut in an event ended without an error")
	}
	if strings.Join(got, "|") != "{\"a\":\n 1}|{}" || strings.Join(ids, ",") != "1" || retry != 250*time.Millisecond {
		t.Fatalf("events %q, ids %q, retry %v", got, ids, retry)
	}
	if l := string(oneLine([]byte("{\"a\":\n 1}"))); l != `{"a":  1}` {
		t.Fatalf("oneLine: %q", l)
	}
}

func TestReplayResult(t *testing.T) {
	got := replayResultFor(`{"content":[],"_meta":{"x":1}}`)
	var res map[string]any
	if err := json.Unmarshal([]byte(got), &res); err != nil {
		t.Fatal(err)
	}
	meta := res["_meta"].(map[string]any)
	if meta["x"] != 1.0 || meta[MetaReplayed] != true || meta[MetaAttempt] != 3.0 || meta[MetaKey] != "K" {
		t.Fatalf("replay: %s", got)
	}
}

func TestAppendQuoted(t *testing.T) {
	got := appendQuoted(nil, "a\"\\\x01\x7f\xffé\t")
	var back string
	if err := json.Unmarshal(got, &back); err != nil || back != "a\"\\\x01\x7f\uFFFDé\t" || !utf8.Valid(got) {
		t.Fatalf("appendQuoted: %s (%q, %v)", got, back, err)
	}
}

func replayResultFor(result string) string {
	return string(replayResult(&ledger.Record{Key: "K", Attempt: 3, Stdout: ledger.Output{Data: []byte(result)}}))
}

// TestReplayText: what a reconcile printed (not a result) is replayed as the answer's text.
func TestReplayText(t *testing.T) {
	var res toolResultJSON
	if err := json.Unmarshal([]byte(replayResultFor("charge ch_1 exists\n")), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 1 || res.Content[0].Text != "charge ch_1 exists\n" || res.Meta[MetaReplayed] != true {
		t.Fatalf("%+v", res)
	}
}

type toolResultJSON struct {
	Content []struct{ Text string } `json:"content"`
	Meta    map[string]any          `json:"_meta"`
}

// TestReconciledOutput: a reconcile's output is the call's result when it is a CallToolResult,
// else the text of one; an empty or unkept output stays as it is.
func TestReconciledOutput(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"ch_1 exists\n", `{"content":[{"type":"text","text":"ch_1 exists\n"}]}`},
		{` {"content":[{"type":"text","text":"x"}],"structuredContent":{"id":1}}` + "\n", `{"content":[{"type":"text","text":"x"}],"structuredContent":{"id":1}}`},
		{`{"id":"ch_1"}`, `{"content":[{"type":"text","text":"{\"id\":\"ch_1\"}"}]}`},
		{`{"content":"not an array"}`, `{"content":[{"type":"text","text":"{\"content\":\"not an array\"}"}]}`},
		{`{"content":[1]`, `{"content":[{"type":"text","text":"{\"content\":[1]"}]}`},
	} {
		got := ReconciledOutput(ledger.Output{Data: []byte(c.in)})
		if string(got.Data) != c.want || got.Length != int64(len(c.want)) || got.SHA256 != fingerprint([]byte(c.want)) {
			t.Errorf("ReconciledOutput(%q) = %+v, want %s", c.in, got, c.want)
		}
	}
	for _, o := range []ledger.Output{{}, {Truncated: true, Length: 5 << 20, SHA256: "abc"}} {
		if got := ReconciledOutput(o); !reflect.DeepEqual(got, o) {
			t.Errorf("ReconciledOutput(%+v) = %+v", o, got)
		}
	}
}

// TestRepeatedNamesLinear: an object whose member names are repeated and escaped is read and
// edited in time linear in its size: each name is decoded once, and the
// last of each name is found in one pass.
func TestRepeatedNamesLinear(t *testing.T) {
	const n = 4000
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"com.github.idemkey\u002fattempt":1,"\u0078":2`)
	}
	b.WriteString("}")
	obj := []byte(b.String())
	before := nameDecodes.Load()
	out := setMembers(obj, kv{MetaAttempt, []byte("3")}, kv{"x", nil})
	if d := nameDecodes.Load() - before; d != 2*n {
		t.Fatalf("%d names decoded for %d members, want each once", d, 2*n)
	}
	if string(out) != `{"com.github.idemkey\u002fattempt":3}` {
		t.Fatalf("setMembers: %.200s", out)
	}
	if name := repeated(members(obj, 0), "x"); name != "x" {
		t.Fatalf("repeated: %q", name)
	}
}
