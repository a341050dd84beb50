package settings

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// EnvName is the environment variable of a setting.
func EnvName(flag string) string {
	return "IDEMKEY_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// cliOnlyAnnotation: the annotation that marks a flag as taken from the command line only.
const cliOnlyAnnotation = "idemkey-command-line-only"

// CommandLineOnly marks flags that are read from the command line only,
// never from IDEMKEY_* or the config file: those that change what is sent,
// where, or how securely (no stray IDEMKEY_INSECURE may turn off
// certificate checks).
func CommandLineOnly(fl *pflag.FlagSet, names ...string) {
	for _, n := range names {
		if fl.Lookup(n) != nil {
			_ = fl.SetAnnotation(n, cliOnlyAnnotation, []string{"true"})
		}
	}
}

// IsCommandLineOnly reports whether fl is marked with CommandLineOnly.
func IsCommandLineOnly(fl *pflag.Flag) bool {
	return len(fl.Annotations[cliOnlyAnnotation]) > 0
}

// choicesAnnotation: the annotation that holds the values a flag takes.
const choicesAnnotation = "idemkey-choices"

// OneOf declares the values a flag of the command takes: a value from
// IDEMKEY_* or the config file that is none of them is refused, naming
// its source (the command checks a value from the command line in its
// own words). The flag's command declares them, as two commands may give
// one name different values (drift's --from reads otel, key's does not).
func OneOf(fl *pflag.FlagSet, name string, choices ...string) {
	_ = fl.SetAnnotation(name, choicesAnnotation, choices)
}

// IsListType reports whether a flag type holds a list (--only, -H).
func IsListType(t string) bool {
	return strings.HasSuffix(t, "Slice") || strings.HasSuffix(t, "Array")
}

// resolve fills s.vals for every flag of s.fs and applies settingRule's
// checks, in the order of the settings' names.
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
	names := make([]string, 0, len(s.vals))
	for n, v := range s.vals {
		if v.set && s.rule(n) != nil {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		if err := s.rule(n)(s, n); err != nil {
			return err
		}
	}
	return nil
}

// rule is the check beyond the type for the setting called name: the
// choices its flag declares (OneOf), or settingRule's.
func (s *Settings) rule(name string) func(s *Settings, name string) error {
	if fl := s.Lookup(name); fl != nil && len(fl.Annotations[choicesAnnotation]) > 0 {
		return choiceRule(fl.Annotations[choicesAnnotation])
	}
	return settingRule(name)
}

// settingRule is the check beyond the type that holds for a setting of
// that name in every command that has it, or nil: run as the value is
// resolved so that the error names its source (a value from the command
// line is checked the same way). A command adds its own checks after
// these.
func settingRule(name string) func(s *Settings, name string) error {
	switch name {
	case "retry", "max-len", "max":
		return intRule
	case "connect-timeout":
		return func(s *Settings, n string) error { _, err := s.Seconds(n, true); return err }
	case "max-time", "retry-delay", "retry-max-time":
		return func(s *Settings, n string) error { _, err := s.Seconds(n, false); return err }
	case "key-header":
		return tokenRule
	}
	return nil
}

// intRule checks a whole number setting.
func intRule(s *Settings, name string) error {
	_, err := s.Int(name, 0)
	return err
}

// tokenRule checks a header name from IDEMKEY_* or the config file: an
// RFC 9110 token (the command checks a flag's value in its own words, and
// refuses the names that cannot carry a key).
func tokenRule(s *Settings, name string) error {
	if s.Lookup(name).Changed {
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

// choiceRule checks a setting that must be one of choices (see OneOf).
func choiceRule(choices []string) func(s *Settings, name string) error {
	return func(s *Settings, name string) error {
		if s.Lookup(name).Changed {
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
	if IsCommandLineOnly(fl) || fl.Name == "config" || fl.Name == "help" {
		return def, nil
	}
	env := EnvName(fl.Name)
	if text := s.getenv(env); text != "" {
		v := resolved{src: env, set: true}
		if IsListType(typ) {
			v.text = strings.Fields(text)
		} else {
			v.text = []string{text}
		}
		for _, t := range v.text {
			if want := checkText(typ, t); want != "" {
				return v, Usagef("invalid %s %q (%s)", env, text, want)
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

// HasRule reports whether a setting of that name is checked beyond its
// type in every command that has it (see settingRule).
func HasRule(name string) bool { return settingRule(name) != nil }
