package cmd

import (
	"errors"
	"strings"

	"github.com/idemkey/idemkey/canon"
	"github.com/idemkey/idemkey/derive"
	"github.com/spf13/pflag"
)

// The shapes a tool call can arrive in (--from): see derive/spec.go.
const (
	fromArgs      = derive.FromArgs
	fromCall      = derive.FromCall
	fromMCP       = derive.FromMCP
	fromOpenAI    = derive.FromOpenAI
	fromAnthropic = derive.FromAnthropic
	fromAuto      = derive.FromAuto
)

var fromNames = derive.FromNames

func validFrom(s string) bool { return derive.ValidFrom(s) }

// callSpec is derive.Spec as the commands hold it, built from --from,
// --task, --tool, --scheme, --only, --omit and the config file's tools
// section (Factory.callSpec); the shapes, envelopes and selections it
// reads live in derive/spec.go.
type callSpec derive.Spec

// loadedCall is a call read from input.
type loadedCall = derive.Loaded

func (s *callSpec) d() *derive.Spec { return (*derive.Spec)(s) }

// load parses one input (a file, or one line of a batch) into a call:
// derive.Spec.Load, a missing task or tool as a usage error.
func (s *callSpec) load(data []byte) (loadedCall, error) {
	lc, err := s.d().Load(data)
	switch {
	case errors.Is(err, derive.ErrEmptyTask):
		return lc, &UsageError{Err: errors.New("missing task id: give --task or set IDEMKEY_TASK"), hint: "the task id scopes the key; it never comes from a model's envelope"}
	case errors.Is(err, derive.ErrEmptyTool):
		return lc, &UsageError{Err: errors.New("missing tool name: give --tool or set IDEMKEY_TOOL")}
	}
	return lc, err
}

// forTool returns the spec as it applies to a call of tool (derive.Spec.ForTool).
func (s *callSpec) forTool(tool string) *callSpec { return (*callSpec)(s.d().ForTool(tool)) }

// fresh returns a copy of s with parsers of its own (derive.Spec.Copy).
func (s *callSpec) fresh() *callSpec { return (*callSpec)(s.d().Copy()) }

// selectArgs applies --only, then --omit (derive.Spec.SelectArgs).
func (s *callSpec) selectArgs(args canon.Node) (canon.Node, []int, error) {
	return s.d().SelectArgs(args)
}

// The envelope helpers other commands' faces read logged calls with.
var (
	str                = derive.StringAt
	isType             = derive.IsType
	isToolUse          = derive.IsToolUse
	openAICallName     = derive.OpenAICallName
	anthropicBlockName = derive.AnthropicBlockName
)

// envelopeError is input that parsed as JSON but is not what a command
// expected (a message and a hint).
type envelopeError struct{ msg, hint string }

func (e *envelopeError) Error() string { return e.msg }
func (e *envelopeError) Hint() string  { return e.hint }

// perToolSettings are the settings a config file's tools section may
// hold: the ones a command reads for the tool of each call (anything
// else there is warned about when the file is vetted).
var perToolSettings = map[string]bool{"recover": true, "only": true, "omit": true, "mcp": true, "key-arg": true}

// toolSelections resolves --only and --omit for each tool whose section
// in the config file sets them, as the loader orders them (ForTool): the
// flag, then IDEMKEY_ONLY / IDEMKEY_OMIT, then the tool's section, then
// the file's top level. Each pointer is checked as --only and --omit are,
// the error naming the file and the setting.
func (f *Factory) toolSelections() (map[string]derive.Selection, error) {
	v := f.Config
	if v == nil || v.file == nil || v.lookup("omit") == nil {
		return nil, nil
	}
	var m map[string]derive.Selection
	for _, tool := range v.file.toolNames() {
		sec := v.file.tools[tool]
		_, only := sec["only"]
		_, omit := sec["omit"]
		if !only && !omit {
			continue
		}
		t, err := v.ForTool(tool)
		if err != nil {
			return nil, err
		}
		sel := derive.Selection{Only: t.GetStringSlice("only"), Omit: t.GetStringSlice("omit")}
		if err := checkPointers(t.Source("only"), t.Source("omit"), sel.Only, sel.Omit); err != nil {
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
func sectionName(top, t *Settings, name string) string {
	if src := t.Source(name); src != top.Source(name) {
		return src
	}
	return ""
}

// checkPointers checks --only and --omit pointers, as usage errors
// naming where each list came from (derive.CheckSelection).
func checkPointers(onlySrc, omitSrc string, only, omit []string) error {
	if err := derive.CheckSelection(onlySrc, omitSrc, only, omit); err != nil {
		return usageFrom(err)
	}
	return nil
}

// pointerFlag checks that p, given with flag (--only, --omit), is an RFC
// 6901 JSON Pointer, as a usage error naming the flag.
func pointerFlag(flag, p string) error {
	if err := derive.CheckPointer(flag, p); err != nil {
		return usageFrom(err)
	}
	return nil
}

// addCallFlags registers the flags that build a callSpec.
func addCallFlags(fl *pflag.FlagSet) {
	fl.String("task", "", "task id that scopes the key (IDEMKEY_TASK)")
	fl.String("tool", "", "tool name (IDEMKEY_TOOL); must match the envelope's name if it has one")
	fl.String("scheme", "js", "canonical form: js (the reference harness) or jcs (RFC 8785)")
	fl.String("from", fromArgs, "input format: "+strings.Join(fromNames, ", "))
	fl.StringArray("only", nil, "derive the key from just this part of the args (RFC 6901 pointer; repeatable)")
	fl.StringArray("omit", nil, "drop this part of the args before deriving (RFC 6901 pointer; repeatable)")
	fl.Bool("allow-missing", false, "let --only pointers that match nothing be ignored")
}

// callSpec reads the flags registered by addCallFlags.
func (f *Factory) callSpec() (*callSpec, error) {
	v := f.Config
	s := &callSpec{
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
	if s.Scheme, err = f.scheme(); err != nil {
		return nil, err
	}
	if !validFrom(s.From) {
		return nil, usageErrorf("invalid --from %q (want one of %s)", s.From, strings.Join(fromNames, ", "))
	}
	if err := checkPointers(f.Config.Source("only"), f.Config.Source("omit"), s.Only, s.Omit); err != nil {
		return nil, err
	}
	if s.Tools, err = f.toolSelections(); err != nil {
		return nil, err
	}
	s.Warn = func(w derive.Warning) { f.printWarning(warning{msg: w.Msg, hint: w.Hint}) }
	if s.From != fromCall && s.From != fromAuto && s.Task == "" {
		// (auto may read a call record, which carries its task: Load
		// says when the input needs --task.)
		_, _, err := f.taskTool() // the usage error for a missing task
		return nil, err
	}
	if err := (derive.Call{Task: orX(s.Task), Tool: orX(s.Tool)}).Validate(); err != nil {
		return nil, &UsageError{Err: err}
	}
	return s, nil
}

func orX(s string) string {
	if s == "" {
		return "x"
	}
	return s
}

// orFlag is src, or flag when src is empty.
func orFlag(src, flag string) string {
	if src == "" {
		return flag
	}
	return src
}

// warning is something about an input that was used, for standard error.
type warning struct{ msg, hint string }

func warningFrom(w derive.Warning) warning { return warning{msg: w.Msg, hint: w.Hint} }
