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

// Names returns every flag name of every command in the tree: the
// settings a config file may hold (true), or the names it may not because
// they are taken from the command line only (false).
func Names(root *cobra.Command) map[string]bool {
	names := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(fl *pflag.Flag) {
			names[fl.Name] = names[fl.Name] || !IsCommandLineOnly(fl)
		})
		c.PersistentFlags().VisitAll(func(fl *pflag.Flag) { names[fl.Name] = true })
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	delete(names, "help")
	names["version"] = false
	names["config"] = false
	return names
}

// vet checks the file's settings against the names the commands know: a
// task id is an error, an unknown name a warning with the nearest known
// one.
func (c *configFile) vet(known map[string]bool, warn func(string)) error {
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
			if ok, found := known[n]; ok {
				if tool && !PerTool[n] {
					warn(fmt.Sprintf("%s: not read per tool, ignored (a tools section holds %s)", c.where(v), perToolList()))
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
func perToolList() string {
	names := make([]string, 0, len(PerTool))
	for n := range PerTool {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// nearest returns the known name closest to n, if it is close enough to
// be a misspelling.
func nearest(n string, known map[string]bool) string {
	best, bestD := "", 1<<30
	for k, ok := range known {
		if !ok {
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

// PerTool are the settings a config file's tools section may hold: the
// ones a command reads for the tool of each call (anything else there is
// warned about when the file is vetted).
var PerTool = map[string]bool{"recover": true, "only": true, "omit": true, "mcp": true, "key-arg": true}

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
	known := make(map[string]bool, len(names))
	for _, k := range names {
		known[k] = true
	}
	return nearest(n, known)
}
