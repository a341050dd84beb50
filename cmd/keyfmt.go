package cmd

import (
	"errors"
	"fmt"

	"github.com/idemkey/idemkey/derive"
)

// keyFormat is derive.Format as the commands hold it (--format, --prefix,
// --max-len): the layout of a key lives in derive/format.go.
type keyFormat derive.Format

var formatNames = derive.FormatNames

// keyFormat reads --format, --prefix and --max-len, as a usage error
// naming where a bad value came from.
func (f *Factory) keyFormat() (*keyFormat, error) {
	kf := &derive.Format{
		Name:   f.Config.GetString("format"),
		Prefix: f.Config.GetString("prefix"),
		MaxLen: f.Config.GetInt("max-len"),
	}
	if err := kf.Check(f.Config.Source("prefix"), f.Config.Source("max-len")); err != nil {
		return nil, usageFrom(err)
	}
	return (*keyFormat)(kf), nil
}

// append appends the formatted key (derive.Format.Append).
func (kf *keyFormat) append(dst []byte, k [32]byte) []byte {
	return (*derive.Format)(kf).Append(dst, k)
}

// usageFrom turns a library's error about a setting into a usage error
// that keeps its hint.
func usageFrom(err error) error {
	ue := &UsageError{Err: err}
	var h hinter
	if errors.As(err, &h) {
		ue.hint = h.Hint()
	}
	return ue
}

// secret returns the HMAC secret named by --secret-env, or nil.
func (f *Factory) secret() ([]byte, error) {
	name := f.Config.GetString("secret-env")
	if name == "" {
		return nil, nil
	}
	v := f.IO.Getenv(name)
	if v == "" {
		return nil, &UsageError{Err: fmt.Errorf("%s %s: the environment variable is unset or empty", f.Config.Source("secret-env"), name),
			hint: "export the secret in that variable; it is never read from the command line"}
	}
	return []byte(v), nil
}
