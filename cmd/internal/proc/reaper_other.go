//go:build !linux

package proc

import (
	"context"
	"os/exec"
)

// Impl is an implementation started in a process group of its own
// (see OwnGroup): outside Linux there is no child subreaper, so a process
// it starts in a session or group of its own (setsid) is not reached.
type Impl struct{ Cmd *exec.Cmd }

func ImplCommand(ctx context.Context, argv []string) (*Impl, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	OwnGroup(cmd)
	return &Impl{Cmd: cmd}, nil
}

func (p *Impl) Start(argv0 string) error {
	if err := p.Cmd.Start(); err != nil {
		return StartError(argv0, err)
	}
	return nil
}

// Result: nothing is known of what the implementation left behind.
func (p *Impl) Result(string) (int, error) { return 0, nil }

func (p *Impl) Close() { KillGroup(p.Cmd) }
