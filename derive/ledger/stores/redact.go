package stores

import (
	"strings"

	"github.com/idemkey/idemkey/derive/ledger/internal/storeutil"
)

// Redact returns a spec as it may be shown: a URL with its password
// hidden (see storeutil.Redact), anything else as it is.
func Redact(spec string) string {
	if _, ok := URLScheme(spec); ok {
		return storeutil.Redact(spec)
	}
	if LooksLikeDSN(spec) {
		return "(a keyword/value connection string)"
	}
	return spec
}

// RedactText returns text with every secret of spec (its password, in
// every spelling) replaced by xxxxx.
func RedactText(text, spec string) string {
	for _, p := range storeutil.Secrets(spec) {
		text = strings.ReplaceAll(text, p, "xxxxx")
	}
	return text
}
