package diff

import (
	"strings"
	"testing"
)

func TestLookAlikeScripts(t *testing.T) {
	cases := []struct {
		a, b, kind string
		want       []string // substrings of the reason
	}{
		{"Ivan", "Іvan", KindMixedScript, []string{"character 1 is U+0049 LATIN CAPITAL LETTER I (Latin) in a, U+0406 CYRILLIC CAPITAL LETTER BYELORUSSIAN-UKRAINIAN I (Cyrillic) in b"}},
		{"paypal", "pаypal", KindMixedScript, []string{"character 2 is U+0061 LATIN SMALL LETTER A (Latin) in a, U+0430 CYRILLIC SMALL LETTER A (Cyrillic) in b"}},
		{"ΑΒΓ-Bank", "ABΓ-Bank", KindMixedScript, []string{"(Greek) in a", "(Latin) in b"}},
		{"раураl", "paypal", KindMixedScript, []string{"character 1 is U+0440 CYRILLIC SMALL LETTER ER (Cyrillic) in a"}},
		// a word wholly in another script is not a disguise; its letters are named
		{"раура", "paypa", KindValue, []string{"U+0440 CYRILLIC SMALL LETTER ER (Cyrillic)"}},
		{"abc", "абв", KindValue, []string{"U+0430 CYRILLIC SMALL LETTER A (Cyrillic)"}},
		// same script: an ordinary change, the accented letter named
		{"Ivan", "Oleg", KindValue, nil},
		{"café", "cafè", KindValue, []string{"U+00E9 LATIN SMALL LETTER E WITH ACUTE (Latin) where b has U+00E8"}},
	}
	for _, c := range cases {
		kind, why := lookAlike(c.a, c.b)
		if kind != c.kind {
			t.Errorf("%q %q: kind %s (%s), want %s", c.a, c.b, kind, why, c.kind)
		}
		for _, w := range c.want {
			if !strings.Contains(why, w) {
				t.Errorf("%q %q: reason %q lacks %q", c.a, c.b, why, w)
			}
		}
	}
}

func TestRevealPointer(t *testing.T) {
	cases := map[string]string{
		"/a\x1b[31m/b\r\x07":   `/a\u001b[31m/b\u000d\u0007`,
		"/lone\xed\xa0\x80":    `/lone\ud800`,
		"/bad\xff":             `/bad\xff`,
		"/back\\slash":         `/back\\slash`,
		"/zw\u200bsp\u00a0":    `/zw\u200bsp\u00a0`,
		"/plain/é/日本/~0~1":     "/plain/é/日本/~0~1",
		"/line\u2028sep\u0085": `/line\u2028sep\u0085`,
	}
	for in, want := range cases {
		if got := RevealPointer(in); got != want {
			t.Errorf("RevealPointer(%q) = %q, want %q", in, got, want)
		}
	}
}
