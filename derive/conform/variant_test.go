package conform

import (
	"testing"

	"github.com/idemkey/idemkey/canon"
)

// TestSchemeVariants checks the diagnosis's model of the schemes against
// canon on every case: the variants without a defect are the schemes.
func TestSchemeVariants(t *testing.T) {
	for _, s := range []canon.Scheme{canon.JS, canon.JCS} {
		v := SchemeVariant(s)
		for _, c := range Cases() {
			e := Expected(c, s)
			text, ok := v.Canonical(c)
			if ok == e.Rejected || text != e.Canonical {
				t.Errorf("%s case %d (%s, %s): variant %v %s, canon %v %s", s, c.ID, c.Rule, c.Note, ok, short(text), !e.Rejected, short(e.Canonical))
			}
		}
	}
}
