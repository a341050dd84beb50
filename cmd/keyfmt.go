package cmd

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// keyFormat lays out a 32-byte digest as the receiving API wants it.
type keyFormat struct {
	Name   string // hex, base64url or uuid
	Prefix string
	MaxLen int // 0: no limit
}

var formatNames = []string{"hex", "base64url", "uuid"}

func (f *Factory) keyFormat() (*keyFormat, error) {
	kf := &keyFormat{
		Name:   f.Config.GetString("format"),
		Prefix: f.Config.GetString("prefix"),
		MaxLen: f.Config.GetInt("max-len"),
	}
	switch kf.Name {
	case "hex", "base64url", "uuid":
	default:
		return nil, usageErrorf("invalid --format %q (want %s)", kf.Name, strings.Join(formatNames, ", "))
	}
	if kf.MaxLen < 0 {
		return nil, usageErrorf("invalid --max-len %d", kf.MaxLen)
	}
	if err := checkPrefix(kf.Prefix, f.Config.Source("prefix")); err != nil {
		return nil, err
	}
	if n := len(kf.Prefix) + kf.length(); kf.MaxLen > 0 && n > kf.MaxLen {
		e := usageErrorf("a %s key with prefix %q is %d bytes, more than %s %d", kf.Name, kf.Prefix, n, f.Config.Source("max-len"), kf.MaxLen)
		e.hint = "an API that truncates a key breaks it; " + kf.shorter()
		return nil, e
	}
	return kf, nil
}

// shorter suggests how to make the key fit --max-len: the shorter formats
// that fit with the prefix, or else a prefix short enough.
func (kf *keyFormat) shorter() string {
	var fit []string
	for _, name := range formatNames {
		k := keyFormat{Name: name}
		if n := k.length(); n < kf.length() && len(kf.Prefix)+n <= kf.MaxLen {
			fit = append(fit, fmt.Sprintf("%s (%d bytes)", name, n))
		}
	}
	switch {
	case len(fit) > 0 && kf.Prefix != "":
		return "use --format " + strings.Join(fit, " or ") + ", or a shorter --prefix"
	case len(fit) > 0:
		return "use --format " + strings.Join(fit, " or ")
	}
	uuid := keyFormat{Name: "uuid"} // the shortest format
	room := kf.MaxLen - uuid.length()
	if room < 0 {
		return "no key format is that short: the shortest, uuid, has 36 bytes"
	}
	use := "use --format uuid (36 bytes) with"
	if kf.Name == uuid.Name {
		use = "use"
	}
	switch {
	case room == 0 && kf.Name == uuid.Name:
		return "drop the --prefix"
	case room == 0:
		return use + "out a --prefix"
	case room == 1:
		return use + " a --prefix of at most 1 byte"
	}
	return fmt.Sprintf("%s a --prefix of at most %d bytes", use, room)
}

// checkPrefix refuses a --prefix that cannot travel in an HTTP header or
// on one line of output: control characters (CR, LF, TAB, NUL, ESC, DEL,
// U+0080–U+009F) and bytes that are not UTF-8. src names where it came
// from (--prefix, IDEMKEY_PREFIX, the config file's line).
func checkPrefix(p, src string) error {
	what := fmt.Sprintf("invalid %s %q", src, p)
	if strings.Contains(src, ": ") { // config.yaml:3: prefix
		what = fmt.Sprintf("%s: invalid value %q", src, p)
	}
	for i, r := range p {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(p[i:], "\uFFFD"):
			return &UsageError{Err: fmt.Errorf("%s: byte %d is not UTF-8", what, i+1),
				hint: "a key is text: write the prefix in UTF-8"}
		case unicode.IsControl(r):
			return &UsageError{Err: fmt.Errorf("%s: it holds the control character %U at byte %d", what, r, i+1),
				hint: "a key travels on one line and in an HTTP header: CR, LF, TAB and other control characters would split or corrupt it"}
		}
	}
	return nil
}

// length is the number of bytes (ASCII characters) of the key without
// prefix.
func (kf *keyFormat) length() int {
	switch kf.Name {
	case "base64url":
		return 43
	case "uuid":
		return 36
	}
	return 64
}

// append appends the formatted key.
func (kf *keyFormat) append(dst []byte, k [32]byte) []byte {
	dst = append(dst, kf.Prefix...)
	switch kf.Name {
	case "base64url":
		return base64.RawURLEncoding.AppendEncode(dst, k[:])
	case "uuid":
		return appendUUID(dst, k)
	}
	return hex.AppendEncode(dst, k[:])
}

// appendUUID lays out the first 128 bits of the digest as an RFC 9562
// version-8 ("custom") UUID: the version nibble is set to 8 and the variant
// bits to 10, the other 122 bits are the digest's.
func appendUUID(dst []byte, k [32]byte) []byte {
	var u [16]byte
	copy(u[:], k[:16])
	u[6] = u[6]&0x0F | 0x80
	u[8] = u[8]&0x3F | 0x80
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:36], u[10:16])
	return append(dst, b[:]...)
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
