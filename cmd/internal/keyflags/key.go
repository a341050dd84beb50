package keyflags

import (
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"hash"

	"github.com/idemkey/idemkey/cmd/internal/cli"
	"github.com/idemkey/idemkey/cmd/internal/settings"
	"github.com/idemkey/idemkey/derive"
	"github.com/spf13/pflag"
)

// Key is how a command makes the key of a call: its format and, with
// --secret-env, the HMAC secret (derive.Call.HMAC instead of Key). Every
// command that shows a key makes it here, so that it is the key that
// 'idemkey key' prints for the same options.
type Key struct {
	Format *derive.Format
	Secret []byte
}

// KeyFrom reads --format, --prefix, --max-len and --secret-env.
func KeyFrom(f *cli.Factory) (Key, error) {
	format, err := Format(f)
	if err != nil {
		return Key{}, err
	}
	secret, err := Secret(f)
	return Key{Format: format, Secret: secret}, err
}

// Sum is the key of c: sha256 of its canonical text, or the HMAC-SHA-256.
func (k Key) Sum(c derive.Call) [32]byte {
	if k.Secret != nil {
		return c.HMAC(k.Secret)
	}
	return c.Key()
}

// SumText is the key of a call whose arguments are still text, derived in
// one pass (derive.Text): sha256, or the HMAC-SHA-256.
func (k Key) SumText(t derive.Text) ([32]byte, error) {
	if k.Secret != nil {
		return t.HMAC(k.Secret)
	}
	return t.Key()
}

// Append appends the key of c in its format.
func (k Key) Append(dst []byte, c derive.Call) []byte { return k.Format.Append(dst, k.Sum(c)) }

// Text is the formatted key of already hashed bytes (a drift report's).
func (k Key) Text(sum [32]byte) string { return string(k.Format.Append(nil, sum)) }

// Hash256 is the hash the key is: HMAC-SHA-256 with the secret, or
// SHA-256, for a caller that writes the hashed text itself.
func (k Key) Hash256() hash.Hash {
	if k.Secret != nil {
		return hmac.New(sha256.New, k.Secret)
	}
	return sha256.New()
}

// Hash names how the key is made, as --json reports it.
func (k Key) Hash() string {
	if k.Secret != nil {
		return "hmac-sha256"
	}
	return "sha256"
}

// AddFormatFlags registers --format, --prefix, --max-len and
// --secret-env.
func AddFormatFlags(fl *pflag.FlagSet) {
	fl.String("format", "hex", "key format: hex (64 chars), base64url (43) or uuid (36, RFC 9562 version 8)")
	settings.OneOf(fl, "format", derive.FormatNames...)
	fl.String("prefix", "", "string to put in front of the key")
	fl.Int("max-len", 0, "fail if prefix and key are longer than this many bytes (0: no limit)")
	fl.String("secret-env", "", "derive an HMAC-SHA-256 key with the secret in this environment variable")
}

// Format reads --format, --prefix and --max-len, as a usage error
// naming where a bad value came from.
func Format(f *cli.Factory) (*derive.Format, error) {
	kf := &derive.Format{
		Name:   f.Config.GetString("format"),
		Prefix: f.Config.GetString("prefix"),
		MaxLen: f.Config.GetInt("max-len"),
	}
	if err := kf.Check(f.Config.Source("prefix"), f.Config.Source("max-len")); err != nil {
		return nil, cli.UsageFrom(err)
	}
	return kf, nil
}

// Secret returns the HMAC secret named by --secret-env, or nil.
func Secret(f *cli.Factory) ([]byte, error) {
	name := f.Config.GetString("secret-env")
	if name == "" {
		return nil, nil
	}
	v := f.IO.Getenv(name)
	if v == "" {
		return nil, &cli.UsageError{Err: fmt.Errorf("%s %s: the environment variable is unset or empty", f.Config.Source("secret-env"), name),
			HintText: "export the secret in that variable; it is never read from the command line"}
	}
	return []byte(v), nil
}

// IsHexKey reports whether s is a bare key as the harness prints it: 64
// lower-case hex digits.
func IsHexKey(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
