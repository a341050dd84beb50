package settings

import "testing"

func TestNearest(t *testing.T) {
	known := map[string]bool{"retry": true, "retry-delay": true, "key-header": true, "prefix": true, "insecure": false}
	for in, want := range map[string]string{"retyr": "retry", "key_header": "key-header", "prefx": "prefix", "zzzzzz": "", "insecur": ""} {
		if got := nearest(in, known); got != want {
			t.Errorf("nearest(%q) = %q, want %q", in, got, want)
		}
	}
}
