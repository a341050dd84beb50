package cmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/idemkey/idemkey/canon"
	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
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
// file. Flags marked with commandLineOnly are taken from the command line
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

// GetStringSlice returns a list setting (--only, --omit, -H).
func (s *Settings) GetStringSlice(name string) []string {
	if v, ok := s.vals[name]; ok {
		return append([]string(nil), v.text...)
	}
	return nil
}

// GetBool returns a boolean setting.
func (s *Settings) GetBool(name string) bool {
	b, _ := strconv.ParseBool(s.GetString(name))
	return b
}

// GetInt returns an integer setting.
func (s *Settings) GetInt(name string) int {
	n, _ := strconv.Atoi(strings.TrimSpace(s.GetString(name)))
	return n
}

// GetFloat64 returns a number setting.
func (s *Settings) GetFloat64(name string) float64 {
	x, _ := strconv.ParseFloat(strings.TrimSpace(s.GetString(name)), 64)
	return x
}

// GetDuration returns a duration setting (a flag of type time.Duration).
func (s *Settings) GetDuration(name string) time.Duration {
	d, _ := time.ParseDuration(strings.TrimSpace(s.GetString(name)))
	return d
}

// Get returns a setting's text ([]string for list settings), or nil for a
// name the running command does not have.
func (s *Settings) Get(name string) any {
	v, ok := s.vals[name]
	if !ok {
		return nil
	}
	if fl := s.lookup(name); fl != nil && isListType(fl.Value.Type()) {
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

// Invalid returns the usage error for a setting whose value has the right
// type but is not allowed, naming where the value came from:
// `invalid IDEMKEY_RETRY "-1" (want …)`, `invalid --retry "-1" (want …)`,
// `config.yaml:3: retry: invalid value "-1" (want …)`.
func (s *Settings) Invalid(name, want string) *UsageError {
	v := strings.Join(s.vals[name].text, " ")
	src := s.Source(name)
	msg := fmt.Sprintf("invalid %s %q", src, v)
	if s.file != nil && strings.HasPrefix(src, s.file.path+":") {
		msg = fmt.Sprintf("%s: invalid value %q", src, v)
	}
	if want != "" {
		msg += " (" + want + ")"
	}
	return &UsageError{Err: errors.New(msg)}
}

// Unparsable is the usage error for a setting whose text a command parses
// itself (a duration, a size) and that does not parse, naming where the
// value came from: `invalid IDEMKEY_WAIT: …`, `config.yaml:3: wait: …`.
func (s *Settings) Unparsable(name string, err error) *UsageError {
	src := s.Source(name)
	if s.file != nil && strings.HasPrefix(src, s.file.path+":") {
		return &UsageError{Err: fmt.Errorf("%s: %v", src, err)}
	}
	return &UsageError{Err: fmt.Errorf("invalid %s: %v", src, err)}
}

// OutOfRange is Invalid with a reason in words instead of the values
// wanted: `invalid --lease "0": why`, `config.yaml:3: lease: invalid value
// "0": why`.
func (s *Settings) OutOfRange(name, why string) *UsageError {
	e := s.Invalid(name, "")
	e.Err = fmt.Errorf("%v: %s", e.Err, why)
	return e
}

// Int returns an integer setting of at least min.
func (s *Settings) Int(name string, min int) (int, error) {
	n := s.GetInt(name)
	if n < min {
		return 0, s.Invalid(name, fmt.Sprintf("want a whole number >= %d", min))
	}
	return n, nil
}

// Choice returns a setting that must be one of choices.
func (s *Settings) Choice(name string, choices ...string) (string, error) {
	v := s.GetString(name)
	for _, c := range choices {
		if v == c {
			return v, nil
		}
	}
	return "", s.Invalid(name, "want "+orList(choices))
}

// Seconds returns a setting given in seconds, fractions allowed as in curl
// ("2.5"); positive says whether 0 is refused.
func (s *Settings) Seconds(name string, positive bool) (time.Duration, error) {
	x := s.GetFloat64(name)
	if x < 0 || x >= 1e9 || (positive && x == 0) {
		want := "want seconds >= 0, such as 2 or 0.5"
		switch {
		case x >= 1e9: // +Inf too
			want = "want fewer than 1e9 seconds (31 years)"
		case positive:
			want = "want seconds > 0, such as 2 or 0.5"
		}
		return 0, s.Invalid(name, want)
	}
	return time.Duration(x * float64(time.Second)), nil
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

func orList(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

func (s *Settings) lookup(name string) *pflag.Flag {
	if s.fs == nil {
		return nil
	}
	return s.fs.Lookup(name)
}

// envName is the environment variable of a setting.
func envName(flag string) string {
	return "IDEMKEY_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// The annotation that marks a flag as taken from the command line only.
const cliOnlyAnnotation = "idemkey-command-line-only"

// commandLineOnly marks flags that are read from the command line only,
// never from IDEMKEY_* or the config file: those that change what is sent,
// where, or how securely (no stray IDEMKEY_INSECURE may turn off
// certificate checks).
func commandLineOnly(fl *pflag.FlagSet, names ...string) {
	for _, n := range names {
		if fl.Lookup(n) != nil {
			_ = fl.SetAnnotation(n, cliOnlyAnnotation, []string{"true"})
		}
	}
}

func isCommandLineOnly(fl *pflag.Flag) bool {
	return len(fl.Annotations[cliOnlyAnnotation]) > 0
}

func isListType(t string) bool {
	return strings.HasSuffix(t, "Slice") || strings.HasSuffix(t, "Array")
}

// resolve fills s.vals for every flag of s.fs and applies settingRules.
func (s *Settings) resolve() error {
	s.vals = map[string]resolved{}
	var err error
	s.fs.VisitAll(func(fl *pflag.Flag) {
		if err != nil {
			return
		}
		var v resolved
		v, err = s.resolveOne(fl)
		s.vals[fl.Name] = v
	})
	if err != nil {
		return err
	}
	names := make([]string, 0, len(settingRules))
	for n := range settingRules {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if fl := s.lookup(n); fl != nil && s.vals[n].set {
			if err := settingRules[n](s, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// settingRules are the checks beyond the type that hold for a setting of
// that name in every command that has it, run as the value is resolved so
// that the error names its source (a value from the command line is
// checked the same way). A command adds its own checks after these.
var settingRules map[string]func(s *Settings, name string) error

// (Set in init: the rules read settings, which may resolve a tool's
// section, which applies the rules.)
func init() { settingRules = initialRules() }

func initialRules() map[string]func(s *Settings, name string) error {
	return map[string]func(s *Settings, name string) error{
		"retry":           func(s *Settings, n string) error { _, err := s.Int(n, 0); return err },
		"max-len":         func(s *Settings, n string) error { _, err := s.Int(n, 0); return err },
		"max":             func(s *Settings, n string) error { _, err := s.Int(n, 0); return err },
		"connect-timeout": func(s *Settings, n string) error { _, err := s.Seconds(n, true); return err },
		"max-time":        func(s *Settings, n string) error { _, err := s.Seconds(n, false); return err },
		"retry-delay":     func(s *Settings, n string) error { _, err := s.Seconds(n, false); return err },
		"retry-max-time":  func(s *Settings, n string) error { _, err := s.Seconds(n, false); return err },
		"format":          choiceRule(formatNames...),
		"from":            choiceRule(fromNames...),
		"scheme":          choiceRule("js", "jcs"),
		"key-header":      tokenRule,
	}
}

// tokenRule checks a header name from IDEMKEY_* or the config file: an
// RFC 9110 token (the command checks a flag's value in its own words, and
// refuses the names that cannot carry a key).
func tokenRule(s *Settings, name string) error {
	if s.lookup(name).Changed {
		return nil
	}
	v := s.GetString(name)
	ok := v != ""
	for i := 0; i < len(v) && ok; i++ {
		c := v[i]
		ok = c > ' ' && c < 0x7f && !strings.ContainsRune("\"(),/:;<=>?@[\\]{}", rune(c))
	}
	if !ok {
		return s.Invalid(name, "want a header name such as Idempotency-Key")
	}
	return nil
}

// choiceRule checks a setting that must be one of choices, in the
// commands whose flag of that name lists them all in its help (another
// command may give the name another meaning).
func choiceRule(choices ...string) func(s *Settings, name string) error {
	return func(s *Settings, name string) error {
		fl := s.lookup(name)
		for _, c := range choices {
			if !strings.Contains(fl.Usage, c) {
				return nil
			}
		}
		if fl.Changed {
			return nil // the command says it in its own words
		}
		_, err := s.Choice(name, choices...)
		return err
	}
}

func (s *Settings) resolveOne(fl *pflag.Flag) (resolved, error) {
	typ := fl.Value.Type()
	if fl.Changed {
		v := resolved{src: "--" + fl.Name, set: true}
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			v.text = sv.GetSlice()
		} else {
			v.text = []string{fl.Value.String()}
		}
		return v, nil
	}
	def := resolved{src: "default"}
	if sv, ok := fl.Value.(pflag.SliceValue); ok {
		def.text = sv.GetSlice()
	} else {
		def.text = []string{fl.DefValue}
	}
	if isCommandLineOnly(fl) || fl.Name == "config" || fl.Name == "help" {
		return def, nil
	}
	env := envName(fl.Name)
	if text := s.getenv(env); text != "" {
		v := resolved{src: env, set: true}
		if isListType(typ) {
			v.text = strings.Fields(text)
		} else {
			v.text = []string{text}
		}
		for _, t := range v.text {
			if want := checkText(typ, t); want != "" {
				return v, usageErrorf("invalid %s %q (%s)", env, text, want)
			}
		}
		return v, nil
	}
	if s.file == nil {
		return def, nil
	}
	fv, ok := s.file.lookup(s.tool, fl.Name)
	if !ok {
		return def, nil
	}
	text, err := s.file.check(fv, typ)
	if err != nil {
		return def, err
	}
	return resolved{text: text, src: s.file.where(fv), set: true}, nil
}

// checkText checks a value given as text (in the environment) against a
// flag type and returns what is wanted if it does not fit.
func checkText(typ, text string) string {
	t := strings.TrimSpace(text)
	switch typ {
	case "bool":
		if _, err := strconv.ParseBool(t); err != nil {
			return "want true or false"
		}
	case "int", "int64", "int32", "count":
		if _, err := strconv.ParseInt(t, 10, 64); err != nil {
			return "want a whole number"
		}
	case "uint", "uint64", "uint32":
		if _, err := strconv.ParseUint(t, 10, 64); err != nil {
			return "want a whole number >= 0"
		}
	case "float64", "float32":
		if x, err := strconv.ParseFloat(t, 64); err != nil || x != x {
			return "want a number"
		}
	case "duration":
		if _, err := time.ParseDuration(t); err != nil {
			return "want a duration such as 1.5s or 200ms"
		}
	}
	return ""
}

// configFile is a parsed config file: each setting with its value as
// written and where it was written.
type configFile struct {
	path  string // as given, or the default path found
	top   map[string]*fileValue
	tools map[string]map[string]*fileValue
}

// fileValue is one value of a config file.
type fileValue struct {
	name string // the setting, "tools.deploy.recover" in a tools section
	line int    // 0 when the format does not tell (TOML, JSON)
	kind string // "string", "bool", "integer", "number", "list", "table", "null", "date"
	text string // a scalar as written (YAML, JSON) or as decoded (TOML)
	raw  string // a TOML scalar that is not a string, as written ("2024.10"), for messages
	list []*fileValue
}

func (c *configFile) toolNames() []string {
	names := make([]string, 0, len(c.tools))
	for t := range c.tools {
		names = append(names, t)
	}
	sort.Strings(names)
	return names
}

func (c *configFile) lookup(tool, name string) (*fileValue, bool) {
	if tool != "" {
		if v, ok := c.tools[tool][name]; ok {
			return v, true
		}
	}
	v, ok := c.top[name]
	return v, ok
}

// where names a value's place: "config.yaml:3: retry".
func (c *configFile) where(v *fileValue) string {
	if v.line > 0 {
		return fmt.Sprintf("%s:%d: %s", c.path, v.line, v.name)
	}
	return fmt.Sprintf("%s: %s", c.path, v.name)
}

// check returns a file value's text for a flag type, or the usage error
// naming the file and the setting.
func (c *configFile) check(v *fileValue, typ string) ([]string, error) {
	bad := func(want string) error {
		e := usageErrorf("%s: want %s, not %s", c.where(v), want, describe(v))
		if want == "a string" && v.text != "" && v.kind != "list" && v.kind != "table" {
			text, name := v.text, v.name[strings.LastIndexByte(v.name, '.')+1:]
			if v.raw != "" {
				text = v.raw
			}
			// In the file's own syntax.
			switch strings.ToLower(filepath.Ext(c.path)) {
			case ".toml":
				e.hint = fmt.Sprintf("quote it to use it as written: %s = %q", name, text)
			case ".json":
				e.hint = fmt.Sprintf("quote it to use it as written: %q: %q", name, text)
			default:
				e.hint = fmt.Sprintf("quote it to use it as written: %s: %q", name, text)
			}
		}
		return e
	}
	switch {
	case isListType(typ):
		if v.kind == "string" {
			return []string{v.text}, nil
		}
		if v.kind != "list" {
			return nil, bad("a list of strings")
		}
		out := make([]string, 0, len(v.list))
		for _, e := range v.list {
			if e.kind != "string" {
				return nil, usageErrorf("%s: want a list of strings, not a list holding %s", c.where(v), describe(e))
			}
			out = append(out, e.text)
		}
		return out, nil
	case typ == "bool":
		if v.kind != "bool" {
			return nil, bad("true or false")
		}
		return []string{v.text}, nil
	case typ == "int" || typ == "int64" || typ == "int32" || typ == "count" || strings.HasPrefix(typ, "uint"):
		if v.kind != "integer" && v.kind != "number" {
			return nil, bad("a whole number")
		}
		if want := checkText(typ, v.text); want != "" {
			return nil, usageErrorf("%s: %s, not %s", c.where(v), want, describe(v))
		}
		return []string{v.text}, nil
	case typ == "float64" || typ == "float32":
		if v.kind != "integer" && v.kind != "number" {
			return nil, bad("a number")
		}
		if want := checkText(typ, v.text); want != "" {
			return nil, usageErrorf("%s: %s, not %s", c.where(v), want, describe(v))
		}
		return []string{v.text}, nil
	case typ == "duration":
		if v.kind != "string" || checkText(typ, v.text) != "" {
			return nil, bad("a duration such as \"1.5s\"")
		}
		return []string{v.text}, nil
	}
	// Strings, and types the loader does not know: the text exactly as
	// written, which must be a string in the file.
	if v.kind != "string" {
		return nil, bad("a string")
	}
	return []string{v.text}, nil
}

func describe(v *fileValue) string {
	switch v.kind {
	case "list", "table", "null":
		return "a " + v.kind
	case "string":
		return fmt.Sprintf("the string %q", v.text)
	}
	if v.raw != "" {
		return fmt.Sprintf("the %s %s", v.kind, v.raw)
	}
	return fmt.Sprintf("the %s %s", v.kind, v.text)
}

// readConfigFile reads and parses a config file by its extension.
func readConfigFile(path string) (*configFile, error) {
	ext := strings.ToLower(filepath.Ext(path))
	data, err := readConfigBytes(path, func() error {
		switch ext {
		case ".yaml", ".yml", ".toml", ".json":
			return nil
		}
		// Before reading: --config /dev/zero is refused, not read for ever.
		return &UsageError{Err: fmt.Errorf("%s: cannot read config: unknown format %q", path, ext),
			hint: "name the file config.yaml, config.toml or config.json"}
	})
	var ue *UsageError
	if errors.As(err, &ue) {
		return nil, err
	}
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		if errors.Is(err, os.ErrNotExist) {
			return nil, &InputError{Name: path, Err: errors.New("cannot read config: no such file")}
		}
		return nil, &InputError{Name: path, Err: fmt.Errorf("cannot read config: %v", err)}
	}
	c := &configFile{path: path}
	var values map[string]*fileValue
	switch ext {
	case ".yaml", ".yml":
		values, err = parseYAMLConfig(data)
	case ".toml":
		values, err = parseTOMLConfig(data)
	case ".json":
		values, err = parseJSONConfig(data)
	}
	if err != nil {
		var pe *configPosError
		if errors.As(err, &pe) {
			// FILE:LINE[:COL]: as every other input error names its place.
			return nil, &InputError{Name: pe.where(path), Err: fmt.Errorf("cannot read config: %s", pe.msg)}
		}
		return nil, &InputError{Name: path, Err: fmt.Errorf("cannot read config: %v", err)}
	}
	c.top = values
	if t, ok := values["tools"]; ok {
		delete(values, "tools")
		if t.kind != "table" {
			return nil, usageErrorf("%s: want a table of tool names, not %s", c.where(t), describe(t))
		}
		c.tools = map[string]map[string]*fileValue{}
		for _, tv := range t.list {
			if tv.kind != "table" {
				return nil, usageErrorf("%s: want a table of settings, not %s", c.where(tv), describe(tv))
			}
			tool := strings.TrimPrefix(tv.name, "tools.")
			m := map[string]*fileValue{}
			for _, e := range tv.list {
				m[e.name[strings.LastIndexByte(e.name, '.')+1:]] = e
			}
			c.tools[tool] = m
		}
	}
	return c, nil
}

// maxConfig bounds a config file: a few settings, not a data set (and a
// path to /dev/zero or an endless stream ends there).
const maxConfig = 1 << 20

// readConfigBytes reads a config file of at most maxConfig bytes; check
// runs once the file is open (it exists), before anything is read.
func readConfigBytes(path string, check func() error) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := check(); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxConfig+1))
	if err == nil && len(data) > maxConfig {
		err = fmt.Errorf("larger than %d MiB, the limit for a config file", maxConfig>>20)
	}
	return data, err
}

// YAML: the nodes keep each scalar as written and its resolved tag, so an
// unquoted 2024.10 is seen as a number, not turned into "2024.1".
// configPosError is a config file that does not parse, at a line (and
// column, 0 if unknown).
type configPosError struct {
	line, col int
	msg       string
}

func (e *configPosError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

func (e *configPosError) where(path string) string {
	if e.col > 0 {
		return fmt.Sprintf("%s:%d:%d", path, e.line, e.col)
	}
	return fmt.Sprintf("%s:%d", path, e.line)
}

// yamlLineRE is the line yaml.v3 puts in its syntax errors.
var yamlLineRE = regexp.MustCompile(`^line (\d+): (.*)$`)

func parseYAMLConfig(data []byte) (map[string]*fileValue, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
			line, _ := strconv.Atoi(m[1])
			return nil, &configPosError{line: line, msg: m[2]}
		}
		return nil, errors.New(msg)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return map[string]*fileValue{}, nil // an empty file
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: want settings (name: value), not a %s", root.Line, yamlKind(root))
	}
	v := yamlValue("", root)
	return tableMap(v), nil
}

func yamlKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "list"
	case yaml.MappingNode:
		return "table"
	}
	return "scalar"
}

func yamlValue(name string, n *yaml.Node) *fileValue {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		v := yamlValue(name, n.Alias)
		v.line = n.Line
		return v
	}
	v := &fileValue{name: name, line: n.Line, text: n.Value}
	switch n.Kind {
	case yaml.SequenceNode:
		v.kind = "list"
		for i, e := range n.Content {
			v.list = append(v.list, yamlValue(fmt.Sprintf("%s[%d]", name, i), e))
		}
	case yaml.MappingNode:
		v.kind = "table"
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if name != "" {
				k = name + "." + k
			}
			e := yamlValue(k, n.Content[i+1])
			e.line = n.Content[i].Line
			v.list = append(v.list, e)
		}
	default:
		switch n.ShortTag() {
		case "!!str", "!!binary":
			v.kind = "string"
		case "!!bool":
			v.kind = "bool"
			v.text = strings.ToLower(n.Value)
		case "!!int":
			v.kind = "integer"
		case "!!float":
			v.kind = "number"
		case "!!null":
			v.kind = "null"
		case "!!timestamp":
			v.kind = "date"
		default:
			v.kind = strings.TrimPrefix(n.ShortTag(), "!!")
		}
	}
	return v
}

// tableMap indexes a table's members by their last name.
func tableMap(v *fileValue) map[string]*fileValue {
	m := make(map[string]*fileValue, len(v.list))
	for _, e := range v.list {
		m[e.name[strings.LastIndexByte(e.name, '.')+1:]] = e
	}
	return m
}

// TOML: the decoder keeps a value's type (a string is a string only when
// quoted), so the decoded values are as typed as YAML's nodes.
func parseTOMLConfig(data []byte) (map[string]*fileValue, error) {
	var m map[string]any
	if err := toml.Unmarshal(data, &m); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, &configPosError{line: row, col: col, msg: strings.TrimPrefix(de.Error(), "toml: ")}
		}
		return nil, err
	}
	values := tableMap(anyValue("", m))
	tomlWritten(data, values)
	return values, nil
}

// tomlWritten gives the TOML values their line and, for scalars that are
// not strings, their text as written: the decoder makes 2024.10 the
// float 2024.1, and a message (or a hint to quote it) must show what the
// file says.
func tomlWritten(data []byte, values map[string]*fileValue) {
	byName := map[string]*fileValue{}
	var walk func(vs []*fileValue)
	walk = func(vs []*fileValue) {
		for _, v := range vs {
			byName[v.name] = v
			if v.kind == "table" {
				walk(v.list)
			}
		}
	}
	for _, v := range values {
		walk([]*fileValue{v})
	}
	keyOf := func(it unstable.Iterator) string {
		var parts []string
		for it.Next() {
			parts = append(parts, string(it.Node().Data))
		}
		return strings.Join(parts, ".")
	}
	var p unstable.Parser
	p.Reset(data)
	table := ""
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table:
			table = keyOf(e.Key())
		case unstable.ArrayTable:
			table = "" // not a setting: left as decoded
		case unstable.KeyValue:
			name := keyOf(e.Key())
			if table != "" {
				name = table + "." + name
			}
			v, ok := byName[name]
			if !ok {
				continue
			}
			if k := e.Key(); k.Next() && k.Node().Raw.Length > 0 {
				v.line = p.Shape(k.Node().Raw).Start.Line
			}
			if val := e.Value(); v.kind != "string" && v.kind != "list" && v.kind != "table" && len(val.Data) > 0 {
				v.raw = string(val.Data)
			}
		}
	}
}

// JSON: numbers are kept as written (json.Number).
func parseJSONConfig(data []byte) (map[string]*fileValue, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		// encoding/json gives an offset (just past the byte at fault), not
		// a place: name its line and column.
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, jsonConfigErr(data, se.Offset-1, se.Error())
		case errors.As(err, &te):
			return nil, jsonConfigErr(data, te.Offset-1, "want settings {\"name\": value}, not a JSON "+te.Value)
		case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
			return nil, jsonConfigErr(data, int64(len(data)), "unexpected end of the file")
		}
		return nil, err
	}
	if d.More() {
		return nil, jsonConfigErr(data, d.InputOffset(), "data after the top-level object")
	}
	return tableMap(anyValue("", m)), nil
}

// jsonConfigErr places msg at byte off of a JSON config file.
func jsonConfigErr(data []byte, off int64, msg string) error {
	off = max(0, min(off, int64(len(data))))
	line, col := canon.Position(data, int(off))
	return &configPosError{line: line, col: col, msg: msg}
}

func anyValue(name string, x any) *fileValue {
	v := &fileValue{name: name}
	switch x := x.(type) {
	case string:
		v.kind, v.text = "string", x
	case bool:
		v.kind, v.text = "bool", strconv.FormatBool(x)
	case int64:
		v.kind, v.text = "integer", strconv.FormatInt(x, 10)
	case float64:
		v.kind, v.text = "number", strconv.FormatFloat(x, 'g', -1, 64)
	case json.Number:
		v.kind, v.text = "number", x.String()
		if _, err := strconv.ParseInt(x.String(), 10, 64); err == nil {
			v.kind = "integer"
		}
	case nil:
		v.kind = "null"
	case []any:
		v.kind = "list"
		for i, e := range x {
			v.list = append(v.list, anyValue(fmt.Sprintf("%s[%d]", name, i), e))
		}
	case map[string]any:
		v.kind = "table"
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			n := k
			if name != "" {
				n = name + "." + k
			}
			v.list = append(v.list, anyValue(n, x[k]))
		}
	default:
		v.kind, v.text = "date", fmt.Sprint(x)
	}
	return v
}

// settingNames returns every flag name of every command in the tree: the
// settings a config file may hold (true), or the names it may not because
// they are taken from the command line only (false).
func settingNames(root *cobra.Command) map[string]bool {
	names := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(fl *pflag.Flag) {
			names[fl.Name] = names[fl.Name] || !isCommandLineOnly(fl)
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
					hint: "one task id for every run gives every task one key scope, so one task's write is swallowed as another's duplicate; give --task or IDEMKEY_TASK"}
			}
			if ok, found := known[n]; ok {
				if tool && !perToolSettings[n] {
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
	names := make([]string, 0, len(perToolSettings))
	for n := range perToolSettings {
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

// yamlKey writes a name (a tool's) as a key of a config file's YAML flow
// mapping: as it is when YAML reads it back as that string, else quoted.
func yamlKey(name string) string {
	plain := name != ""
	for i := 0; i < len(name) && plain; i++ {
		c := name[i]
		plain = c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && (c == '-' || c == '.' || c >= '0' && c <= '9')
	}
	switch strings.ToLower(name) {
	case "true", "false", "yes", "no", "on", "off", "null", "y", "n":
		plain = false
	}
	if plain {
		return name
	}
	return string(canon.AppendQuoted(nil, name))
}
