package key_test

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/clitest"
)

// TestOpenAIArgumentsHarness derives keys of OpenAI tool calls whose
// "arguments" string holds escaped lone surrogates, and compares them with
// the reference harness on node, which parses the envelope and then the
// string with two JSON.parse calls (refharness.js lines: the "text" member
// is such a string). Where the harness rejects the arguments, idemkey must
// too.
func TestOpenAIArgumentsHarness(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skipf("node not found: %v", err)
	}
	// Each case is the arguments string as written in the envelope,
	// between its quotes.
	cases := []string{
		`{\"a\":\"\ud800\"}`,
		`{\"\udfff\":1,\"a\":\"x\ud83dy\"}`,
		`[\"\ud83d\ude00\",\"\ud83d\",\"\ude00\",\"\ude00\ud83d\"]`,
		`{\"\ud800\":1,\"\ud83d\ude00\":2,\"\uffff\":3,\"\udbff\":4,\"\ue000\":5,\"a\":6}`,
		`{\"a\":\"\\ud800\"}`,
		`\"\ud800\"`,
		`{\"a\":\"\ud800\\n\ud801\", \"b\": {\"\udc00x\": [\"\udbff\udfff\"]}}`,
		`{\"a\":[\ud800]}`,
		`{\"a\":\"\ud800\"`,
		`\ud800`,
	}
	var lines strings.Builder
	for _, c := range cases {
		lines.WriteString(`{"task":"t","tool":"x","text":"` + c + `"}` + "\n")
	}
	cmd := exec.Command(node, filepath.Join("..", "..", "scripts", "refharness.js"), "lines")
	cmd.Stdin = strings.NewReader(lines.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for i := 0; sc.Scan(); i++ {
		var ref struct{ Key, Error string }
		if err := json.Unmarshal(sc.Bytes(), &ref); err != nil {
			t.Fatal(err)
		}
		envelope := `{"type":"function_call","call_id":"c1","name":"x","arguments":"` + cases[i] + `"}`
		got, stderr, code := clitest.Run(t, envelope, "key", "--task", "t", "--from", "openai")
		if ref.Error != "" {
			if code != cli.ExitUsage || got != "" {
				t.Errorf("%s: the harness rejects it (%s); idemkey exit %d, %q", cases[i], ref.Error, code, got)
			}
			continue
		}
		if code != 0 || got != ref.Key+"\n" {
			t.Errorf("%s: idemkey %q (exit %d, %s), harness %s", cases[i], got, code, stderr, ref.Key)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestOpenAIArgumentsErrorColumn: an error in an arguments string with
// escaped surrogates before it is placed by the string's own characters
// (a surrogate, a pair: one character each).
func TestOpenAIArgumentsErrorColumn(t *testing.T) {
	t.Parallel()
	envelope := `{"type":"function_call","name":"x","arguments":"{\"a\":\"\ud800\", \"\ud83d\ude00\ud800\": x}"}`
	_, stderr, code := clitest.Run(t, envelope, "key", "--task", "t", "--from", "openai")
	want := `unexpected character 'x' looking for a value (at 1:17 of the string)`
	if code != cli.ExitUsage || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr %q; want %q", code, stderr, want)
	}
}
