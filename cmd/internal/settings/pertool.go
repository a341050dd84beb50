package settings

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

type toolSetting struct {
	s    *Settings
	name string
}

// toolPath resolves "tools.NAME.SETTING" (the config file's tools
// section, flag and environment first), if the file has it.
func (s *Settings) toolPath(path string) (toolSetting, bool) {
	rest, ok := strings.CutPrefix(path, "tools.")
	i := strings.LastIndexByte(rest, '.')
	if !ok || i <= 0 || s.file == nil {
		return toolSetting{}, false
	}
	tool, name := rest[:i], rest[i+1:]
	if _, ok := s.file.tools[tool][name]; !ok {
		return toolSetting{}, false
	}
	t, err := s.ForTool(tool)
	if err != nil {
		return toolSetting{}, false // loadConfig has checked every section
	}
	return toolSetting{t, name}, true
}

// ForTool returns the settings as they apply to one tool: a value in the
// config file's tools.<tool> section takes the place of the top-level one
// (the command line and the environment still come first).
func (s *Settings) ForTool(tool string) (*Settings, error) {
	t := &Settings{fs: s.fs, getenv: s.getenv, file: s.file, tool: tool}
	if err := t.resolve(); err != nil {
		return nil, err
	}
	return t, nil
}

// Scope is where a setting may be given beyond the command line (Names).
type Scope uint8

const (
	// CommandLine: from the command line only (CommandLineOnly).
	CommandLine Scope = iota
	// TopLevel: also IDEMKEY_* and the config file's top level.
	TopLevel
	// PerTool: also a config file's tools section (ReadPerTool).
	PerTool
)

// Names returns every flag name of every command in the tree, with where
// a command of the tree reads it (the widest scope of any): from the
// command line only, also from IDEMKEY_* and the config file, or also per
// tool from a tools section.
func Names(root *cobra.Command) map[string]Scope {
	names := map[string]Scope{}
	widen := func(name string, s Scope) { names[name] = max(names[name], s) }
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(fl *pflag.Flag) { widen(fl.Name, scopeOf(fl)) })
		c.PersistentFlags().VisitAll(func(fl *pflag.Flag) { widen(fl.Name, max(TopLevel, scopeOf(fl))) })
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	delete(names, "help")
	names["version"] = CommandLine
	names["config"] = CommandLine
	return names
}

// scopeOf is where one command reads the setting of its flag fl.
func scopeOf(fl *pflag.Flag) Scope {
	switch {
	case IsCommandLineOnly(fl):
		return CommandLine
	case len(fl.Annotations[perToolAnnotation]) > 0:
		return PerTool
	}
	return TopLevel
}

// perToolAnnotation marks a flag whose setting the command reads per tool.
const perToolAnnotation = "idemkey-per-tool"

// ReadPerTool marks the flags names of fl as settings the command reads
// for the tool of each call: a config file's tools section may hold them
// (tools.NAME.SETTING, see ForTool); any other setting there is warned
// about when the file is vetted.
func ReadPerTool(fl *pflag.FlagSet, names ...string) {
	for _, n := range names {
		if fl.Lookup(n) != nil {
			_ = fl.SetAnnotation(n, perToolAnnotation, []string{"true"})
		}
	}
}

// vet checks the file's settings against the names the commands know: a
// task id is an error, an unknown name a warning with the nearest known
// one.
func (c *configFile) vet(known map[string]Scope, warn func(string)) error {
	check := func(m map[string]*fileValue, tool bool) error {
		names := make([]string, 0, len(m))
		for n := range m {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			v := m[n]
			if n == "task" {
				return &UsageError{Err: fmt.Errorf("%s: the task id cannot come from a config file", c.where(v)),
					HintText: "one task id for every run gives every task one key scope, so one task's write is swallowed as another's duplicate; give --task or IDEMKEY_TASK"}
			}
			if scope, found := known[n]; scope != CommandLine {
				if tool && scope != PerTool {
					warn(fmt.Sprintf("%s: not read per tool, ignored (a tools section holds %s)", c.where(v), perToolList(known)))
				}
				continue
			} else if found {
				warn(fmt.Sprintf("%s: taken from the command line only, ignored here", c.where(v)))
				continue
			}
			msg := fmt.Sprintf("%s: unknown setting, ignored", c.where(v))
			if near := nearest(n, known); near != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", near)
			}
			warn(msg)
		}
		return nil
	}
	if err := check(c.top, false); err != nil {
		return err
	}
	for _, t := range c.toolNames() {
		if err := check(c.tools[t], true); err != nil {
			return err
		}
	}
	return nil
}

// perToolList names the settings a tools section holds, for messages.
func perToolList(known map[string]Scope) string {
	var names []string
	for n, scope := range known {
		if scope == PerTool {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	switch len(names) {
	case 0:
		return "none of these commands' settings"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// nearest returns the known name closest to n, if it is close enough to
// be a misspelling.
func nearest(n string, known map[string]Scope) string {
	best, bestD := "", 1<<30
	for k, scope := range known {
		if scope == CommandLine {
			continue
		}
		d := editDistance(n, k)
		if d < bestD || (d == bestD && k < best) {
			best, bestD = k, d
		}
	}
	if bestD <= max(2, len(n)/3) {
		return best
	}
	return ""
}

// editDistance is the Damerau–Levenshtein distance (adjacent
// transpositions count as one edit: retyr → retry).
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// ToolNames are the tools the config file has a section for, sorted (none
// without a file).
func (s *Settings) ToolNames() []string {
	if s.file == nil {
		return nil
	}
	return s.file.toolNames()
}

// ToolSets reports whether the config file's section for tool sets name.
func (s *Settings) ToolSets(tool, name string) bool {
	if s.file == nil {
		return false
	}
	_, ok := s.file.tools[tool][name]
	return ok
}

// Nearest returns the name of names closest to n, if it is close enough to
// be a misspelling of it, or "".
func Nearest(n string, names []string) string {
	known := make(map[string]Scope, len(names))
	for _, k := range names {
		known[k] = TopLevel
	}
	return nearest(n, known)
}
