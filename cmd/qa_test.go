package cmd

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestPostReasonPhraseEscaped: a server's reason phrase reaches the retry
// lines on standard error; its control characters are escaped there.
func TestPostReasonPhraseEscaped(t *testing.T) {
	t.Parallel()
	url, n := postRawServer(t, postWriteAndClose("HTTP/1.1 503 Bu\x1b]0;owned\x07sy\r\nContent-Length: 0\r\n\r\n"))
	r := ppost(t, url, "--retry", "1", "--retry-delay", "0.001")
	if n.Load() != 2 {
		t.Errorf("%d attempts, want 2", n.Load())
	}
	if strings.ContainsAny(r.err, "\x1b\x07") {
		t.Errorf("raw control characters on stderr:\n%q", r.err)
	}
	if !strings.Contains(r.err, `HTTP 503 Bu\x1b]0;owned\asy; retrying`) {
		t.Errorf("the reason phrase is not shown escaped:\n%s", r.err)
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
	got := versionLine(bi, true)
	want := "idemkey version v0.0.0-20261201091928-cd38d8e8ea6d+dirty revision cd38d8e8ea6d3c1bd2b7e7ad4f0e5f3b1b8e9a10 2026-12-01T09:19:28Z (modified) go1.26.8 "
	if !strings.HasPrefix(got, want) {
		t.Errorf("pseudo-version build:\n got %q\nwant %q…", got, want)
	}
	bi.Main.Version = "v1.4.0" // a release names no revision
	if got := versionLine(bi, true); strings.Contains(got, "revision") {
		t.Errorf("release: %q", got)
	}
}
