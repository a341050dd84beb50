package settings

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// New returns the settings of fs before any is resolved (the defaults):
// what Main holds until the running command's settings are loaded.
func New(fs *pflag.FlagSet, getenv func(string) string) *Settings {
	return &Settings{fs: fs, getenv: getenv}
}

// Load resolves the running command's settings: the config file is found
// and parsed, vetted against the settings the commands know (names, the
// whole tree's: see Names), and every flag's value is resolved and
// type-checked. The settings are returned even with an error, so that
// the error is painted as --color asks. A command that reads no setting
// from a file (help, version, completion: readsNoFile) ignores a broken
// file unless --config names it.
func Load(cmd *cobra.Command, getenv func(string) string, names func() map[string]Scope, warn func(string)) (*Settings, error) {
	s := New(cmd.Flags(), getenv)
	// --color first, so that the errors below are painted as asked.
	if err := s.resolve(); err != nil {
		// An IDEMKEY_* value that does not fit its type: report it, but
		// with the file's values not yet known.
		return s, err
	}
	if _, err := s.Choice("color", "auto", "always", "never"); err != nil {
		return s, err
	}
	path := s.GetString("config")
	if !s.IsSet("config") {
		path = getenv("IDEMKEY_CONFIG")
	}
	if path == "" {
		path = defaultPath(getenv)
	}
	if path == "" || (!s.IsSet("config") && readsNoFile(cmd)) {
		return s, nil
	}
	file, err := readConfigFile(path)
	if err != nil {
		return s, err
	}
	if err := file.vet(names(), warn); err != nil {
		return s, err
	}
	s.file = file
	if err := s.resolve(); err != nil {
		return s, err
	}
	// Each tool's section is checked now, not when a command asks for it.
	for _, tool := range file.toolNames() {
		if _, err := s.ForTool(tool); err != nil {
			return s, err
		}
	}
	_, err = s.Choice("color", "auto", "always", "never")
	return s, err
}

// readsNoFile says whether a command reads no setting from the config
// file, so that a broken file does not stop help, version or completion.
func readsNoFile(cmd *cobra.Command) bool {
	for c := cmd; c != nil; c = c.Parent() {
		switch c.Name() {
		case "help", "version", "completion", cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd:
			return true
		}
	}
	return false
}

// defaultPath returns $XDG_CONFIG_HOME/idemkey/config.{yaml,yml,toml,json}
// (~/.config when XDG_CONFIG_HOME is unset), the first that exists, or "".
func defaultPath(getenv func(string) string) string {
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		if home := getenv("HOME"); home != "" {
			dir = filepath.Join(home, ".config")
		}
	}
	if dir == "" {
		return ""
	}
	for _, ext := range []string{"yaml", "yml", "toml", "json"} {
		p := filepath.Join(dir, "idemkey", "config."+ext)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}
