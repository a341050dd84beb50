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

// TestVersionLinePseudoVersion: a build from a clone with Go 1.24 or later
// has a pseudo-version as its module version; the line still gives the
// whole VCS revision and says the tree was modified.
func TestVersionLinePseudoVersion(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261201091928-cd38d8e8ea6d+dirty"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "cd38d8e8ea6d3c1bd2b7e7ad4f0e5f3b1b8e9a10"},
		{Key: "vcs.time", Value: "2026-12-01T09:19:28Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	got := Line(bi, true)
	want := "idemkey version v0.0.0-20261201091928-cd38d8e8ea6d+dirty revision cd38d8e8ea6d3c1bd2b7e7ad4f0e5f3b1b8e9a10 2026-12-01T09:19:28Z (modified) go1.26.8 "
	if !strings.HasPrefix(got, want) {
		t.Errorf("pseudo-version build:\n got %q\nwant %q…", got, want)
	}
	bi.Main.Version = "v1.4.0" // a release names no revision
	if got := Line(bi, true); strings.Contains(got, "revision") {
		t.Errorf("release: %q", got)
	}
}
