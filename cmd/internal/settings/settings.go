// Package settings is idemkey's settings loader: every flag of the running
// command resolved once, before it runs, from the command line, IDEMKEY_*,
// the config file or the flag's default (see Settings).
//
// It is written by hand, not with viper, because viper changes what the
// user wrote: it reads an unquoted `007` as 7 and `2024.10` as 2024.1 (a
// tool name or a task id that is not the one given is a different key),
// lower-cases keys so that the tools `Pay` and `pay` collapse into one
// section, and silently turns `max-len: abc` into 0. Here a value is kept
// as written and checked against its flag's type, and a value that does
// not fit is a usage error naming where it came from.
//
// The loader is split by what it does: settings.go (the type and its
// getters of text), types.go (typed getters and their errors), sources.go
// (flag, environment, file, default), files.go (reading YAML, TOML and
// JSON config files), pertool.go (the tools sections and vetting a file
// against the commands' settings) and load.go (what runs before a
// command).
package settings

import (
	"github.com/spf13/pflag"
)

// Settings is the one way a command reads its settings. Every flag of the
// running command is a setting, resolved once, before the command runs, as:
//
//  1. the flag on the command line;
//  2. the environment variable IDEMKEY_<NAME> (--key-header is
//     IDEMKEY_KEY_HEADER; an empty variable counts as unset);
//  3. the config file (--config, IDEMKEY_CONFIG, or
//     $XDG_CONFIG_HOME/idemkey/config.{yaml,yml,toml,json});
//  4. the flag's default.
//
// Each value is checked against its flag's type when it is resolved, so a
// getter never fails: IDEMKEY_KEY_QUOTED=maybe, `max-len: abc` or an
// unquoted `tool: 2024.10` is a usage error naming where it came from
// before the command runs. A string setting from a config file must be a
// string there (quoted where YAML would read a number, a date or a bool):
// it is used exactly as written. The task id never comes from a config
// file. Flags marked with CommandLineOnly are taken from the command line
// only.
//
// Checks beyond the type (a range, a choice) belong to the command; it
// names the value's source with Source or builds the error with Invalid.
// Per-tool values come from the file's tools section through ForTool.
type Settings struct {
	fs     *pflag.FlagSet
	getenv func(string) string
	file   *configFile
	tool   string // ForTool: the tools.<tool> section applies
	vals   map[string]resolved
}

// resolved is one setting's value and where it came from.
type resolved struct {
	text []string // one element, except for list settings
	src  string   // "--retry", "IDEMKEY_RETRY", "config.yaml:3: retry", "default"
	set  bool     // from the command line, the environment or the file
}

// GetString returns a setting's value as text (list settings: the first).
// "tools.NAME.SETTING" is ForTool(NAME).GetString(SETTING), as viper
// spelled it.
func (s *Settings) GetString(name string) string {
	if v, ok := s.vals[name]; ok && len(v.text) > 0 {
		return v.text[0]
	}
	if t, ok := s.toolPath(name); ok {
		return t.s.GetString(t.name)
	}
	return ""
}

// Get returns a setting's text ([]string for list settings), or nil for a
// name the running command does not have.
func (s *Settings) Get(name string) any {
	v, ok := s.vals[name]
	if !ok {
		return nil
	}
	if fl := s.Lookup(name); fl != nil && IsListType(fl.Value.Type()) {
		return append([]string(nil), v.text...)
	}
	if len(v.text) == 0 {
		return ""
	}
	return v.text[0]
}

// IsSet reports whether a setting was given on the command line, in the
// environment or in the config file (not just defaulted).
func (s *Settings) IsSet(name string) bool { return s.vals[name].set }

// Source names where a setting's value came from: "--retry",
// "IDEMKEY_RETRY", "config.yaml: retry" or "default".
func (s *Settings) Source(name string) string {
	if v, ok := s.vals[name]; ok {
		return v.src
	}
	return "--" + name
}

// Lookup is the running command's flag of that name, or nil.
func (s *Settings) Lookup(name string) *pflag.Flag {
	if s.fs == nil {
		return nil
	}
	return s.fs.Lookup(name)
}
