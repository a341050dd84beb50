package conform

import (
	"testing"

	"github.com/idemkey/idemkey/canon"
)

// BenchmarkDiagnoseGarbage measures the worst case of the diagnosis: every
// answer wrong and explained by no known defect.
func BenchmarkDiagnoseGarbage(b *testing.B) {
	cs := Cases()
	answers := make([]Answer, len(cs))
	for i := range answers {
		answers[i] = Answer{Text: KeyOf("garbage")}
	}
	for b.Loop() {
		Evaluate(canon.JS, OutputKey, cs, answers)
	}
}
