package probe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// changeBody returns the body with one value changed, for the mismatch
// rule, and says what changed. The body must be a JSON object; the
// first top-level member whose value is a number gets 1 added to it
// ("amount": 100 becomes 101, the change an owner must notice), else the
// first whose value is a string gets "-probe" appended, else a member
// "idemkey_probe": true is added. Only those bytes change: the rest of
// the body is sent as written. ok is false for a body that is not a JSON
// object.
func changeBody(body []byte) (changed []byte, what string, ok bool) {
	if !json.Valid(body) {
		return nil, "", false
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, "", false
	}
	var firstString *member
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, "", false
		}
		name, _ := t.(string)
		start := d.InputOffset()
		var raw json.RawMessage
		if err := d.Decode(&raw); err != nil {
			return nil, "", false
		}
		end := d.InputOffset()
		// InputOffset after the name is before the colon and spaces.
		start = end - int64(len(raw))
		m := member{name, start, end, raw}
		switch {
		case raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'):
			return m.replace(body, plusOne(string(raw)))
		case raw[0] == '"' && firstString == nil:
			firstString = &m
		}
	}
	if firstString != nil {
		m := *firstString
		v := string(m.raw[:len(m.raw)-1]) + `-probe"`
		return m.replace(body, v)
	}
	// No number and no string: add a member after the opening brace.
	open := bytes.IndexByte(body, '{') + 1
	sep := ","
	if bytes.Equal(bytes.TrimSpace(body[open:]), []byte("}")) {
		sep = ""
	}
	out := append(append(append([]byte{}, body[:open]...), `"idemkey_probe":true`+sep...), body[open:]...)
	return out, `added the member "idemkey_probe": true`, true
}

type member struct {
	name       string
	start, end int64
	raw        []byte
}

func (m member) replace(body []byte, v string) ([]byte, string, bool) {
	out := append(append(append([]byte{}, body[:m.start]...), v...), body[m.end:]...)
	return out, fmt.Sprintf("changed %s from %s to %s", strconv.Quote(m.name), trim(string(m.raw)), trim(v)), true
}

func trim(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// plusOne changes a JSON number: an integer gets 1 added to it, exactly
// (a big one stays exact); another number gets a digit 1 appended to its
// fraction ("1.5" becomes "1.51", "2e3" becomes "2.1e3"), which changes
// its value too and costs no more than its length whatever its exponent.
func plusOne(num string) string {
	if i, ok := new(big.Int).SetString(num, 10); ok {
		return i.Add(i, big.NewInt(1)).String()
	}
	exp := strings.IndexAny(num, "eE")
	if exp < 0 {
		exp = len(num)
	}
	mant, rest := num[:exp], num[exp:]
	if strings.Contains(mant, ".") {
		return mant + "1" + rest
	}
	return mant + ".1" + rest
}
