package settings

import "testing"

func TestNearest(t *testing.T) {
	known := map[string]Scope{"retry": TopLevel, "retry-delay": TopLevel, "key-header": TopLevel, "prefix": PerTool, "insecure": CommandLine}
	for in, want := range map[string]string{"retyr": "retry", "key_header": "key-header", "prefx": "prefix", "zzzzzz": "", "insecur": ""} {
		if got := nearest(in, known); got != want {
			t.Errorf("nearest(%q) = %q, want %q", in, got, want)
		}
	}
}
