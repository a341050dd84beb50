package version

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionLine(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-12-01T08:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	got := Line(bi, true)
	if !strings.HasPrefix(got, "idemkey version dev revision 0123456789abcdef0123456789abcdef01234567 2026-12-01T08:00:00Z (modified) go1.99.1 ") {
		t.Errorf("VCS build: %q", got)
	}
	bi.Settings[2].Value = "false"
	if got := Line(bi, true); strings.Contains(got, "modified") {
		t.Errorf("clean tree: %q", got)
	}
	bi.Main.Version = "v1.4.0"
	if got := Line(bi, true); !strings.HasPrefix(got, "idemkey version v1.4.0 go1.99.1 ") {
		t.Errorf("module version: %q", got)
	}
	if got := Line(nil, false); !strings.HasPrefix(got, "idemkey version dev go") {
		t.Errorf("no build info: %q", got)
	}
}
