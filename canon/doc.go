// Package canon parses JSON and writes it in one of two canonical forms.
//
// The package is layered the way encoding/json/jsontext is: bytes (UTF-8
// validation, escapes, number literals) → syntax (a validating parser that
// builds a compact index of every object's members over the original bytes)
// → semantics (the canonical serializers). [Parse] gives a [Document] to
// navigate ([Node]) and write; [WriteCanonical] and [AppendCanonical] go
// from bytes to canonical text in one validating pass, without the index,
// when the text is all that is wanted. Both give the same text and the
// same errors.
//
// Two schemes are supported:
//
//   - [JS] reproduces, byte for byte, what the idemkey reference harness
//     computes on Node.js: JSON.parse followed by JSON.stringify with a
//     replacer that sorts object members by UTF-16 code units. ECMAScript's
//     own property order then puts names that are array indices ("0" …
//     "4294967294") first, in ascending numeric order; a duplicate name keeps
//     its last value; lone surrogates survive and are written as \udxxx; a
//     number too large for a double becomes null.
//   - [JCS] is RFC 8785, strictly: duplicate names (RFC 8785 §3.1, I-JSON
//     RFC 7493 §2.3), lone surrogates (RFC 7493 §2.1) and numbers outside
//     the IEEE-754 double range (RFC 8785 §3.2.2.3) are errors.
//
// Both schemes serialize strings as RFC 8785 §3.2.2.2 prescribes (which is
// what JSON.stringify does), numbers as ECMAScript Number::toString
// (RFC 8785 §3.2.2.3), and sort members by UTF-16 code units
// (RFC 8785 §3.2.3).
//
// The package imports no command-line or operating-system package: other Go
// programs can use it directly.
package canon
