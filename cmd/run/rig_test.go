package run_test

import (
	"github.com/idemkey/idemkey/cmd/internal/clitest"
)

var (
	alive   = clitest.Alive
	waitFor = clitest.WaitUntil
)
