package cli

import "runtime/debug"

// version is set at build time with -ldflags "-X github.com/idemkey/idemkey/cmd/internal/cli.version=v1.2.3";
// otherwise the module version from the build info is used.
var version = ""

// Version is the short version, for the User-Agent: the module
// version, or "dev".
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// Linked is the version set at build time with -ldflags, or "".
func Linked() string { return version }
