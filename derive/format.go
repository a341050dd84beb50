package derive

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Format lays out a 32-byte digest as the receiving API wants it.
type Format struct {
	Name   string // hex, base64url or uuid
	Prefix string
	MaxLen int // 0: no limit
}

// FormatNames lists the key formats.
var FormatNames = []string{"hex", "base64url", "uuid"}

// Check checks the format's name and that prefix and key fit MaxLen; names
// says how Prefix and MaxLen are named in messages (a flag, a variable,
// a config file's line). Every error is a Setting.
func (f *Format) Check(prefixName, maxLenName string) error {
	switch f.Name {
	case "hex", "base64url", "uuid":
	default:
		return &Error{Msg: fmt.Sprintf("invalid --format %q (want %s)", f.Name, strings.Join(FormatNames, ", ")), Setting: true}
	}
	if f.MaxLen < 0 {
		return &Error{Msg: fmt.Sprintf("invalid --max-len %d", f.MaxLen), Setting: true}
	}
	if err := CheckPrefix(f.Prefix, prefixName); err != nil {
		return err
	}
	if n := len(f.Prefix) + f.Len(); f.MaxLen > 0 && n > f.MaxLen {
		return &Error{
			Msg:     fmt.Sprintf("a %s key with prefix %q is %d bytes, more than %s %d", f.Name, f.Prefix, n, maxLenName, f.MaxLen),
			Advice:  "an API that truncates a key breaks it; " + f.shorter(),
			Setting: true,
		}
	}
	return nil
}

// shorter suggests how to make the key fit MaxLen: the shorter formats
// that fit with the prefix, or else a prefix short enough.
func (f *Format) shorter() string {
	var fit []string
	for _, name := range FormatNames {
		k := Format{Name: name}
		if n := k.Len(); n < f.Len() && len(f.Prefix)+n <= f.MaxLen {
			fit = append(fit, fmt.Sprintf("%s (%d bytes)", name, n))
		}
	}
	switch {
	case len(fit) > 0 && f.Prefix != "":
		return "use --format " + strings.Join(fit, " or ") + ", or a shorter --prefix"
	case len(fit) > 0:
		return "use --format " + strings.Join(fit, " or ")
	}
	uuid := Format{Name: "uuid"} // the shortest format
	room := f.MaxLen - uuid.Len()
	if room < 0 {
		return "no key format is that short: the shortest, uuid, has 36 bytes"
	}
	use := "use --format uuid (36 bytes) with"
	if f.Name == uuid.Name {
		use = "use"
	}
	switch {
	case room == 0 && f.Name == uuid.Name:
		return "drop the --prefix"
	case room == 0:
		return use + "out a --prefix"
	case room == 1:
		return use + " a --prefix of at most 1 byte"
	}
	return fmt.Sprintf("%s a --prefix of at most %d bytes", use, room)
}

// CheckPrefix refuses a key prefix that cannot travel in an HTTP header
// (RFC 9110 §5.5: no control characters in a field value) or on one line
// of output: control characters (CR, LF, TAB, NUL, ESC, DEL,
// U+0080–U+009F) and bytes that are not UTF-8. name says where it came
// from (--prefix, IDEMKEY_PREFIX, the config file's line).
func CheckPrefix(p, name string) error {
	what := fmt.Sprintf("invalid %s %q", name, p)
	if strings.Contains(name, ": ") { // config.yaml:3: prefix
		what = fmt.Sprintf("%s: invalid value %q", name, p)
	}
	for i, r := range p {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(p[i:], "\uFFFD"):
			return &Error{Msg: fmt.Sprintf("%s: byte %d is not UTF-8", what, i+1),
				Advice: "a key is text: write the prefix in UTF-8", Setting: true}
		case unicode.IsControl(r):
			return &Error{Msg: fmt.Sprintf("%s: it holds the control character %U at byte %d", what, r, i+1),
				Advice:  "a key travels on one line and in an HTTP header: CR, LF, TAB and other control characters would split or corrupt it",
				Setting: true}
		}
	}
	return nil
}

// Len is the number of bytes (ASCII characters) of the key without
// prefix.
func (f *Format) Len() int {
	switch f.Name {
	case "base64url":
		return 43
	case "uuid":
		return 36
	}
	return 64
}

// Append appends the formatted key: the prefix, then the digest.
func (f *Format) Append(dst []byte, k [32]byte) []byte {
	dst = append(dst, f.Prefix...)
	switch f.Name {
	case "base64url":
		return base64.RawURLEncoding.AppendEncode(dst, k[:])
	case "uuid":
		return AppendUUID(dst, k)
	}
	return hex.AppendEncode(dst, k[:])
}

// AppendUUID lays out the first 128 bits of the digest as an RFC 9562
// version-8 ("custom") UUID: the version nibble is set to 8 and the variant
// bits to 10, the other 122 bits are the digest's.
func AppendUUID(dst []byte, k [32]byte) []byte {
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
