package settings

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
	"sync"

	"github.com/idemkey/idemkey/canon"
	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
	"go.yaml.in/yaml/v3"
)

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
		e := Usagef("%s: want %s, not %s", c.where(v), want, describe(v))
		if want == "a string" && v.text != "" && v.kind != "list" && v.kind != "table" {
			text, name := v.text, v.name[strings.LastIndexByte(v.name, '.')+1:]
			if v.raw != "" {
				text = v.raw
			}
			// In the file's own syntax.
			switch strings.ToLower(filepath.Ext(c.path)) {
			case ".toml":
				e.HintText = fmt.Sprintf("quote it to use it as written: %s = %q", name, text)
			case ".json":
				e.HintText = fmt.Sprintf("quote it to use it as written: %q: %q", name, text)
			default:
				e.HintText = fmt.Sprintf("quote it to use it as written: %s: %q", name, text)
			}
		}
		return e
	}
	switch {
	case IsListType(typ):
		if v.kind == "string" {
			return []string{v.text}, nil
		}
		if v.kind != "list" {
			return nil, bad("a list of strings")
		}
		out := make([]string, 0, len(v.list))
		for _, e := range v.list {
			if e.kind != "string" {
				return nil, Usagef("%s: want a list of strings, not a list holding %s", c.where(v), describe(e))
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
			return nil, Usagef("%s: %s, not %s", c.where(v), want, describe(v))
		}
		return []string{v.text}, nil
	case typ == "float64" || typ == "float32":
		if v.kind != "integer" && v.kind != "number" {
			return nil, bad("a number")
		}
		if want := checkText(typ, v.text); want != "" {
			return nil, Usagef("%s: %s, not %s", c.where(v), want, describe(v))
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
			HintText: "name the file config.yaml, config.toml or config.json"}
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
			return nil, &UsageError{Err: fmt.Errorf("%s: cannot read config: no such file", path)}
		}
		return nil, &UsageError{Err: fmt.Errorf("%s: cannot read config: %v", path, err)}
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
			return nil, &UsageError{Err: fmt.Errorf("%s: cannot read config: %s", pe.where(path), pe.msg)}
		}
		return nil, &UsageError{Err: fmt.Errorf("%s: cannot read config: %v", path, err)}
	}
	c.top = values
	if t, ok := values["tools"]; ok {
		delete(values, "tools")
		if t.kind != "table" {
			return nil, Usagef("%s: want a table of tool names, not %s", c.where(t), describe(t))
		}
		c.tools = map[string]map[string]*fileValue{}
		for _, tv := range t.list {
			if tv.kind != "table" {
				return nil, Usagef("%s: want a table of settings, not %s", c.where(tv), describe(tv))
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

// yamlLineRE is the line yaml.v3 puts in its syntax errors, compiled on
// first use (not in every run's start-up).
var yamlLineRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^line (\d+): (.*)$`) })

func parseYAMLConfig(data []byte) (map[string]*fileValue, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if m := yamlLineRE().FindStringSubmatch(msg); m != nil {
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

// parseTOMLConfig: TOML: the decoder keeps a value's type (a string is a string only when
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

// parseJSONConfig: JSON: numbers are kept as written (json.Number).
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

// YAMLKey writes a name (a tool's) as a key of a config file's YAML flow
// mapping: as it is when YAML reads it back as that string, else quoted.
func YAMLKey(name string) string {
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
