package cli

import (
	"strconv"

	"github.com/idemkey/idemkey/canon"
)

// JSONObject writes one JSON object on one line, with strings escaped as
// the canonical forms escape them (a lone surrogate survives as \udxxx).
// Buf is the object so far; Key starts a member whose value the caller
// appends to Buf itself.
type JSONObject struct{ Buf []byte }

// Key starts the member k.
func (o *JSONObject) Key(k string) {
	if len(o.Buf) == 0 {
		o.Buf = append(o.Buf, '{')
	} else {
		o.Buf = append(o.Buf, ',')
	}
	o.Buf = canon.AppendQuoted(o.Buf, k)
	o.Buf = append(o.Buf, ':')
}

// Str adds a string member.
func (o *JSONObject) Str(k, v string) *JSONObject {
	o.Key(k)
	o.Buf = canon.AppendQuoted(o.Buf, v)
	return o
}

// Raw adds a member whose value is JSON already.
func (o *JSONObject) Raw(k string, v []byte) *JSONObject {
	o.Key(k)
	o.Buf = append(o.Buf, v...)
	return o
}

// Int adds a number member.
func (o *JSONObject) Int(k string, v int) *JSONObject {
	o.Key(k)
	o.Buf = strconv.AppendInt(o.Buf, int64(v), 10)
	return o
}

// Bool adds a boolean member.
func (o *JSONObject) Bool(k string, v bool) *JSONObject {
	o.Key(k)
	o.Buf = strconv.AppendBool(o.Buf, v)
	return o
}

// StrOrNull adds a string member, or null when !ok.
func (o *JSONObject) StrOrNull(k, v string, ok bool) *JSONObject {
	if !ok {
		return o.Raw(k, []byte("null"))
	}
	return o.Str(k, v)
}

// Object returns the object, closed (a member of another).
func (o *JSONObject) Object() []byte {
	if len(o.Buf) == 0 {
		o.Buf = append(o.Buf, '{')
	}
	return append(o.Buf, '}')
}

// Line returns the object and a newline.
func (o *JSONObject) Line() []byte {
	if len(o.Buf) == 0 {
		o.Buf = append(o.Buf, '{')
	}
	return append(o.Buf, '}', '\n')
}

// IntsJSON is ns as a JSON array of numbers.
func IntsJSON(ns []int) []byte {
	return arrayJSON(ns, func(b []byte, n int) []byte { return strconv.AppendInt(b, int64(n), 10) })
}

// StringsJSON is ss as a JSON array of strings, each written as canon
// writes it (a lone surrogate kept as \udxxx, as in every result).
func StringsJSON(ss []string) []byte { return arrayJSON(ss, canon.AppendQuoted) }

// ArrayJSON is a JSON array of values already written as JSON.
func ArrayJSON(vs [][]byte) []byte {
	return arrayJSON(vs, func(b, v []byte) []byte { return append(b, v...) })
}

func arrayJSON[T any](xs []T, add func([]byte, T) []byte) []byte {
	b := []byte{'['}
	for k, x := range xs {
		if k > 0 {
			b = append(b, ',')
		}
		b = add(b, x)
	}
	return append(b, ']')
}
