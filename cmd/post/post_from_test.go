package post_test

import (
	"strings"
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/clitest"
)

// TestPostFromEnvelope posts a logged tool call: the key is the one the
// bare arguments give, in the format asked for, and the body is the
// canonical arguments (the whole value, even when --omit narrows the key).
func TestPostFromEnvelope(t *testing.T) {
	t.Parallel()
	const envelope = `{"id":"call_1","type":"function","function":{"name":"pay","arguments":"{\"b\": 1, \"a\": \"é\", \"trace\": \"x9\"}"}}`
	bare := `{"b": 1, "a": "é", "trace": "x9"}`
	for _, tc := range []struct {
		name  string
		args  []string
		keyOf []string // arguments of 'idemkey key' that must give the same key
	}{
		{"openai", []string{"--from", "openai"}, nil},
		{"auto", []string{"--from", "auto"}, nil},
		{"uuid", []string{"--from", "auto", "--format", "uuid", "--prefix", "pay-"}, []string{"--format", "uuid", "--prefix", "pay-"}},
		{"omit", []string{"--from", "openai", "--omit", "/trace"}, []string{"--omit", "/trace"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newIdemServer(t)
			r := clitest.Streams{In: strings.NewReader(envelope)}.Run(t, append([]string{"post", s.URL + "/charges", "--task", "t1", "-d", "@-"}, tc.args...)...)
			postCheckExit(t, r, 0)
			k := clitest.Streams{In: strings.NewReader(bare)}.Run(t, append([]string{"key", "--task", "t1", "--tool", "pay"}, tc.keyOf...)...)
			if k.Code != 0 {
				t.Fatalf("key: %s", k.Stderr)
			}
			postCheckAttempts(t, s, 1, strings.TrimSpace(k.Stdout), postCanonical(t, bare), 1)
		})
	}
	// The envelope's tool name must agree with --tool.
	r := clitest.Streams{In: strings.NewReader(envelope)}.Run(t, "post", "http://127.0.0.1:1/x", "--task", "t1", "--tool", "refund", "--from", "openai", "-d", "@-")
	postCheckExit(t, r, cli.ExitUsage)
	if !strings.Contains(r.Stderr, `contradicts the tool name "pay"`) {
		t.Errorf("stderr %q", r.Stderr)
	}
}
