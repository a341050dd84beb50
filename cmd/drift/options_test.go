package drift_test

import (
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/drift"
	"github.com/idemkey/idemkey/cmd/internal/clitest"
	ddrift "github.com/idemkey/idemkey/derive/drift"
)

// driftView is what a test checks of drift's options: the files, the
// calls' shape and selection, the task's place, the key's form and some
// of the retry rule's settings.
type driftView struct {
	Files                 []string
	From, Task, Tool      string
	Scheme                string
	Omit                  []string
	TaskPointer, TaskAttr string
	Format                string
	JSON                  bool
	Window, MaxBetween    int
	WindowTime            time.Duration
	Share                 float64
}

// TestDriftOptions: drift's flags, IDEMKEY_* variables and config file
// become its options through NewCmd's runF seam, no log read; records
// carry their tasks, so an IDEMKEY_TASK is not theirs, and a retry rule
// out of range is refused before anything runs.
func TestDriftOptions(t *testing.T) {
	d := ddrift.Defaults
	view := func(o *drift.Options) driftView {
		a := o.Analysis
		return driftView{Files: o.Files, From: o.Spec.From, Task: o.Spec.Task, Tool: o.Spec.Tool, Scheme: o.Spec.Scheme.String(), Omit: o.Spec.Omit,
			TaskPointer: o.TaskPointer, TaskAttr: o.TaskAttr, Format: o.Key.Format.Name, JSON: o.JSON,
			Window: a.Window, MaxBetween: a.MaxBetween, WindowTime: a.WindowTime, Share: a.Share}
	}
	clitest.CheckOptions(t, drift.NewCmd, view, []clitest.OptionsCase[driftView]{
		{Name: "records from standard input, a task variable ignored", Env: map[string]string{"IDEMKEY_TASK": "t-env"}, Args: []string{"drift"},
			Want: driftView{Files: []string{"-"}, From: "call", Scheme: "js", Format: "hex", Window: d.Window, MaxBetween: d.MaxBetween, WindowTime: d.WindowTime, Share: d.Share}},
		{Name: "envelopes, flags", Args: []string{"drift", "--from", "openai", "--task-pointer", "/task_id", "--omit", "/nonce", "--json",
			"--window", "50", "--max-between", "0", "--window-time", "90s", "--share", "0.25", "a.jsonl", "b.jsonl"},
			Want: driftView{Files: []string{"a.jsonl", "b.jsonl"}, From: "openai", Scheme: "js", Omit: []string{"/nonce"}, TaskPointer: "/task_id",
				Format: "hex", JSON: true, Window: 50, MaxBetween: -1, WindowTime: 90 * time.Second, Share: 0.25}},
		{Name: "otel, variables and the config file", Env: map[string]string{"IDEMKEY_TASK_ATTR": "gen_ai.conversation.id", "IDEMKEY_WINDOW_TIME": "1h"},
			Config: "scheme: jcs\nformat: uuid\nwindow: 20\n", Args: []string{"drift", "--from", "otel", "--task", "t-1", "traces.json"},
			Want: driftView{Files: []string{"traces.json"}, From: "otel", Task: "t-1", Scheme: "jcs", TaskAttr: "gen_ai.conversation.id",
				Format: "uuid", Window: 20, MaxBetween: d.MaxBetween, WindowTime: time.Hour, Share: d.Share}},
		{Name: "otel from IDEMKEY_FROM", Env: map[string]string{"IDEMKEY_FROM": "otel"}, Args: []string{"drift", "traces.json"},
			Want: driftView{Files: []string{"traces.json"}, From: "otel", Scheme: "js", Format: "hex", Window: d.Window, MaxBetween: d.MaxBetween, WindowTime: d.WindowTime, Share: d.Share}},
		{Name: "a from drift does not read", Config: "from: otlp\n", Args: []string{"drift"}, Code: 2, Stderr: `want args, call, mcp, openai, anthropic, auto or otel`},
		{Name: "share past 1", Args: []string{"drift", "--share", "1.5"}, Code: 2, Stderr: "invalid --share 1.5"},
	})
}
