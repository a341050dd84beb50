package probe_test

import (
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/cmd/probe"
)

// probeView is what a test checks of probe's options: the request, the
// probe's settings, and an MCP probe's server and tools.
type probeView struct {
	URL, Method, KeyHeader string
	Headers                []string
	Body                   string // the body flag and its value
	Concurrency            int
	After, MaxTime         time.Duration
	Count                  string
	RequireKey, JSON       bool
	Yes, DryRun, Insecure  bool
	Reconcile              string
	MCPCommand             []string
	MCPURL                 string
	MCPTools, MCPKeyIn     []string
	MCPArgs                map[string]string
}

// TestProbeOptions: probe's flags become its options through NewCmd's
// runF seam, nothing sent and no server started; what is sent, and
// whether at all, comes from the command line only (IDEMKEY_YES and a
// config file's concurrency are not read), and a header that would carry
// the probe's own key is refused before anything runs.
func TestProbeOptions(t *testing.T) {
	view := func(o *probe.Options) probeView {
		r := o.Request
		v := probeView{Method: r.Method, KeyHeader: r.KeyHeader, Headers: r.Headers,
			Concurrency: o.Concurrency, After: o.After, MaxTime: o.MaxTime, Count: o.Count, RequireKey: o.RequireKey, JSON: o.JSON,
			Yes: o.Yes, DryRun: o.DryRun, Insecure: r.Transport.Insecure}
		if r.Data.Flag != "" {
			v.Body = r.Data.Flag + " " + r.Data.Value
		}
		if r.URL != nil {
			v.URL = r.URL.String()
		}
		if o.Reconcile != nil {
			v.Reconcile = o.Reconcile.Command
		}
		if m := o.MCP; m != nil {
			v.MCPCommand, v.MCPURL, v.MCPTools, v.MCPKeyIn = m.Command, m.URL, m.Tools, m.KeyIn
			v.MCPArgs = map[string]string{}
			for tool, args := range m.Args {
				v.MCPArgs[tool] = string(args)
			}
		}
		return v
	}
	clitest.CheckOptions(t, probe.NewCmd, view, []clitest.OptionsCase[probeView]{
		{Name: "an HTTP endpoint", Args: []string{"probe", "http://127.0.0.1:8080/charges", "--yes", "-X", "PUT", "-d", `{"amount":100}`,
			"-H", "Authorization: Bearer t", "--concurrency", "8", "--after", "5m", "--count", "echo 3", "--require-key", "--json", "-m", "2.5"},
			Want: probeView{URL: "http://127.0.0.1:8080/charges", Method: "PUT", KeyHeader: "Idempotency-Key", Headers: []string{"Authorization: Bearer t"},
				Body: `data {"amount":100}`, Concurrency: 8, After: 5 * time.Minute, MaxTime: 2500 * time.Millisecond, Count: "echo 3",
				RequireKey: true, JSON: true, Yes: true}},
		{Name: "the command line only", Env: map[string]string{"IDEMKEY_YES": "true", "IDEMKEY_INSECURE": "true"}, Config: "concurrency: 50\n",
			Args: []string{"probe", "https://staging.example.com/v1/x", "--dry-run", "--json=@body.json", "--key-header", "X-Key"},
			Want: probeView{URL: "https://staging.example.com/v1/x", Method: "POST", KeyHeader: "X-Key", Body: "json @body.json",
				Concurrency: 5, MaxTime: 30 * time.Second, DryRun: true}},
		{Name: "an MCP server", Args: []string{"probe", "--mcp", "--yes", "--tool", "charge", "--args", `{"amount":1}`, "--args", `refund={"id":"r"}`,
			"--key-in", "arg:idempotency_key", "--reconcile", "./exists.sh", "--", "node", "server.js", "--port", "0"},
			Want: probeView{Concurrency: 5, MaxTime: 30 * time.Second, Yes: true, Reconcile: "./exists.sh", MCPCommand: []string{"node", "server.js", "--port", "0"},
				MCPTools: []string{"charge"}, MCPKeyIn: []string{"arg:idempotency_key"}, MCPArgs: map[string]string{"": `{"amount":1}`, "refund": `{"id":"r"}`}}},
		{Name: "the key's header set", Args: []string{"probe", "http://127.0.0.1:8080/x", "--yes", "-H", "Idempotency-Key: k"}, Code: 2,
			Stderr: "-H sets Idempotency-Key, which the probe sets itself"},
	})
}
