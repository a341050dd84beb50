package probe

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
)

// Prefix starts every probe key of 36 characters or more that has no
// format of its own.
const Prefix = "idemkey-probe-"

// MaxKeyLen is the longest key key-limits tries: Stripe's limit, and the
// longest most owners document.
const MaxKeyLen = 255

// shape is the form of the keys the rules send.
type shape int

const (
	shapeNone     shape = iota // no key was accepted
	shapePrefixed              // idemkey-probe- and 32 random characters
	shapeUUID
	shapeHex
	shapeBase64URL
)

// defaultKeyLen is the length of a prefixed key: 14 + 32 characters, a
// length no key idemkey derives without a prefix has (hex 64, base64url
// 43, uuid 36).
const defaultKeyLen = len(Prefix) + 32

// keys makes fresh keys that can never equal a key idemkey derives for a
// real step:
//
//   - a prefixed key is "idemkey-probe-" and random characters: without a
//     --prefix, no idemkey key has a letter past f or a '-' where these
//     have one (hex and UUID keys) or that length (base64url keys are 43);
//   - a UUID is a random version 4 UUID: idemkey's are version 8;
//   - a hex or base64url key is the SHA-256 of "idemkey probe", a NUL and
//     32 random bytes, which no canonical JSON text (the preimage of
//     every key idemkey derives, an HMAC's included) can be; equal keys
//     would be a SHA-256 collision;
//   - a key shorter than 36 characters is random: idemkey's shortest is
//     36.
//
// Keys are lower case letters and digits besides, so any owner that
// takes a token can take them.
type keys struct{ r io.Reader }

const keyAlphabet = "0123456789abcdefghijklmnopqrstuv" // 32: a byte mod 32 is unbiased

func (k keys) read(b []byte) {
	if _, err := io.ReadFull(k.r, b); err != nil {
		// crypto/rand does not fail; a reader that does is a caller's bug.
		panic(fmt.Sprintf("probe: reading random bytes: %v", err))
	}
}

// random returns n random characters of keyAlphabet.
func (k keys) random(n int) string {
	b := make([]byte, n)
	k.read(b)
	for i := range b {
		b[i] = keyAlphabet[b[i]%32]
	}
	return string(b)
}

// ofLen returns a fresh key of exactly n characters (n >= 1).
func (k keys) ofLen(n int) string {
	if n < 36 {
		return k.random(n)
	}
	return Prefix + k.random(n-len(Prefix))
}

func (k keys) uuid() string {
	var u [16]byte
	k.read(u[:])
	u[6] = u[6]&0x0F | 0x40 // version 4
	u[8] = u[8]&0x3F | 0x80 // variant 10
	h := hex.EncodeToString(u[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func (k keys) digest() [32]byte {
	pre := make([]byte, 0, 14+32)
	pre = append(pre, "idemkey probe\x00"...)
	var r [32]byte
	k.read(r[:])
	return sha256.Sum256(append(pre, r[:]...))
}

func (k keys) hex() string {
	d := k.digest()
	return hex.EncodeToString(d[:])
}

func (k keys) base64url() string {
	d := k.digest()
	return base64.RawURLEncoding.EncodeToString(d[:])
}

// of returns a fresh key of the shape s.
func (k keys) of(s shape) string {
	switch s {
	case shapeUUID:
		return k.uuid()
	case shapeHex:
		return k.hex()
	case shapeBase64URL:
		return k.base64url()
	}
	return k.ofLen(defaultKeyLen)
}

func (s shape) String() string {
	switch s {
	case shapeUUID:
		return "a UUID"
	case shapeHex:
		return "a hex SHA-256"
	case shapeBase64URL:
		return "a base64url SHA-256"
	}
	return fmt.Sprintf("a %d-character key", defaultKeyLen)
}
