package settings

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

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
	return "", s.Invalid(name, "want "+OrList(choices))
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

// OrList joins choices for a message: "a, b or c".
func OrList(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}
