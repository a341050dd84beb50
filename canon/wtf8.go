package canon

// EscapeSurrogates returns text with every lone surrogate written raw
// inside a string token (its WTF-8 form, ED A0–BF 80–BF) replaced by its
// \udxxx escape, and the offsets in the returned text where a replacement
// starts. Text without one is returned as it is.
//
// Such text is what decoding a JSON string gives when the string held an
// escaped lone surrogate: the arguments of an OpenAI tool call, a JSON
// text inside a JSON string. JavaScript's JSON.parse, given that string,
// reads the surrogate as a character of the inner string; Parse reads
// UTF-8 only, and accepts the same surrogate as an escape. Surrogates
// outside string tokens are left as they are: there they are an error to
// both.
func EscapeSurrogates(text []byte) ([]byte, []int) {
	var out []byte
	var at []int
	in, start := false, 0
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case !in:
			in = c == '"'
		case c == '"':
			in = false
		case c == '\\':
			i++
		case c == 0xED && i+2 < len(text) && text[i+1] >= 0xA0 && text[i+1] <= 0xBF && text[i+2]&0xC0 == 0x80:
			v := 0xD000 | rune(text[i+1]&0x3F)<<6 | rune(text[i+2]&0x3F)
			out = append(out, text[start:i]...)
			at = append(at, len(out))
			out = append(out, '\\', 'u', hexdigits[v>>12], hexdigits[v>>8&0xF], hexdigits[v>>4&0xF], hexdigits[v&0xF])
			i += 2
			start = i + 1
		}
	}
	if at == nil {
		return text, nil
	}
	return append(out, text[start:]...), at
}
