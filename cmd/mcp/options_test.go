package mcp_test

import (
	"strings"
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/cmd/mcp"
	dmcp "github.com/idemkey/idemkey/derive/mcp"
)

// mcpView is what a test checks of mcp's options: the server, the task,
// the key's selection and form, the tools' own policies, the ledger and
// the hold's durations.
type mcpView struct {
	Command             []string
	URL                 string
	Headers             []string
	Task, TaskMeta      string
	SessionTask         bool
	Scheme              string
	Omit                []string
	Format, Ledger      string
	KeyArg              string
	Tools               map[string]string // each tool's mode, and its key-arg if any
	Wait, Lease, Retain time.Duration
	Log                 string
	MaxMessage          int64
	PassEnv             []string
	Verbose             bool
}

// TestMCPOptions: mcp's flags, IDEMKEY_* variables and config file become
// its options through NewCmd's runF seam, no ledger opened and no server
// started; the server's own flags stay its own, a session without a task
// id gets one of its own, and --task with --task-meta is refused before
// anything runs.
func TestMCPOptions(t *testing.T) {
	view := func(o *mcp.Options) mcpView {
		v := mcpView{Command: o.Command, URL: o.URL, Headers: o.Headers, Task: o.Task, TaskMeta: o.TaskMeta, SessionTask: o.SessionTask,
			Scheme: o.Keying.Scheme.String(), Omit: o.Default.Select.Omit, Format: o.Keying.Format.Name, Ledger: o.Ledger, KeyArg: o.Default.KeyArg,
			Wait: o.Wait, Lease: o.Lease, Retain: o.Retain, Log: o.Log, MaxMessage: o.MaxMessage, PassEnv: o.PassEnv, Verbose: o.Verbose}
		for name, p := range o.Tools {
			if v.Tools == nil {
				v.Tools = map[string]string{}
			}
			v.Tools[name] = map[dmcp.Mode]string{dmcp.ModeAuto: "auto", dmcp.ModeOnce: "once", dmcp.ModePass: "pass"}[p.Mode] + " " + p.KeyArg
		}
		if o.SessionTask && strings.HasPrefix(o.Task, "session-") && len(o.Task) == len("session-")+32 {
			v.Task = "session-…" // a new random id, 128 bits in hex
		}
		return v
	}
	clitest.CheckOptions(t, mcp.NewCmd, view, []clitest.OptionsCase[mcpView]{
		{Name: "a stdio server, flags", Args: []string{"mcp", "--task", "t-42", "--omit", "/trace_id", "--format", "uuid", "--ledger", "/tmp/l.db",
			"--once", "search", "--pass", "ping", "--key-arg", "idempotency_key",
			"--wait", "5s", "--lease", "1m", "--retain", "2d", "--log", "calls.jsonl", "--max-message", "1MiB", "--env", "IDEMKEY_LEDGER", "-v",
			"--", "npx", "-y", "server", "--task", "x"},
			Want: mcpView{Command: []string{"npx", "-y", "server", "--task", "x"}, Task: "t-42", Scheme: "js", Omit: []string{"/trace_id"}, Format: "uuid",
				Ledger: "/tmp/l.db", KeyArg: "idempotency_key", Tools: map[string]string{"search": "once idempotency_key", "ping": "pass idempotency_key"}, Wait: 5 * time.Second, Lease: time.Minute, Retain: 48 * time.Hour, Log: "calls.jsonl", MaxMessage: 1 << 20,
				PassEnv: []string{"IDEMKEY_LEDGER"}, Verbose: true}},
		{Name: "a URL, a session task, variables and the config file", Env: map[string]string{"IDEMKEY_LEDGER": "/srv/ledger.db", "IDEMKEY_WAIT": "90s"},
			Config: "scheme: jcs\nomit: [\"/nonce\"]\nretain: 1h\ntools:\n  charge:\n    key-arg: request_id\n",
			Args:   []string{"mcp", "--url", "https://mcp.example.com/mcp", "-H", "Authorization: Bearer t"},
			Want: mcpView{URL: "https://mcp.example.com/mcp", Headers: []string{"Authorization: Bearer t"}, Task: "session-…", SessionTask: true,
				Scheme: "jcs", Omit: []string{"/nonce"}, Format: "hex", Tools: map[string]string{"charge": "auto request_id"}, Ledger: "/srv/ledger.db", Wait: 90 * time.Second, Lease: 30 * time.Second,
				Retain: time.Hour, MaxMessage: 256 << 20}},
		{Name: "the task from a _meta member", Env: map[string]string{"IDEMKEY_TASK_META": "com.example/task-id", "IDEMKEY_LEDGER": "/srv/l.db"},
			Args: []string{"mcp", "./server"},
			Want: mcpView{Command: []string{"./server"}, TaskMeta: "com.example/task-id", Scheme: "js", Format: "hex", Ledger: "/srv/l.db",
				Wait: time.Minute, Lease: 30 * time.Second, Retain: 7 * 24 * time.Hour, MaxMessage: 256 << 20}},
		{Name: "task and task-meta", Args: []string{"mcp", "--task", "t", "--task-meta", "m", "./server"}, Code: 2, Stderr: "give --task or --task-meta, not both"},
	})
}
