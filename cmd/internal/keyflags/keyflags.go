// Package keyflags is the key options every deriving command shares: the
// call's shape and scope (--from, --task, --tool, --scheme, --only,
// --omit and the config file's tools sections: Spec) and the key's form
// (--format, --prefix, --max-len, --secret-env: Key).
package keyflags

import (
	"errors"
	"strings"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/settings"
	"github.com/idemkey/idemkey/derive"
	"github.com/spf13/pflag"
)

// Scheme returns the --scheme setting.
func Scheme(f *cli.Factory) (canon.Scheme, error) {
	s, err := canon.ParseScheme(f.Config.GetString("scheme"))
	if err != nil {
		return 0, &cli.UsageError{Err: err}
	}
	return s, nil
}

// TaskTool returns the --task and --tool settings (flag, IDEMKEY_TASK and
// IDEMKEY_TOOL, config), both required.
func TaskTool(f *cli.Factory) (task, tool string, err error) {
	task, tool = f.Config.GetString("task"), f.Config.GetString("tool")
	switch {
	case task == "":
		return "", "", &cli.UsageError{Err: errors.New("missing task id: give --task or set IDEMKEY_TASK"),
			HintText: "the task id scopes the key; an empty one would let keys collide across tasks"}
	case tool == "":
		return "", "", &cli.UsageError{Err: errors.New("missing tool name: give --tool or set IDEMKEY_TOOL"),
			HintText: "the key is scoped by the tool name as well as the task id"}
	}
	if err := (derive.Call{Task: task, Tool: tool}).Validate(); err != nil {
		return "", "", &cli.UsageError{Err: err}
	}
	return task, tool, nil
}

// Load parses one input (a file, or one line of a batch) into a call:
// derive.Spec.Load, a missing task or tool as a usage error.
func Load(s *derive.Spec, data []byte) (derive.Loaded, error) {
	lc, err := s.Load(data)
	switch {
	case errors.Is(err, derive.ErrEmptyTask):
		return lc, &cli.UsageError{Err: errors.New("missing task id: give --task or set IDEMKEY_TASK"), HintText: "the task id scopes the key; it never comes from a model's envelope"}
	case errors.Is(err, derive.ErrEmptyTool):
		return lc, &cli.UsageError{Err: errors.New("missing tool name: give --tool or set IDEMKEY_TOOL")}
	}
	return lc, err
}

// ToolSelections resolves --only and --omit for each tool whose section
// in the config file sets them, as the loader orders them (ForTool): the
// flag, then IDEMKEY_ONLY / IDEMKEY_OMIT, then the tool's section, then
// the file's top level. Each pointer is checked as --only and --omit are,
// the error naming the file and the setting.
func ToolSelections(f *cli.Factory) (map[string]derive.Selection, error) {
	v := f.Config
	if v == nil || v.ToolNames() == nil || v.Lookup("omit") == nil {
		return nil, nil
	}
	var m map[string]derive.Selection
	for _, tool := range v.ToolNames() {
		if !v.ToolSets(tool, "only") && !v.ToolSets(tool, "omit") {
			continue
		}
		t, err := v.ForTool(tool)
		if err != nil {
			return nil, err
		}
		sel := derive.Selection{Only: t.GetStringSlice("only"), Omit: t.GetStringSlice("omit")}
		if err := CheckPointers(t.Source("only"), t.Source("omit"), sel.Only, sel.Omit); err != nil {
			return nil, err
		}
		sel.OnlyName, sel.OmitName = sectionName(v, t, "only"), sectionName(v, t, "omit")
		if m == nil {
			m = map[string]derive.Selection{}
		}
		m[tool] = sel
	}
	return m, nil
}

// sectionName is how a per-tool setting is named in messages: its place
// in the tools section, or "" (the flag's name) when it came from
// elsewhere.
func sectionName(top, t *settings.Settings, name string) string {
	if src := t.Source(name); src != top.Source(name) {
		return src
	}
	return ""
}

// CheckPointers checks --only and --omit pointers, as usage errors
// naming where each list came from (derive.CheckSelection).
func CheckPointers(onlySrc, omitSrc string, only, omit []string) error {
	if err := derive.CheckSelection(onlySrc, omitSrc, only, omit); err != nil {
		return cli.UsageFrom(err)
	}
	return nil
}

// PointerFlag checks that p, given with flag (--only, --omit), is an RFC
// 6901 JSON Pointer, as a usage error naming the flag.
func PointerFlag(flag, p string) error {
	if err := derive.CheckPointer(flag, p); err != nil {
		return cli.UsageFrom(err)
	}
	return nil
}

// AddCallFlags registers the flags that build a Spec.
func AddCallFlags(fl *pflag.FlagSet) {
	fl.String("task", "", "task id that scopes the key (IDEMKEY_TASK)")
	fl.String("tool", "", "tool name (IDEMKEY_TOOL); must match the envelope's name if it has one")
	fl.String("scheme", "js", "canonical form: js (the reference harness) or jcs (RFC 8785)")
	fl.String("from", derive.FromArgs, "input format: "+strings.Join(derive.FromNames, ", "))
	settings.OneOf(fl, "scheme", canon.SchemeNames...)
	settings.OneOf(fl, "from", derive.FromNames...)
	fl.StringArray("only", nil, "derive the key from just this part of the args (an RFC 6901 `POINTER`; repeatable)")
	fl.StringArray("omit", nil, "drop this part of the args before deriving (an RFC 6901 `POINTER`; repeatable)")
	settings.ReadPerTool(fl, "only", "omit")
	fl.Bool("allow-missing", false, "let --only pointers that match nothing be ignored")
}

// Spec reads the flags registered by AddCallFlags.
func Spec(f *cli.Factory) (*derive.Spec, error) {
	v := f.Config
	s := &derive.Spec{
		From:         v.GetString("from"),
		FromSet:      v.IsSet("from"),
		Task:         v.GetString("task"),
		Tool:         v.GetString("tool"),
		TaskName:     v.Source("task"),
		ToolName:     v.Source("tool"),
		Only:         v.GetStringSlice("only"),
		Omit:         v.GetStringSlice("omit"),
		AllowMissing: v.GetBool("allow-missing"),
	}
	var err error
	if s.Scheme, err = Scheme(f); err != nil {
		return nil, err
	}
	if !derive.ValidFrom(s.From) {
		return nil, cli.Usagef("invalid --from %q (want one of %s)", s.From, strings.Join(derive.FromNames, ", "))
	}
	if err := CheckPointers(f.Config.Source("only"), f.Config.Source("omit"), s.Only, s.Omit); err != nil {
		return nil, err
	}
	if s.Tools, err = ToolSelections(f); err != nil {
		return nil, err
	}
	s.Warn = f.PrintWarning
	if s.From != derive.FromCall && s.From != derive.FromAuto && s.Task == "" {
		// (auto may read a call record, which carries its task: Load
		// says when the input needs --task.)
		_, _, err := TaskTool(f) // the usage error for a missing task
		return nil, err
	}
	if err := (derive.Call{Task: orX(s.Task), Tool: orX(s.Tool)}).Validate(); err != nil {
		return nil, &cli.UsageError{Err: err}
	}
	return s, nil
}

// orX stands for an empty task or tool when the rest of a call is checked.
func orX(s string) string {
	if s == "" {
		return "x"
	}
	return s
}
