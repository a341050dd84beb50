package canon

import "fmt"

// Scheme selects a canonical form.
type Scheme uint8

const (
	// JS is the reference harness's form: JSON.parse, then JSON.stringify
	// with a member-sorting replacer, as Node.js computes it.
	JS Scheme = iota
	// JCS is RFC 8785, the JSON Canonicalization Scheme, strictly.
	JCS
)

// String returns the scheme's name as the command line spells it.
func (s Scheme) String() string {
	switch s {
	case JS:
		return "js"
	case JCS:
		return "jcs"
	}
	return fmt.Sprintf("Scheme(%d)", uint8(s))
}

// SchemeNames are the schemes' names, as ParseScheme reads them.
var SchemeNames = []string{"js", "jcs"}

// ParseScheme returns the scheme named name ("js" or "jcs").
func ParseScheme(name string) (Scheme, error) {
	switch name {
	case "js":
		return JS, nil
	case "jcs":
		return JCS, nil
	}
	return 0, fmt.Errorf("unknown scheme %q (want js or jcs)", name)
}
