package clitest_test

import (
	"os"
	"os/exec"
	"runtime"
	"testing"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
)

func TestMain(m *testing.M) { clitest.Main(m) }

// touchEnv, set, makes TestPeakRSSToucher write touchMiB MiB: the test
// binary runs it as TestPeakRSS's child.
const touchEnv = "CLITEST_TOUCH"

const touchMiB = 96

// TestPeakRSSToucher is the child of TestPeakRSS: it writes every page of
// a buffer of touchMiB MiB, then exits.
func TestPeakRSSToucher(t *testing.T) {
	if os.Getenv(touchEnv) == "" {
		t.Skip("the child of TestPeakRSS")
	}
	b := make([]byte, touchMiB<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	runtime.KeepAlive(b)
}

// TestPeakRSS: a child's peak is its own, not the test binary's. The test
// binary holds 256 MiB written while a small command runs, which must
// measure far below it; a child that writes touchMiB MiB measures at
// least that.
func TestPeakRSS(t *testing.T) {
	held := make([]byte, 256<<20)
	for i := 0; i < len(held); i += 4096 {
		held[i] = 1
	}
	small, err := clitest.PeakRSS(exec.Command("idemkey", "version"), 0)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	toucher := exec.Command(exe, "-test.run=^TestPeakRSSToucher$")
	toucher.Env = append(os.Environ(), touchEnv+"=1")
	big, err := clitest.PeakRSS(toucher, 0)
	if err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(held)
	t.Logf("idemkey version: %d MiB; a child writing %d MiB: %d MiB; the test binary holds 256 MiB", small>>20, touchMiB, big>>20)
	if small > 64<<20 {
		t.Errorf("idemkey version measured %d MiB: the test binary's 256 MiB leaked into it", small>>20)
	}
	if big < touchMiB<<20 || big > 2*touchMiB<<20 {
		t.Errorf("a child writing %d MiB measured %d MiB", touchMiB, big>>20)
	}
	// The command's exit code is the meter's.
	_, err = clitest.PeakRSS(exec.Command("idemkey", "no-such-command"), 0)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Errorf("idemkey no-such-command under the meter: %v, want exit 2", err)
	}
}
